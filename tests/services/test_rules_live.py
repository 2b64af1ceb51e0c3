"""The health and cost rules on real boxes: loopback SSH servers, the real agent, the real
queue runner, the real journal and the real `rgt-tui status`.

- log.silent (U43) fires on a running cell whose log stops while it keeps writing, found
  by one long-lived agent from the queue's records, which then follows the next cell;
- a forgotten box (GEN1) reaches the pane and `status --json` alike;
- the AutoDL release clock counts from the last sighting, across two monitor lifetimes;
- the danger-clock note shows the profile's spot grace.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.pilot import SIZE, screen_text, wait_for
from support.queues import SCRIPT_RUN, QueueFleet, wait_view  # SCRIPT_RUN: $1 name, $2 out
from support.telemetry import Watch, alert_ids

from rgt_tui.app import RgtApp, health_thresholds
from rgt_tui.demo.loopback import LoopbackFleet
from rgt_tui.domain.health import HealthState, Thresholds
from rgt_tui.domain.queue_state import FINISHED
from rgt_tui.messages import HostUpdated
from rgt_tui.services.box.status import collect_status
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.journal import Journal
from rgt_tui.services.queue.launch import launch, plan_launch
from rgt_tui.services.telemetry import (
    ConnectionState,
    HostMonitor,
    HostUpdate,
    JournalLastSeen,
)
from rgt_tui.transport import transport_for

DAY = 86400.0
# Prints once, then only writes its checkpoint (every 0.5 s, 20 s in all).
QUIET_CELL = """echo "training starts"
mkdir -p "$2"
for i in $(seq 1 40); do
    date +%s%N > "$2/checkpoint.tmp" && mv "$2/checkpoint.tmp" "$2/checkpoint"
    sleep 0.5
