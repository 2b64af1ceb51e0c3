"""The command line's words for an action, said in the TUI's keys.

Services word their advice for every front end alike, as commands (`rgt-tui sync box1`),
and the command line prints them as they are. A screen of the same host shows its key
instead: a user's hour found "fix: rgt-tui sync box1" where `y` does it, and "run
`rgt-tui pull box1` and `rgt-tui verify box1` first" in a dialog a key away from both.
Only a command for the host on show with no options after it is replaced; anything else
(another host, `--all`, a command with no key) stays as written. A dialog over the host's
screen does not take those keys (a user's hour pressed `y` at "fix: y (sync)" in the launch
dialog and nothing happened): there the key is said after the Esc that closes it.
"""

from __future__ import annotations

import re

# The actions with a key of their own on a host's screens (docs/tui.md).
KEYS = {"sync": "y", "pull": "p", "verify": "v", "preflight": "P"}

_COMMAND = re.compile(
    r"(\brun )?`?rgt-tui (sync|pull|verify|preflight) (\S+?)`?(?=$|[\s,;:.)])(?! -)"
)


def in_keys(text: str, host: str, *, in_dialog: bool = False) -> str:
    """``text`` with each ``rgt-tui ACTION HOST`` for ``host`` said as its key: ``y
    (sync)``; "run" before it becomes "press". Backticks around the command go too.
    ``in_dialog``: said from a dialog over the host's screen, ``Esc, then y (sync)``."""

    escaped = not in_dialog  # once: "press Esc, then p (pull) and v (verify)"

    def key(match: re.Match[str]) -> str:
        nonlocal escaped
        run, action, named = match.groups()
        if named != host:
            return match.group(0)
        esc = "" if escaped else "Esc, then "
        escaped = True
        return f"{'press ' if run else ''}{esc}{KEYS[action]} ({action})"

    return _COMMAND.sub(key, text)
