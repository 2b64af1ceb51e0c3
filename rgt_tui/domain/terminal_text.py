"""A box's log line, with every terminal escape it carries dropped (SGR colours kept on request).

A training log is the box's text. Its colour sequences (SGR, ``ESC [ … m``) are worth
keeping on a terminal, but only what cannot draw the box's words invisibly or unlike
text: bold, dim, italic, underline, strike, the resets, and the twelve chromatic
foreground colours (red … cyan and their bright forms), which show on a dark and a light
background alike. Dropped: conceal (SGR 8, the text drawn as blanks), background colours
and 256-colour or RGB ones (a foreground equal to the background hides words: a hostile
hour hid text as black on black and as RGB 0,0,0 on 0,0,0), black and white foregrounds
(each the background of some terminal), reverse video and blink. Every other escape is the box driving the
user's terminal: OSC 52 writes the clipboard, OSC 8 plants a hyperlink, OSC 0/2 retitle
the window, CSI moves the cursor or clears the screen (so a log can forge the lines
above it), BEL rings, and the C1 forms (U+009B CSI, U+009D OSC …, which UTF-8 carries as
two bytes) do the same on terminals that honour them. Bidirectional overrides and
isolates (U+202A…U+202E, U+2066…U+2069) are dropped too: they reverse what follows.

``terminal_safe`` is the one filter for that (``rgt-tui logs``). Text meant to be shown
with its control characters *visible* (a name, a path) goes through ``text.printable``
instead. Pure: no I/O.
"""

from __future__ import annotations

import re

from rgt_tui.domain.text import is_digits

# One alternation, tried left to right at each position; every branch is linear (no
# nested repetition), so a hostile line cannot make it backtrack for long.
_ESCAPE_RE = re.compile(
    r"(?P<csi>(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?)"  # CSI (ESC [ or C1 U+009B), SGR among them
    # OSC, DCS, SOS, PM, APC (ESC ] P X ^ _ or C1 U+009D U+0090 U+0098 U+009E U+009F):
    # their body up to BEL or ST (ESC \ or U+009C); unterminated, to the next ESC or the end.
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"  # any other escape (ESC ( B, ESC 7, ESC c …), or a lone ESC
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"  # any other C0 (tab and newline kept), DEL, C1
    # Bidirectional overrides and isolates: they turn the rest of the line around on the
    # terminal ("loss 0.3\u202e" forges what follows; h503 #7). File names flag them.
    "|[\u202a-\u202e\u2066-\u2069]"
)
_SGR_RE = re.compile(r"(?:\x1b\[|\x9b)[0-9;:]*m")


# SGR parameters kept (``_safe_sgr``): reset, bold, dim, italic, underline, strike and
# their resets, the default colours, and the chromatic foregrounds (31-36, 91-96).
_KEPT_SGR = frozenset(
    {0, 1, 2, 3, 4, 9, 21, 22, 23, 24, 25, 27, 28, 29, 39, 49}
    | set(range(31, 37))
    | set(range(91, 97))
)
# Parameters that choose a colour by the numbers after them: 5 and an index, or 2 and
# red, green, blue (``38;5;8`` is colour 8, not conceal). Dropped with those numbers.
_COLOUR_PARAMS = ("38", "48", "58")
_UNDERLINE_STYLE = re.compile(r"4:[0-5]")


def _keep_sgr(match: re.Match[str]) -> str:
    text = match.group()
    # Only the 7-bit form is kept: a C1 CSI is written the way every terminal reads it.
    if match.group("csi") and text.startswith("\x1b") and _SGR_RE.fullmatch(text):
        return _safe_sgr(text)
    return ""


def _safe_sgr(sgr: str) -> str:
    """``ESC [ … m`` with only the parameters of ``_KEPT_SGR``; "" when none is left
    (``ESC [ m`` would reset)."""
    params = sgr[2:-1]
    if not params:
        return sgr  # ESC [ m: a reset
    parts = params.split(";")
    kept: list[str] = []
    i = 0
    while i < len(parts):
        part = parts[i]
        if part in _COLOUR_PARAMS:
            i += {"5": 3, "2": 5}.get(parts[i + 1] if i + 1 < len(parts) else "", 1)
            continue
        if ":" in part:
            # Sub-parameters: only an underline's style (4:3, curly) is kept. A terminal
            # that reads ':' as ';' would act on any other (1:8 conceals there; a review).
            if _UNDERLINE_STYLE.fullmatch(part):
                kept.append(part)
        elif part == "" or (is_digits(part) and int(part) in _KEPT_SGR):
            kept.append(part)
        i += 1
    if len(kept) == len(parts):
        return sgr
    return f"\x1b[{';'.join(kept)}m" if kept else ""


def terminal_safe(text: str, *, keep_sgr: bool = False) -> str:
    """``text`` with every terminal escape sequence and control character dropped, tab
    and newline kept; with ``keep_sgr``, ``ESC [ <digits ; :> m`` colour sequences are
    kept too (for a terminal), less whatever could hide the box's words (``_safe_sgr``),
    and a reset after them: a colour the box set ends with its text (h552 #4: an unclosed
    one coloured every later line, rgt-tui's own notices and the user's prompt)."""
    if keep_sgr:
        kept = _ESCAPE_RE.sub(_keep_sgr, text)
        left_open = [m.group() for m in _SGR_RE.finditer(kept)][-1:]
        return kept + RESET if left_open and left_open[0] not in _RESETS else kept
    return _ESCAPE_RE.sub("", text)


RESET = "\x1b[0m"
_RESETS = (RESET, "\x1b[m")
_SGR_RE = re.compile(r"\x1b\[[0-9;:]*m")
