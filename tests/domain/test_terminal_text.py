"""Box text and the terminal: the log filter (terminal_safe), the CLI's fence, and the
queue records made printable where they enter (issue 39)."""

from __future__ import annotations

import io
import json
import re
import sys
import unicodedata

import pytest
from rich.console import Console
from rich.live import Live
from rich.text import Text

from rgt_tui.cli.fence import FencedConsole, FencedStream, Vetted, fenced_output
from rgt_tui.domain.queue_records import (
    CellAttempt,
    cells_tsv_line,
    parse_cell_marks,
    parse_cells_tsv,
)
from rgt_tui.domain.queue_state import FAILED, derive_view
from rgt_tui.domain.terminal_text import terminal_safe
from rgt_tui.domain.text import printable, visible_controls

OSC52 = "\x1b]52;c;cm0gLXJmIH4=\x1b\\"
CLEAR = "\x1b[2J\x1b[H"
LINK = "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\"
TITLE = "\x1b]0;pwned\x07"
C1 = "\u009b2J\u009d52;c;x\u009c"
HOSTILE = f"{OSC52}{CLEAR}{LINK}{TITLE}bell\x07lone\x1b {C1}\x1b[?25l\x1bc\x1b(Bend"
CONTROLS = set(map(chr, [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]))


def _clean(text: str) -> bool:
    return not CONTROLS & set(text)


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (OSC52 + "x", "x"),
        (CLEAR + "x", "x"),
        (LINK, "click"),
        (TITLE + "t", "t"),
        ("a\x07b", "ab"),
        ("a\x1b", "a"),  # a lone ESC at the end
        ("a\x1bb", "a"),  # ESC b is an escape of its own (its final byte)
        ("\u009b2Jx", "x"),
        ("\u009d52;c;x\u009cy", "y"),
        ("\x1b]52;c;unterminated", ""),
        ("tab\tkept", "tab\tkept"),
        ("\x1b[31mred\x1b[0m", "red"),
        ("loss 0.3\u202e1.0 ssol", "loss 0.31.0 ssol"),  # bidi override (h503 #7)
        ("a\u2066b\u2069c", "abc"),  # isolates
        ("\u05e9\u05dc\u05d5\u05dd", "\u05e9\u05dc\u05d5\u05dd"),  # right-to-left text itself stays
    ],
)
def test_terminal_safe_drops_every_escape(raw: str, shown: str) -> None:
    assert terminal_safe(raw) == shown


def test_terminal_safe_keeps_only_sgr_for_a_terminal() -> None:
    line = f"\x1b[1;31mloss\x1b[0m {HOSTILE} \x1b[38;5;208mok\x1b[m"
    kept = terminal_safe(line, keep_sgr=True)
    assert kept.startswith("\x1b[1;31mloss\x1b[0m ") and kept.endswith(" ok\x1b[m")
    without_sgr = kept.replace("\x1b[1;31m", "").replace("\x1b[0m", "")
    without_sgr = without_sgr.replace("\x1b[m", "")
    assert _clean(without_sgr), repr(kept)
    assert "\u009b" not in terminal_safe("\u009b31mx", keep_sgr=True)  # C1 SGR: dropped
    assert _clean(terminal_safe(line))


def test_visible_controls_escapes_all_but_newline_and_tab_as_json_escapes() -> None:
    shown = visible_controls(f"{HOSTILE}\nnext\tcol")
    assert _clean(shown.replace("\n", "").replace("\t", ""))
    assert "\\u001b]52;c;" in shown and "\\u009b2J" in shown and "\nnext\tcol" in shown
    assert visible_controls(shown) == shown  # idempotent


def test_format_characters_are_escaped_like_control_characters() -> None:
    """A bidi override or a zero-width space from a box (ux-b #12) shows as its escape,
    in the TUI's printable text as in the CLI's fence; every Cf character of the running
    Python's Unicode is covered by the listed ranges."""
    name = "H100 \u202e0803 PCIe\u200b"
    assert printable(name) == "H100 \\u202e0803 PCIe\\u200b"
    assert printable(printable(name)) == printable(name)  # idempotent
    assert printable("tag\U000e0041") == "tag\\U000e0041"
    assert visible_controls(name) == "H100 \\u202e0803 PCIe\\u200b"
    # Above the BMP the fence writes JSON's surrogate pair: its --json reads back the same.
    tag = "tag\U000e0041"
    assert json.loads('"' + visible_controls(tag) + '"') == tag
    assert json.loads('"' + visible_controls(name) + '"') == name
    format_chars = [
        chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"
    ]
    assert format_chars
    missed = [f"U+{ord(c):04X}" for c in format_chars if printable(c, None) == c]
    assert not missed
    assert not [f"U+{ord(c):04X}" for c in format_chars if visible_controls(c) == c]


