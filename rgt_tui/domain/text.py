"""Text from a box, made safe to show on a terminal.

Whatever a rented box prints (an id file's error, a file name, a reason) is someone
else's text: an ESC in it could move the cursor, retitle the terminal or clear the
screen, a newline could forge a line of the checklist. ``printable`` is applied where
such text enters (the parsers of box output) and where it meets the user (the teardown
checklist, its problems). ``visible_controls`` is the command line's last fence
(``cli/fence.py``): every line the CLI writes goes through it, so a control character
that slipped past a parser still shows as an escape instead of acting. Log lines, whose
colours are kept, use ``terminal_text.terminal_safe``.

Pure: no I/O.
"""

from __future__ import annotations

import re

SHOWN_CHARS = 300  # the default cap: one box-provided piece of text on one line

# C0 (newline, ESC, BEL... included), DEL, C1, the Unicode line and paragraph
# separators, and lone surrogates (a name that was not UTF-8, kept by surrogateescape).
_UNPRINTABLE_RE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# The same set less newline and tab: what the command line's fence escapes in whole output.
_FENCED_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    c = match.group()
    if c in _NAMED:
        return _NAMED[c]
    code = ord(c)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: object, limit: int | None = SHOWN_CHARS) -> str:
    """``text`` (``str()`` of anything else) on one line with every control character
    written as a visible escape, as ``repr`` does (``\\x1b``, ``\\n``, ``\\x07``), and cut
    to ``limit`` characters (``…`` marks the cut; None: no cap). Idempotent on its own
    output: an escape it wrote contains no control character."""
    shown = _UNPRINTABLE_RE.sub(_escape, text if isinstance(text, str) else str(text))
    if limit is not None and len(shown) > limit:
        return shown[: max(limit - 1, 0)] + "…"
    return shown


def _escape_u(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def visible_controls(text: str) -> str:
    """``text`` with every control character but newline and tab (C0, ESC, DEL, C1, the
    Unicode line separators, lone surrogates) written as ``\\uXXXX``; no cap.

    ``\\u`` rather than ``printable``'s ``\\x``: the same escape is valid JSON, so a
    ``--json`` output the fence touched (json.dumps with ensure_ascii=False leaves C1
    characters raw) stays parseable and reads back the same text."""
    return _FENCED_RE.sub(_escape_u, text)


def printable_lines(text: object) -> str:
    """``text`` with its newlines kept and each line made printable on its own, uncut: a
    multi-line message (a toast, a notification body, an error with its fix) that quotes
    the box. The one place lines are cleaned one by one (UI, toasts and notifications)."""
    value = text if isinstance(text, str) else str(text)
    return "\n".join(printable(line, None) for line in value.split("\n"))