done"""
# Logs every step while it writes.
LOUD_CELL = """mkdir -p "$2"
for i in $(seq 1 25); do echo "step $i"; date +%s%N > "$2/metrics"; sleep 0.2; done"""


async def test_log_silent_fires_on_a_running_cell_and_the_agent_follows_the_queue(
    make_queue_fleet,
) -> None:
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.write_queue(
        f"{qf.cell_script('quiet', QUIET_CELL)} t\n{qf.cell_script('loud', LOUD_CELL)} t\n"
    )
    host = qf.host()
    monitor = HostMonitor(
        host,
        qf.transport(),
        interval=0.5,
        thresholds=Thresholds(log_silent_minutes=0.1),  # 6 s
        agent_args=["--no-gpu", "--scan-every", "1"],
    )
    watch = Watch(monitor)
    try:
        first = await watch.until(lambda u: u.snapshot is not None, 30, "a first sample")
        assert first.snapshot is not None and first.snapshot.cell is None  # nothing runs yet
        transport = qf.transport()
        await launch(await plan_launch(qf.fleet, host, transport), transport)
        await transport.close()

        silent = await watch.until(lambda u: "log.silent" in alert_ids(u), 40, "log.silent")
        alert = next(a for a in silent.alerts if a.id == "log.silent")
        assert silent.snapshot is not None and silent.snapshot.cell == "quiet"
        assert alert.subject == "quiet" and alert.severity == "warning"
        assert "while cell quiet's outputs still change" in alert.message
        # What the agent saw is what is on the box: the log stopped, the checkpoint did not.
        log = qf.qdir() / "cells" / "quiet.log"
        checkpoint = qf.root() / "results" / "quiet" / "checkpoint"
        assert checkpoint.stat().st_mtime - log.stat().st_mtime >= 6
        assert log.read_text().splitlines()[-1] == "training starts"

        # The same agent (no restart) moves on to the next cell, which logs: no alert.
        loud = await watch.until(
            lambda u: u.snapshot is not None and u.snapshot.cell == "loud", 40, "cell loud"
        )
        assert "log.silent" not in alert_ids(loud)
        done = await watch.until(
            lambda u: u.snapshot is not None and u.snapshot.queue_done_at is not None,
            40,
            "the queue's done record",
        )
        assert done.snapshot is not None and done.snapshot.cell is None
        assert "log.silent" not in alert_ids(done)
        samples = [u.snapshot for u in watch.updates if u.snapshot is not None]
        assert all(
            "log.silent" not in alert_ids(u)
            for u in watch.updates
            if u.snapshot and u.snapshot.cell == "loud"
        )
        seqs = [s.seq for s in samples]
        assert seqs == sorted(set(seqs)), "the agent was restarted"
        assert [u.connection.status for u in watch.updates].count("connected") == len(watch.updates)
    finally:
        await watch.stop()


async def test_a_forgotten_box_reaches_the_pane_and_status_json_alike(
    billed_queue_fleet: QueueFleet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    qf = billed_queue_fleet
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    hosts = qf.loopback.hosts_file
    # Forgotten 1.2 s after the queue finished (the default is 30 min).
    hosts.write_text("[fleet.thresholds]\nforgotten_minutes = 0.02\n\n" + hosts.read_text())
    qf.write_queue(f"{qf.cell_script('only', 'echo trained')} t\n")
    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
    await transport.close()
    await wait_view(qf, lambda v: v.state == FINISHED)
    await asyncio.sleep(1.5)

    out = await asyncio.to_thread(
        subprocess.run,
        [
            sys.executable,
            "-m",
            "rgt_tui",
            "status",
            "--hosts",
            str(qf.loopback.hosts_file),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=90,
        env={**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")},
    )
    (box,) = json.loads(out.stdout)
    by_status = {(a["id"], a["severity"]) for a in box["alerts"]}
    assert ("cost.forgotten", "critical") in by_status, out.stdout
    forgotten = next(a for a in box["alerts"] if a["id"] == "cost.forgotten")
    assert "$1.89/h" in forgotten["message"]

    fleet = qf.fleet
    host = fleet.host("box1")
    monitor = HostMonitor(
        host, transport_for(host), interval=0.5, thresholds=health_thresholds(fleet)
    )
    app = RgtApp(
        fleet, monitors={"box1": monitor}, start_monitors=False, config_dir=tmp_path / "cfg"
    )
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(
            lambda: app.latest.get("box1") and app.latest["box1"].snapshot,
            what="a sample to reach the app",
            pilot=pilot,
        )
        await wait_for(
            lambda: "queue finished" in screen_text(app),
            what="the forgotten-box alert on screen",
            pilot=pilot,
        )
        text = screen_text(app)
        update = app.latest["box1"]
        assert "queue finished" in text and "still bills $1.89/h" in text
    assert {(a.id, a.severity) for a in update.alerts} == by_status


class CountingLastSeen(JournalLastSeen):
    """The journal store, counting its writes."""

    def __init__(self, journal: Journal) -> None:
        super().__init__(journal)
        self.writes: list[float] = []

    def saw(self, host: str, t: float) -> None:
        self.writes.append(t)
        super().saw(host, t)


async def test_the_release_clock_counts_from_the_last_sighting_across_restarts(
    tmp_path: Path,
) -> None:
    journal = Journal(tmp_path / "journal")
    offset = [0.0]

    def clock() -> float:
        return time.time() + offset[0]

    async with LoopbackFleet(1, tmp_path / "fleet", costs=(("autodl", 0.5),)) as loopback:
        fleet = load_fleet(loopback.hosts_file)
        host = fleet.host("box1")
        # First lifetime: samples flow, then the box goes away (powered off).
        store = CountingLastSeen(journal)
        first = HostMonitor(
            host,
            transport_for(host),
            interval=0.2,
            clock=clock,
            last_seen=store,
            agent_args=["--no-gpu"],
        )
        watch = Watch(first)
        try:
            await watch.until(lambda u: u.snapshot is not None and u.snapshot.seq >= 10, 60)
            assert len(store.writes) == 1, (
                "the journal is written when samples start, not per sample"
            )
            await loopback.box("box1").stop()
            await watch.until(lambda u: u.connection.status == "reconnecting", 60)
            await asyncio.sleep(0.2)
            last_sample = first.last_sample_at
        finally:
            await watch.stop()
        assert len(store.writes) == 2 and store.writes[-1] == last_sample  # on the loss
        assert journal.load("box1").last_seen == last_sample

        # Thirteen days later, a new app run: the box still does not answer.
        offset[0] = 13 * DAY
        second = HostMonitor(
            host, transport_for(host), clock=clock, last_seen=JournalLastSeen(journal)
        )
        watch = Watch(second)
        try:
            lost = await watch.until(lambda u: u.connection.error is not None, 60)
        finally:
            await watch.stop()
        (alert,) = [a for a in lost.alerts if a.id == "profile.release_clock"]
        assert alert.severity == "critical" and "released in 2 days" in alert.message

        # Without the journal the clock would have started again from zero.
        forgetful = HostMonitor(host, transport_for(host), clock=clock)
        watch = Watch(forgetful)
        try:
            lost = await watch.until(lambda u: u.connection.error is not None, 60)
        finally:
            await watch.stop()
        assert "profile.release_clock" not in alert_ids(lost)

        # `rgt-tui status` reads the same record.
        (report,) = await collect_status(
            fleet, timeout=5, last_seen=JournalLastSeen(journal), clock=clock
        )
        assert not report.reachable
        assert "profile.release_clock" in {a.id for a in report.alerts}


async def test_the_danger_clock_note_shows_the_spot_grace(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts.toml"
    hosts.write_text('[[hosts]]\nname = "pod"\nssh = "root@10.0.0.9"\nprofile = "runpod"\n')
    app = RgtApp(load_fleet(hosts), start_monitors=False, config_dir=tmp_path / "cfg")
    async with app.run_test(size=(120, 40)) as pilot:
        connected = ConnectionState("connected", time.time())
        app.post_message(HostUpdated(HostUpdate("pod", connected, None, (), HealthState())))
        await pilot.pause(0.2)
        ((title, note),) = app.fleet_screen.notices.shown()
        assert title == "pod: danger clocks"
        assert "spot grace: ~5 s SIGTERM then SIGKILL" in note
        assert "a stopped pod may restart with zero GPUs" in note
