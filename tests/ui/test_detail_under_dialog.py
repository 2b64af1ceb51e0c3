"""The host screen's tabs hold their drawing while a dialog is on top of it and catch up
when it closes: a line written under a see-through modal lands over the modal's own box
(Textual 8.2.8; a user's hour saw chart blocks inside the help, and the Logs tab and the
Queue tab were left writing under dialogs). A real loopback box, the real App (Pilot)."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

from support.pilot import SIZE, make_app, open_logs_tab, wait_for

from rgt_tui.screens.tabs.logs import LogsTab
from rgt_tui.screens.tabs.queue import QueueTab


async def test_a_log_line_that_comes_under_the_help_is_drawn_when_it_closes(  # type: ignore[no-untyped-def]
    make_queue_fleet, tmp_path: Path
) -> None:
    qf = await make_queue_fleet(1)
    qf.qdir().mkdir(parents=True, exist_ok=True)
    log = qf.qdir() / "queue.log"
    log.write_text("epoch 1\n")
    app = make_app(tmp_path, fleet=qf.fleet, start_monitors=True, clock=time.time)
    async with app.run_test(size=SIZE) as pilot:
        tab = await open_logs_tab(app, pilot)
        assert isinstance(tab, LogsTab)
        detail = app.screen
        await wait_for(lambda: "epoch 1" in tab.lines, what="the first line", pilot=pilot)
        await pilot.press("question_mark")
        await wait_for(lambda: app.screen is not detail, what="the help", pilot=pilot)
        with log.open("a") as f:
            f.write("epoch 2\n")
        # The follower read it (the chunk came) and the tab kept it: nothing written.
        await wait_for(
            lambda: getattr(tab, "_held", None) is not None or "epoch 2" in tab.lines,
            what="the chunk",
            pilot=pilot,
        )
        assert "epoch 2" not in tab.lines
        await pilot.press("escape")
        await wait_for(lambda: "epoch 2" in tab.lines, what="drawn once back", pilot=pilot)
        assert tab.lines.count("epoch 2") == 1
        # And it follows on: the follower was waiting for that chunk to be drawn.
        with log.open("a") as f:
            f.write("epoch 3\n")
        await wait_for(lambda: "epoch 3" in tab.lines, what="the next line", pilot=pilot)


async def test_a_queue_view_polled_under_the_help_is_shown_when_it_closes(  # type: ignore[no-untyped-def]
    make_queue_fleet, tmp_path: Path
) -> None:
    qf = await make_queue_fleet(1)
    qf.write_queue("a 1\n")
    app = make_app(tmp_path, fleet=qf.fleet, start_monitors=True, clock=time.time)
    async with app.run_test(size=SIZE) as pilot:
        await open_logs_tab(app, pilot)
        detail: Any = app.screen
        tab = detail.tabs["queue"]
        assert isinstance(tab, QueueTab)
        view = await wait_for(lambda: detail.queue_view, what="a polled view", pilot=pilot)
        await pilot.press("question_mark")
        await wait_for(lambda: app.screen is not detail, what="the help", pilot=pilot)
        newer = dataclasses.replace(view)
        detail.queue_viewed("box1", newer)
        await pilot.pause()
        assert tab.view is not newer  # kept by the screen, not drawn under the help
        await pilot.press("escape")
        await wait_for(lambda: tab.view is newer, what="shown once back", pilot=pilot)
