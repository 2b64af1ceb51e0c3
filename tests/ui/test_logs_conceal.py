"""A log line's SGR conceal (``ESC [ 8 m``) hides nothing: the Logs tab and ``rgt-tui
logs`` on a terminal show the words with the line's other colours (ux-i 11)."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console
from rich.style import Style

from rgt_tui.cli.logs import LogPrinter
from rgt_tui.content.log_text import log_text
from rgt_tui.domain.logscan import LogLine

LINE = "\x1b[8mHIDDEN\x1b[0m visible \x1b[31;8mred\x1b[0m"


def test_the_logs_tab_shows_concealed_words_with_their_colour() -> None:
    text = log_text(LINE)
    assert text.plain == "HIDDEN visible red"
    styles = [s.style if isinstance(s.style, Style) else Style.parse(s.style) for s in text.spans]
    assert not any(style.conceal for style in styles)
    assert any(style.color is not None and style.color.number == 1 for style in styles)  # red


def test_rgt_tui_logs_on_a_terminal_writes_no_conceal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    console = Console(file=io.StringIO(), force_terminal=True)
    LogPrinter(console, console).lines([LogLine(LINE)])
    out = console.file.getvalue()
    assert "HIDDEN" in out and "\x1b[31m" in out
    assert "\x1b[8m" not in out and ";8m" not in out and "[8;" not in out


def test_the_logs_tab_draws_no_word_in_the_background_colour() -> None:
    """Black on black, or RGB 0,0,0 on 0,0,0, hid a box's words in the Logs tab as well as
    conceal did (a hostile hour): background, 256-colour and RGB colours are dropped, and
    black and white foregrounds; red stays."""
    text = log_text(
        "a \x1b[30;40mBLACK\x1b[0m b \x1b[38;2;0;0;0;48;2;0;0;0mRGB\x1b[0m \x1b[5;7;31mred\x1b[0m"
    )
    assert text.plain == "a BLACK b RGB red"
    styles = [s.style if isinstance(s.style, Style) else Style.parse(s.style) for s in text.spans]
    assert not any(style.bgcolor or style.blink or style.reverse for style in styles)
    colours = [style.color for style in styles if style.color is not None]
    assert [c.number for c in colours] == [1], colours  # only the red


def test_rgt_tui_logs_ends_the_colours_a_line_left_open(monkeypatch: pytest.MonkeyPatch) -> None:
    """h552 #4: `\\e[31;1;4;9mUNCLOSED` coloured every later line, rgt-tui's own notices
    and the user's prompt after exit."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    console = Console(file=io.StringIO(), force_terminal=True)
    LogPrinter(console, console).lines([LogLine("ok"), LogLine("\x1b[31;1;4;9mUNCLOSED")])
    out = console.file.getvalue()
    assert "UNCLOSED\x1b[0m" in out, repr(out)
    assert out.rstrip("\n").endswith("\x1b[0m") and "ok\x1b[0m" not in out  # plain: none


def test_an_unfinished_line_with_tabs_stays_on_one_row_of_the_terminal() -> None:
    """h552 #3: the line still being drawn was cut by counting a tab as one cell; the
    terminal expanded it, the row wrapped, and clearing it left its first part behind."""
    console = Console(file=io.StringIO(), force_terminal=True, force_interactive=True, width=80)
    printer = LogPrinter(console, console)
    printer.partial("epoch 1:" + "".join(f"\tstep{n}" for n in range(30)))
    drawn = re.sub(r"\x1b\[[0-9;]*m", "", console.file.getvalue())
    assert "\t" not in drawn and len(drawn) <= 79, repr(drawn)
