"""Hanging: label/value lines whose wrapped values start under their value column, not
at the left edge where they read as an entry of their own (a user's hour on the Teardown
tab at 80 columns). The widget measured and drawn by a real App under the Pilot."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.content import Content

from rgt_tui.widgets.hanging import Hanging, hang

CLOCKS = (
    "danger clocks        nothing reclaims the box: it bills 24/7 until destroyed; a "
    "reboot kills tmux/nohup jobs"
)


def test_a_long_value_hangs_under_its_column_and_keeps_its_styles() -> None:
    line = Content.assemble(("✓ ", "bold"), ("manifest   ", "bold"), "a manifest taken after the last write │ found: 2 files")  # fmt: skip
    lines = hang(line, 40)
    assert [x.plain for x in lines] == [
        "✓ manifest   a manifest taken after the",
        "             last write │ found: 2 files",
    ]
    assert lines[0].spans[:2] == line.spans[:2] and all(x.cell_length <= 40 for x in lines)


def test_a_line_without_a_column_or_too_far_right_wraps_plainly() -> None:
    plain = Content("! nothing pulled yet: run rgt-tui pull box1 then rgt-tui verify box1")
    assert [x.plain for x in hang(plain, 30)] == [x.plain for x in plain.wrap(30)]
    far = Content("label that is very long   value " * 2)
    assert [x.plain for x in hang(far, 30)] == [x.plain for x in far.wrap(30)]
    assert [x.plain for x in hang(Content("short  row"), 30)] == ["short  row"]


def test_an_indented_line_without_a_column_hangs_under_its_indent() -> None:
    """Hour s30: a notice's body, indented, wrapped to the left edge and read as the
    next notice's head."""
    body = Content("    pulled 12 files; verify: NOT VERIFIED: 2 problems (files: 2 corrupt)")
    lines = [x.plain for x in hang(body, 30)]
    assert lines[0].startswith("    pulled") and len(lines) > 2, lines
    assert all(x.startswith("    ") and not x.startswith("     ") for x in lines), lines
    assert " ".join(x.strip() for x in lines) == body.plain.strip()


class One(App[None]):
    def compose(self) -> ComposeResult:
        yield Hanging(Content(CLOCKS + "\nsurvives stop        the box keeps running"))


async def test_the_widget_is_as_tall_as_its_hung_lines_and_shows_them() -> None:
    app = One()
    async with app.run_test(size=(50, 10)) as pilot:
        await pilot.pause()
        widget = app.query_one(Hanging)
        assert widget.size.height == 4, widget.size
        shown = [line.rstrip() for line in widget.render().plain.split("\n")]
        assert shown == [
            "danger clocks        nothing reclaims the box: it",
            "                     bills 24/7 until destroyed; a",
            "                     reboot kills tmux/nohup jobs",
            "survives stop        the box keeps running",
        ]
        # What a copy or a test reads is the text as given, unwrapped.
        assert str(widget.visual).startswith(CLOCKS)
