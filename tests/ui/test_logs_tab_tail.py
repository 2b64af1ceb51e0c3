"""The Logs tab opens a long log at its end (ux-g 3), not at its first byte: the last
``TAIL.lines`` lines, under a line that says earlier ones were not loaded and which command
prints the whole log. A real loopback box, the real App (Pilot)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from support.pilot import SIZE, make_app, wait_for
from textual.widgets import RichLog

from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.screens.tabs.logs import MAX_LINES, TAIL, LogsTab

LINES = 300_000  # 7 MB: a long run's log


async def test_a_long_log_opens_at_its_end_and_says_what_was_left_out(  # type: ignore[no-untyped-def]
    make_queue_fleet, tmp_path: Path
) -> None:
    qf = await make_queue_fleet(1)
    (qf.qdir() / "cells").mkdir(parents=True, exist_ok=True)
    body = "".join(f"old epoch line {i}\n" for i in range(LINES))
    (qf.qdir() / "queue.log").write_text(body)
    (qf.qdir() / "cells" / "b3c.log").write_text(body.replace("old", "cell"))
    app = make_app(tmp_path, fleet=qf.fleet, start_monitors=True, clock=time.time)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f")
        detail: Any = await wait_for(
            lambda: isinstance(app.screen, HostDetailScreen) and app.screen, pilot=pilot
        )
        await wait_for(lambda: detail.active_tab == "logs", what="the logs tab", pilot=pilot)
        tab = detail.tabs["logs"]
        assert isinstance(tab, LogsTab)
        last = f"old epoch line {LINES - 1}"
        await wait_for(lambda: last in tab.lines, what="the log's last line", pilot=pilot)
        assert tab.lines == [f"old epoch line {i}" for i in range(LINES - TAIL.lines, LINES)]
        log = tab.query_one(RichLog)
        rows = [strip.text for strip in log.lines]
        note = " ".join(rows[:3])
        assert "of earlier lines not loaded" in note and "rgt-tui logs box1 ──" in note
        assert len(log.lines) <= MAX_LINES

        # A cell's log: the same, and the command names the cell.
        tab.choose("b3c")
        last = f"cell epoch line {LINES - 1}"
        await wait_for(lambda: last in tab.lines, what="the cell log's last line", pilot=pilot)
        assert tab.lines[0] == f"cell epoch line {LINES - TAIL.lines}"
        rows = [strip.text for strip in log.lines]
        assert "rgt-tui logs box1 b3c ──" in " ".join(rows[:3])
