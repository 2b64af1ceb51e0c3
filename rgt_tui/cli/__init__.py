"""The command line: ``main``, the entry point of `rgt-tui` (and of `python -m rgt_tui`).

The rooms: table.py (one ``Command`` row per sub-command), runner.py (runs a row: host
look-up, one connection through the services, errors to exit codes), args.py (the
arguments every command shares), exit_codes.py (every exit status, once), fence.py (the
output's last fence: nothing a command prints carries a control character it did not put
there itself; ``main`` enters it for every command but the TUI), and one module per
command group (add, logs, pull and pull_progress, queue, status, teardown, tui). With
no sub-command, `rgt-tui` opens the TUI. Nothing outside this package imports it, and it
reaches boxes only through the services (pyproject's import-linter contracts).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from rgt_tui import __version__
from rgt_tui.cli.args import add_hosts_arg
from rgt_tui.cli.event_loop import cancel_on_term
from rgt_tui.cli.exit_codes import EXIT_INTERRUPTED, EXIT_READER_GONE, EXIT_TERMINATED
from rgt_tui.cli.fence import fenced_output
from rgt_tui.cli.runner import run_command
from rgt_tui.cli.table import COMMANDS, GROUPS, HOST_HELP, TUI

__all__ = ["build_parser", "main"]


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser: the top-level options, then one sub-parser per row.

    With ``argv``, only the rows whose words are all among its words get their own
    arguments (the command typed; a host named like a command adds one more, harmlessly):
    adding a row's arguments imports its module (table.py), and a command needs only its
    own. ``rgt-tui --help`` lists every row either way, from the table's words."""
    parser = argparse.ArgumentParser(
        prog="rgt-tui",
        description="Terminal fleet manager for rented GPU boxes. With no command, opens the TUI.",
    )
    parser.add_argument("--version", action="version", version=f"rgt-tui {__version__}")
    add_hosts_arg(parser)
    parser.add_argument("--theme", metavar="NAME", help="colour theme (see themes/)")
    parser.set_defaults(command_row=TUI)
    top = parser.add_subparsers(dest="command", metavar="COMMAND")
    words = set(argv or ())
    groups: dict[str, Any] = {}
    for row in COMMANDS:
        *group, name = row.name.split()
        where = top
        if group:
            if group[0] not in groups:
                holder = top.add_parser(group[0], help=GROUPS[group[0]])
                add_hosts_arg(holder)
                groups[group[0]] = holder.add_subparsers(
                    dest=f"{group[0]}_command", metavar="ACTION", required=True
                )
            where = groups[group[0]]
        sub = where.add_parser(name, help=row.help, description=row.description)
        if row.fleet:
            add_hosts_arg(sub)
        if row.host != "none":
            sub.add_argument(
                "host",
                metavar="HOST",
                nargs=None if row.host == "one" else "?",
                help=HOST_HELP[row.host],
            )
        if argv is None or set(row.name.split()) <= words:
            row.add_arguments(sub)
        # Its own parser too: a mistyped option is told with this command's usage, not
        # the top level's (``main``).
        sub.set_defaults(command_row=row, command_parser=sub)
    parser.set_defaults(command_parser=parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `rgt-tui` console script."""
    try:
        argv = sys.argv[1:] if argv is None else argv
        try:
            args, unknown = build_parser(argv).parse_known_args(argv)
            if unknown:  # argparse.parse_args would say it with the top level's usage
                args.command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
        except KeyboardInterrupt:
            # Adding a command's arguments imports its module (table.py): a Ctrl-C then
            # ends quietly, as one during rgt_tui.entry's imports does (hour s17b #4).
            return EXIT_INTERRUPTED
        if args.command_row is TUI:  # Textual owns the terminal, and draws box text as text
            return run_command(args.command_row, args)
        # asyncio's own warning for each write to a connection already lost ("socket.send()
        # raised exception.", 46 lines when a box dropped mid-sync: h575 #6): the command
        # says the drop itself. Its errors still show.
        logging.getLogger("asyncio").setLevel(logging.ERROR)
        with fenced_output(), _term_as_interrupt() as termed:  # fence.py: no control character
            code = run_command(args.command_row, args)
        return EXIT_TERMINATED if termed and code == EXIT_INTERRUPTED else code
    except BrokenPipeError:
        return _reader_gone()


@contextlib.contextmanager
def _term_as_interrupt() -> Iterator[list[int]]:
    """SIGTERM (``timeout``, systemd, a CI cancel) stops a command as Ctrl-C does: its
    message, its parts kept, its children (a sync's rsync) stopped. By default it ended
    the process at once, silent, with a sync's upload still running under init (s36
    faults #3, #4). Yields a list that holds the signal once it came."""
    came: list[int] = []

    def stop(signum: int, _frame: object) -> None:
        came.append(signum)
        if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
            # A background job of a script ignores SIGINT: raised as one, the TERM would
            # be lost, and `kill` would no longer stop the command. Its task is cancelled
            # at an await instead, as asyncio's SIGINT handler does (event_loop.py);
            # outside a loop, or at a second TERM, it stops at once.
            if not cancel_on_term():
                raise KeyboardInterrupt
            return
        # As a SIGINT, not a KeyboardInterrupt raised here: inside asyncio.run the SIGINT
        # handler cancels the command's task, so it stops at an await, as Ctrl-C does.
        signal.raise_signal(signal.SIGINT)

    try:
        before = signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread (a test's): left as it is
        yield came
        return
    try:
        yield came
    finally:
        signal.signal(signal.SIGTERM, before)


def _reader_gone() -> int:
    """The reader of our output went away (``rgt-tui queue show | head -1``): end quietly,
    as a tool that SIGPIPE ends would, with its status (141). Python ignores SIGPIPE and
    raises instead; the interpreter's last flush of the dead pipe would raise again at
    exit, so stdout points at /dev/null from here on; stderr too, which is often the same
    pipe (``2>&1 | head``) and has nothing more to say."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.__stdout__, sys.__stderr__):
        if stream is not None:
            os.dup2(devnull, stream.fileno())
    os.close(devnull)
    return EXIT_READER_GONE
