"""The commands that draw: the TUI (`rgt-tui` alone) and `rgt-tui demo` (rows of table.py).

Textual is imported only when one of them runs, so every other command starts without it.
Exit codes (exit_codes.py): 2 for a bad ``--theme`` or ``--boxes``, or a fleet file with
mistakes, before anything starts; 1 when the demo cannot start or there is no terminal
to draw on; else the app's own.
"""

from __future__ import annotations

import argparse
import sys

from rgt_tui.cli.exit_codes import EXIT_BAD_INPUT, EXIT_PROBLEMS
from rgt_tui.cli.runner import Call


def add_demo_arguments(parser: argparse.ArgumentParser) -> None:
    """``--boxes`` and ``--theme``."""
    parser.add_argument("--boxes", type=int, default=3, help="number of demo boxes (default 3)")
    # SUPPRESS: `rgt-tui --theme light demo` keeps the top level's value (no None over it).
    parser.add_argument("--theme", metavar="NAME", default=argparse.SUPPRESS, help="colour theme")


def refuse_unknown_theme(call: Call) -> int | None:
    """Exit 2 before the app starts when ``--theme`` names no theme, listing rgt-tui's
    own themes apart from Textual's built-in ones; None when it names one, or none."""
    name = getattr(call.args, "theme", None)
    if name is None:
        return None
    from rgt_tui.themes import unknown_theme  # Textual: only for the commands that draw

    problem = unknown_theme(name)
    if problem is None:
        return None
    message, fix = problem
    return call.fail(message, fix=fix, code=EXIT_BAD_INPUT)


def run_demo(call: Call) -> int:
    """Start N loopback boxes, open the TUI on them, stop them on exit."""
    from rgt_tui.demo.run import DemoCannotStart
    from rgt_tui.demo.run import run_demo as demo

    if call.args.boxes < 1:
        return call.fail("--boxes must be at least 1", code=EXIT_BAD_INPUT)
    refused = refuse_unknown_theme(call)
    if refused is not None:
        return refused
    try:
        return demo(call.args.boxes, theme=call.args.theme)
    except DemoCannotStart as exc:  # its message is the whole line, fix included
        print(exc, file=sys.stderr)
        return EXIT_PROBLEMS


def run_tui(call: Call) -> int:
    """Open the TUI on the fleet file (every mistake in it, or a bad --theme, exits 2
    first: run_command reports a ConfigError with all of the file's mistakes)."""
    from rgt_tui.app import run_app
    from rgt_tui.terminal_check import NoTerminal

    refused = refuse_unknown_theme(call)
    if refused is not None:
        return refused
    try:
        return run_app(call.fleet, theme=call.args.theme)
    except NoTerminal as exc:  # its message is the whole line, the way on included
        print(exc, file=sys.stderr)
        return EXIT_PROBLEMS
