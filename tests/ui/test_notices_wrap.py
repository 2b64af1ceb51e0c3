"""Hour s30: a notice's long text, wrapped in the notices list (``n``), went back to the
left edge, where its second line read as the next notice's head. Its lines now hang
under their indent. The real screen in a real App under the Pilot."""

from __future__ import annotations

from textual.app import App

from rgt_tui.controllers.notices import NoticeList
from rgt_tui.screens.notices import NoticesScreen
from rgt_tui.widgets.hanging import Hanging

TEXT = (
    "pulled 12 files (1.2G) into results/box1; verify: NOT VERIFIED: 2 problems (files: 2 "
    "corrupt, 10 verified): golf/checkpoint.pt is truncated or damaged on the box"
)


async def test_a_long_notice_wraps_under_its_indent() -> None:
    notices = NoticeList()
    notices.add("box1", "box1: periodic pull", TEXT, "warning")
    app: App[None] = App()
    async with app.run_test(size=(80, 24)) as pilot:
        app.push_screen(NoticesScreen(notices))
        await pilot.pause()
        body = app.screen.query_one("#notices-body", Hanging)
        lines = body.render().plain.split("\n")
        head = next(i for i, line in enumerate(lines) if "box1: periodic pull" in line)
        text = []
        for line in lines[head + 1 :]:
            if not line.strip():
                break
            text.append(line)
        assert len(text) >= 2, lines  # it wraps at this width
        assert all(line.startswith("    ") for line in text), text
        assert " ".join(line.strip() for line in text) == TEXT
