"""The Logs tab opened while the box is down (ux-g 6): it shows the lines the last Logs
tab drew of that log and says why it cannot read on ("reconnecting: <why>"), not an empty
"opening…"; once the box answers, it follows on from where it stopped, no line twice. A
real loopback box, the real App (Pilot)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from support.pilot import SIZE, make_app, text_of, wait_for
from textual.widgets import Static

from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.screens.tabs.logs import LogsTab


async def _logs_tab(app: Any, pilot: Any) -> LogsTab:
    await pilot.press("f")
    detail: Any = await wait_for(
        lambda: isinstance(app.screen, HostDetailScreen) and app.screen.active_tab == "logs"
        and app.screen,
        what="the logs tab",
        pilot=pilot,
    )  # fmt: skip
    tab = detail.tabs["logs"]
    assert isinstance(tab, LogsTab)
    return tab


def _status(tab: LogsTab) -> str:
    return text_of(tab.query_one("#logs-status", Static))


async def test_reopened_while_the_box_is_down_it_shows_what_it_had_and_why(  # type: ignore[no-untyped-def]
    make_queue_fleet, tmp_path: Path
) -> None:
    qf = await make_queue_fleet(1)
    qf.qdir().mkdir(parents=True, exist_ok=True)
    log = qf.qdir() / "queue.log"
    log.write_text("".join(f"epoch {i}\n" for i in range(50)))
    app = make_app(tmp_path, fleet=qf.fleet, start_monitors=True, clock=time.time)
    async with app.run_test(size=SIZE) as pilot:
        tab = await _logs_tab(app, pilot)
        await wait_for(lambda: "epoch 49" in tab.lines, what="the log", pilot=pilot)
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, HostDetailScreen), pilot=pilot)

        box = qf.loopback.box("box1")
        await box.stop()
        await wait_for(
            lambda: app.latest["box1"].connection.status != "connected",
            what="the box to be seen down",
            pilot=pilot,
        )
        with log.open("a") as f:
            f.write("written while the box was down\n")

        tab = await _logs_tab(app, pilot)
        # At once: the lines drawn before, and why nothing new comes.
        assert tab.lines == [f"epoch {i}" for i in range(50)]
        await wait_for(
            lambda: _status(tab).startswith("reconnecting: ") and "queue.log" in _status(tab),
            what="the reason in the status",
            pilot=pilot,
        )
        assert "opening" not in _status(tab)
        await wait_for(
            lambda: "attempt" in _status(tab), what="the follower's own attempts", pilot=pilot
        )

        await box.start()
        await pilot.press("r")  # skip the backoff wait
        await wait_for(
            lambda: "written while the box was down" in tab.lines,
            40,
            what="the follower to read on",
            pilot=pilot,
        )
        assert tab.lines == [*(f"epoch {i}" for i in range(50)), "written while the box was down"]
        await wait_for(lambda: _status(tab).startswith("following"), pilot=pilot)
