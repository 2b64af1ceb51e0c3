"""The detail screen's scroll keys scroll the Logs tab's log (ux-g 2): PageUp/PageDown,
Home/End and j/k move the view with nothing focused first, and a growing log stays where
the user put it until End. A real loopback box, the real App (Pilot)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from support.pilot import SIZE, make_app, wait_for
from textual.widgets import RichLog

from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.screens.tabs.logs import LogsTab


async def test_scroll_keys_move_the_log_with_nothing_focused(  # type: ignore[no-untyped-def]
    make_queue_fleet, tmp_path: Path
) -> None:
    qf = await make_queue_fleet(1)
    qf.qdir().mkdir(parents=True, exist_ok=True)
    log_file = qf.qdir() / "queue.log"
    log_file.write_text("".join(f"line {i}\n" for i in range(400)))
    app = make_app(tmp_path, fleet=qf.fleet, start_monitors=True, clock=time.time)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f")
        detail: Any = await wait_for(
            lambda: isinstance(app.screen, HostDetailScreen) and app.screen, pilot=pilot
        )
        await wait_for(lambda: detail.active_tab == "logs", what="the logs tab", pilot=pilot)
        tab = detail.tabs["logs"]
        assert isinstance(tab, LogsTab)
        log = tab.query_one(RichLog)
        await wait_for(lambda: "line 399" in tab.lines, what="the log's end", pilot=pilot)
        await wait_for(
            lambda: log.max_scroll_y > 0 and log.scroll_y == log.max_scroll_y,
            what="the view at the log's end",
            pilot=pilot,
        )
        assert app.focused is not log  # what the user had: no Tab pressed
        bottom = log.scroll_y

        await pilot.press("pageup")
        await wait_for(lambda: log.scroll_y < bottom, what="PageUp to scroll", pilot=pilot)
        await pilot.press("home")
        await wait_for(lambda: log.scroll_y == 0, what="Home to reach the top", pilot=pilot)
        await pilot.press("j", "j")
        await wait_for(lambda: log.scroll_y == 2, what="j to scroll down", pilot=pilot)
        await pilot.press("k")
        await wait_for(lambda: log.scroll_y == 1, what="k to scroll up", pilot=pilot)
        await pilot.press("pagedown")
        await wait_for(lambda: log.scroll_y > 1, what="PageDown to scroll", pilot=pilot)
        here = log.scroll_y

        # New lines do not pull a reader who scrolled up back to the end...
        with log_file.open("a") as f:
            f.write("written while reading above\n")
        await wait_for(lambda: "written while reading above" in tab.lines, pilot=pilot)
        await pilot.pause()
        assert log.scroll_y == here
        # ...until End, after which the view follows the log again.
        await pilot.press("end")
        await wait_for(lambda: log.scroll_y == log.max_scroll_y, what="End", pilot=pilot)
        with log_file.open("a") as f:
            f.write("".join(f"more {i}\n" for i in range(20)))
        await wait_for(lambda: "more 19" in tab.lines, pilot=pilot)
        await wait_for(
            lambda: log.scroll_y == log.max_scroll_y and log.scroll_y > here + 10,
            what="the view to follow the end again",
            pilot=pilot,
        )