def test_the_fence_escapes_print_and_rich_content_but_keeps_richs_own_styling() -> None:
    raw = io.StringIO()
    out = FencedConsole(file=raw, force_terminal=True, markup=False, soft_wrap=True)
    out.print(Text.assemble(("bold ", "bold red"), HOSTILE, "[bold red]x [link=https://e]y[/link]"))
    written = raw.getvalue()
    assert "\x1b[1;31mbold " in written  # Rich's own SGR
    assert "[bold red]x [link=https://e]y[/link]" in written  # markup shown, not read
    assert _clean(written.replace("\x1b[1;31m", "").replace("\x1b[0m", "")), repr(written)
    # A Live display (pull progress) pushes its hook after the fence: still fenced.
    raw2 = io.StringIO()
    live_out = FencedConsole(file=raw2, force_terminal=True, markup=False)
    with Live(Text(HOSTILE), console=live_out, auto_refresh=False) as live:
        live.refresh()
    assert "\\u001b]52" in raw2.getvalue() and OSC52 not in raw2.getvalue()
    # Vetted log lines: SGR passes when asked, nothing else.
    raw3 = io.StringIO()
    FencedConsole(file=raw3, force_terminal=True).print(
        Vetted([_seg("\x1b[32mgreen\x1b[0m" + HOSTILE)], keep_sgr=True)
    )
    assert "\x1b[32mgreen\x1b[0m" in raw3.getvalue() and OSC52 not in raw3.getvalue()
    # print() while a command runs.
    sink = io.StringIO()
    saved = sys.stdout
    sys.stdout = sink
    try:
        with fenced_output():
            assert isinstance(sys.stdout, FencedStream)
            print(HOSTILE)
    finally:
        sys.stdout = saved
    assert _clean(sink.getvalue().replace("\n", "")) and "\\u001b]52;c;" in sink.getvalue()


def _seg(text: str):  # noqa: ANN202
    from rich.segment import Segment

    return Segment(text)


def test_a_hostile_cell_name_is_printable_at_its_index_and_its_records_still_meet() -> None:
    name = f"{OSC52}{CLEAR}a"
    cells = parse_cells_tsv(f"0\t{name}\tbash x\n1\t[bold red]b\tbash y\n")
    assert [c.name for c in cells] == [printable(name, None), "[bold red]b"]
    assert cells[0].name.startswith("\\x1b]52;c;")
    attempts = {name: (CellAttempt(1, "boot", 7, end_ts=2, exit_code=3),)}
    view = derive_view(
        "box1", cells, (), attempts, boot_id="boot", now=5, runner_alive=False,
        reasons={name: f"bad {C1}"},
    )  # fmt: skip
    assert view.cells[0].status == FAILED and _clean(view.cells[0].note)
    marks = parse_cell_marks(f"skip 5 moved {OSC52}\nretry 6 /out/{CLEAR}\n")
    assert marks.retries[0][1] == printable(f"/out/{CLEAR}", None)
    with pytest.raises(ValueError, match="control characters"):
        cells_tsv_line(0, "a\x1bb", "bash x")


def test_plain_console_is_untouched_by_the_fence_module() -> None:
    # The fence is a Console of its own kind: a plain Rich Console (the TUI's) is not changed.
    raw = io.StringIO()
    Console(file=raw, force_terminal=False).print("a\x1bb", markup=False)
    assert "\x1b" in raw.getvalue()


@pytest.mark.parametrize(
    ("raw", "kept"),
    [
        ("\x1b[8mHIDDEN\x1b[0m visible", "HIDDEN\x1b[0m visible"),  # ux-i 11
        ("\x1b[1;8;31mX\x1b[m", "\x1b[1;31mX\x1b[m"),
        ("\x1b[08mX", "X"),
        ("\x1b[8:1mX", "X"),
        ("\x1b[1;38;5;8;33mX", "\x1b[1;33mX"),  # colour 8 of 256 (not conceal): dropped
        ("\x1b[48;2;8;8;8;8mX", "X"),
        ("\x1b[38:5:8mX", "X"),
        ("\x1b[28mX", "\x1b[28mX"),  # reveal: harmless
        # A foreground equal to the background hides words as well as conceal does
        # (a hostile hour): background, 256-colour and RGB colours, black and white.
        ("\x1b[30;40mHIDDEN\x1b[0m", "HIDDEN\x1b[0m"),
        ("\x1b[38;2;0;0;0;48;2;0;0;0mHIDDEN", "HIDDEN"),
        ("\x1b[97;107mHIDDEN", "HIDDEN"),
        ("\x1b[5;7;31mX", "\x1b[31mX"),  # blink and reverse
        ("\x1b[1;3;4;9;2;91mX\x1b[22;39m", "\x1b[1;3;4;9;2;91mX\x1b[22;39m"),
        ("\x1b[38;5mX", "X"),  # cut short: nothing after it is read as a colour
        # Sub-parameters: only an underline style; a terminal reading ':' as ';' would
        # act on the rest (a review).
        ("\x1b[:8mX", "X"),
        ("\x1b[1:8;31mX", "\x1b[31mX"),
        ("\x1b[31:30:40mX", "X"),
        ("\x1b[4:3mX", "\x1b[4:3mX"),
    ],
)
def test_only_sgr_that_cannot_hide_words_is_kept(raw: str, kept: str) -> None:
    """SGR 8 draws the text as blanks, and so does a foreground equal to the background:
    a box could hide a log's words from the user. Whatever colour is kept ends with the
    text (h552 #4)."""
    last = re.findall(r"\x1b\[[0-9;:]*m", kept)[-1:]
    closed = kept + "\x1b[0m" if last and last[0] not in ("\x1b[0m", "\x1b[m") else kept
    assert terminal_safe(raw, keep_sgr=True) == closed
