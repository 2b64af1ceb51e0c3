"""A box's log line, with every terminal escape it carries dropped (SGR colours kept on request).

A training log is the box's text. Its colour sequences (SGR, ``ESC [ … m``) are the
user's own and worth keeping on a terminal; every other escape is the box driving the
user's terminal: OSC 52 writes the clipboard, OSC 8 plants a hyperlink, OSC 0/2 retitle
the window, CSI moves the cursor or clears the screen (so a log can forge the lines
above it), BEL rings, and the C1 forms (U+009B CSI, U+009D OSC …, which UTF-8 carries as
two bytes) do the same on terminals that honour them.

``terminal_safe`` is the one filter for that (``rgt-tui logs``). Text meant to be shown
with its control characters *visible* (a name, a path) goes through ``text.printable``
instead. Pure: no I/O.
"""

from __future__ import annotations

import re

# One alternation, tried left to right at each position; every branch is linear (no
# nested repetition), so a hostile line cannot make it backtrack for long.
_ESCAPE_RE = re.compile(
    r"(?P<csi>(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?)"  # CSI (ESC [ or C1 U+009B), SGR among them
    # OSC, DCS, SOS, PM, APC (ESC ] P X ^ _ or C1 U+009D U+0090 U+0098 U+009E U+009F):
    # their body up to BEL or ST (ESC \ or U+009C); unterminated, to the next ESC or the end.
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"  # any other escape (ESC ( B, ESC 7, ESC c …), or a lone ESC
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"  # any other C0 (tab and newline kept), DEL, C1
)
_SGR_RE = re.compile(r"(?:\x1b\[|\x9b)[0-9;:]*m")


def _keep_sgr(match: re.Match[str]) -> str:
    text = match.group()
    # Only the 7-bit form is kept: a C1 CSI is written the way every terminal reads it.
    if match.group("csi") and text.startswith("\x1b") and _SGR_RE.fullmatch(text):
        return text
    return ""


def terminal_safe(text: str, *, keep_sgr: bool = False) -> str:
    """``text`` with every terminal escape sequence and control character dropped, tab
    and newline kept; with ``keep_sgr``, ``ESC [ <digits ; :> m`` colour sequences are
    kept too (for a terminal: a log's colours are the user's)."""
    if keep_sgr:
        return _ESCAPE_RE.sub(_keep_sgr, text)
    return _ESCAPE_RE.sub("", text)
