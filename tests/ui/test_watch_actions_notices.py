"""ux-b #13: what ``watch`` did on its own — a move of a preempted cell, a stop — reaches
the open TUI's notices list (key n), once, from the told log ``watch`` keeps; what it
only said (a preemption: the TUI names its own) is not listed from there."""

from __future__ import annotations

import time
from pathlib import Path

from support.pilot import make_app, wait_for
from support.samples import agent_sample, make_update

from rgt_tui.controllers.notices import notices_of
from rgt_tui.messages import HostUpdated
from rgt_tui.paths import journal_dir
from rgt_tui.services.watch.events import WatchEvent
from rgt_tui.services.watch.told_log import ToldLog, told_log_path

HOST = "a100-train"


async def test_watchs_moves_and_stops_are_listed_in_the_notices(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    log = ToldLog(told_log_path(journal_dir(app.fleet.path)))
    named = WatchEvent("preempted", HOST, "preempted:a:1", f"{HOST}: preempted", "at ~21:46")
    moved = WatchEvent(
        "preempt_action", HOST, "move:preempted:a:1:eta:moved", f"{HOST}: moved",
        "moved eta to box2: it resumes from checkpoint.pt from 21:46", "info",
    )  # fmt: skip
    log.told(named, time.time())
    log.told(moved, time.time())  # watch moved it before the TUI was opened
    async with app.run_test(size=(100, 50)) as pilot:
        app.post_message(HostUpdated(make_update(HOST, agent_sample(HOST))))
        await wait_for(lambda: len(notices_of(app)) > 0, pilot=pilot)
        (first,) = notices_of(app).items()
        assert first.title == f"{HOST}: moved (by watch)" and "moved eta to box2" in first.text
        stopped = WatchEvent(
            "stopped", HOST, f"stopped:{HOST}:1", f"{HOST} stopped: queue done, results pulled "
            "and verified, GPUs idle", "Stopped a100-train with its stop command", "info",
        )  # fmt: skip
        log.told(stopped, time.time())  # and stops it while the TUI is open
        app.spot.actions._looked = float("-inf")  # not the 2 s the next look waits
        app.post_message(HostUpdated(make_update(HOST, agent_sample(HOST, seq=2))))
        await wait_for(lambda: len(notices_of(app)) > 1, pilot=pilot)
        titles = [n.title for n in notices_of(app).items()]
        assert titles == [stopped.title + " (by watch)", f"{HOST}: moved (by watch)"]
