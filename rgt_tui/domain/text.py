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
import shlex

SHOWN_CHARS = 300  # the default cap: one box-provided piece of text on one line

# The Unicode format characters (category Cf): invisible, yet they act on what is shown.
# U+202E turns the rest of a line around ("H100 \u202e0803" reads "H100 3080" in a TUI
# and in Grafana), U+200B hides inside a name that looks like another, the tag characters
# spell hidden text. Listed by range (``re`` has no \p{Cf}); the ranges are Unicode 15's,
# and tests/domain/test_terminal_text.py checks them against the running Python's unicodedata.
_FORMAT = (
    "\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
    "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
    "\U000e0020-\U000e007f"
)
# C0 (newline, ESC, BEL... included), DEL, C1, the Unicode line and paragraph
# separators, lone surrogates (a name that was not UTF-8, kept by surrogateescape) and
# the format characters above.
_UNPRINTABLE_RE = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff{_FORMAT}]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# The same set less newline and tab: what the command line's fence escapes in whole output.
_FENCED_RE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff{_FORMAT}]")


def _escape(match: re.Match[str]) -> str:
    c = match.group()
    if c in _NAMED:
        return _NAMED[c]
    code = ord(c)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def printable(text: object, limit: int | None = SHOWN_CHARS) -> str:
    """``text`` (``str()`` of anything else) on one line with every control character
    and Unicode format character (bidi overrides, zero-width spaces) written as a
    visible escape, as ``repr`` does (``\\x1b``, ``\\n``, ``\\x07``, ``\\u202e``), and cut
    to ``limit`` characters (``…`` marks the cut; None: no cap). Idempotent on its own
    output: an escape it wrote contains no control character."""
    shown = _UNPRINTABLE_RE.sub(_escape, text if isinstance(text, str) else str(text))
    if limit is not None and len(shown) > limit:
        return shown[: max(limit - 1, 0)] + "…"
    return shown


def pad(text: str, width: int) -> str:
    """``text`` and spaces to ``width`` terminal cells, as ``f"{text:<{width}}"`` pads
    characters: a wide character (CJK, an emoji) takes two cells, and the columns after
    a cell named so were pushed right (h583 #6)."""
    from rich.cells import cell_len  # the width Textual draws with; imported when padding

    return text + " " * max(0, width - cell_len(text))


def shell_word(text: str, limit: int | None = 200) -> str:
    """``text`` made printable and quoted as one word of a command line the user may
    paste: a cell named "my run" (its config "configs/my run.json") made a printed
    ``--ack-missing my run`` fail with "unrecognized arguments: run" (h533 #4)."""
    return shlex.quote(printable(text, limit))


def _escape_u(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    # Above the BMP (a tag character), JSON's way: the UTF-16 surrogate pair.
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def visible_controls(text: str) -> str:
    """``text`` with every control character but newline and tab (C0, ESC, DEL, C1, the
    Unicode line separators, lone surrogates) and every Unicode format character (Cf)
    written as a 4-digit escape (``\\u202e``); no cap.

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


def is_digits(text: str) -> bool:
    """Whether ``int(text)`` reads ``text`` as a plain count: ASCII digits only, at most 20
    of them. ``str.isdigit`` alone admits ``²`` and other Unicode digits, on which ``int``
    raises, and a run of thousands of digits that Python refuses to convert: a box's df,
    stat or ps could end a command with a traceback (a review's hostile box, s38 #3)."""
    return 0 < len(text) <= 20 and text.isascii() and text.isdigit()
