"""One periodic-pull cadence per host whoever pulls (ux-g 5): the TUI's periodic pulls
(``JobRunner.periodic_pulls``) and ``watch``'s (``Watcher.pull``) each count from the
host's last pull on disk, by either, and say what they skipped where the user looks (the
TUI's notices, watch's console). Over a real loopback box; each side has its own
connections and locks, as two processes do, and shares only the results folder."""

from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path

from support.controller_host import LoopHost
from support.pulls import box_results, host_of, random_file
from support.waiting import wait_for

from rgt_tui.controllers.jobs import JobRunner
from rgt_tui.controllers.notices import notices_of
from rgt_tui.domain.config import HostWatch
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.journal import Journal
from rgt_tui.services.runtime.locks import HostLocks
from rgt_tui.services.watch.watcher import Watcher

EVERY = 600.0


async def test_the_tui_and_watch_keep_one_cadence_and_say_what_they_skipped(
    make_loopback_fleet, tmp_path: Path
) -> None:
    loopback = await make_loopback_fleet(1)
    random_file(box_results(loopback) / "cell0" / "model.pt", 1000)
    host = host_of(loopback, watch=HostWatch(pull_every_s=EVERY))
    fleet = dataclasses.replace(
        load_fleet(loopback.hosts_file), results_dir=tmp_path / "res", hosts=(host,)
    )
    app = LoopHost()
    tui_connections = FleetConnections(fleet.hosts)
    journal = Journal(tmp_path / "journal")
    runner = JobRunner(app, fleet, tui_connections, locks=HostLocks(), journal=lambda: journal)
    tui = runner.periodic_pulls()
    lines: list[str] = []
    watcher = Watcher(fleet, hosts=fleet.hosts, report=lines.append)
    watch = watcher.pull
    assert watch is not None
    try:
        # The TUI pulls first (its own cadence came due).
        assert tui.start_due() == ["box1"]
        await wait_for(lambda: not tui.running("box1") and tui.last.get("box1"), 60, "pull 1")
        assert "pulled" in tui.last["box1"], tui.last

        # watch starts now: its first pull counts from the TUI's, a cadence later.
        assert watch.start_due() == [] and watch.due["box1"] > time.time() + EVERY - 60
        # Its own clock says due (it ran a cadence since its last pull): the TUI's pull
        # is younger than the cadence, so it is skipped and said on the console.
        watch.due["box1"] = time.time() - 1
        assert watch.start_due() == []
        (line,) = [ln for ln in lines if "periodic pull skipped" in ln]
        assert line.startswith("box1: periodic pull skipped: the last pull was ")
        # In seconds: "at 13:14" was already past when said at 13:14:08 (hour s18a #13).
        assert re.search(r"the next here in \S+, at \d\d:\d\d:\d\d$", line), line
        assert watch.due["box1"] > time.time() + EVERY - 60

        # The TUI's own pull does not hold back its own next one (a failed pull of its
        # own is retried on its schedule, not a cadence later) ...
        tui.due["box1"] = time.time() - 1
        assert tui.start_due() == ["box1"]
        await wait_for(lambda: not tui.running("box1"), 60, "pull 2")
        # ... but watch's pull meanwhile does.
        assert await watch.pull_once(host) is None
        tui.due["box1"] = time.time() - 1
        assert tui.start_due() == []
        (notice,) = [n for n in notices_of(app).items() if "skipped" in n.title]
        assert notice.host == "box1" and notice.title == "box1: periodic pull skipped"
        assert notice.text.startswith("the last pull was ") and "rgt-tui watch" in notice.text
        assert tui.due["box1"] > time.time() + EVERY - 60
    finally:
        await app.drain()
        await watcher.close()
        await tui_connections.close_all()
