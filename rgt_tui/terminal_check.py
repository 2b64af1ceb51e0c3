"""Whether the commands that draw (the TUI, the demo) have a terminal to draw on.

Apart from ``app`` so the demo can ask before it imports Textual or starts a box.
"""

from __future__ import annotations

import sys


class NoTerminal(Exception):
    """The TUI was started without a terminal: ``str()`` says so and what to use instead."""


def terminal_problem(command: str) -> str | None:
    """Why ``command`` (the TUI, the demo) cannot draw here, or None. Without a terminal
    Textual draws escape codes into a file or pipe, spins a core and, in the demo, never
    reaches the cleanup a signal asks for (a user's hour: a backgrounded demo ignored
    SIGTERM, and its boxes outlived a SIGKILL)."""
    streams = [n for n, f in (("stdin", sys.stdin), ("stdout", sys.stdout)) if not _tty(f)]
    if not streams:
        return None
    return (
        f"{command}: needs a terminal, and {' and '.join(streams)} "
        f"{'is' if len(streams) == 1 else 'are'} not one here — run it in a terminal or in "
        "tmux; for scripts and cron, the commands: rgt-tui status, watch, pull "
        "(docs/commands.md)"
    )


def _tty(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())
