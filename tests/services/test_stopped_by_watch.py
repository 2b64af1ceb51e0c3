"""ux-b #2: a box ``watch``'s own autostop stopped is known as stopped, not as a failure.

The stop recorded in the autostop state (as ``AutoStop`` writes it, beside the fleet's
journal), then the box stops answering: the fleet runtime shows it ``stopped`` (no GEN8
"the run may still be alive"), it is never told as silent, never pulled on its cadence,
its compute no longer counted in the cost, and the metrics' connection state is not one
the shipped ``RgtHostLost`` rule pages on. Once the box answers again it is live as any
other, and a drop after that is a lost connection again.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.autostop import record_stop
from support.replay import ReplayMonitor
from support.samples import Clock, agent_sample
from support.waiting import wait_for

from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.paths import journal_dir
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.journal import journal_for
from rgt_tui.services.runtime.monitors import GEN8_ALERT
from rgt_tui.services.runtime.stopped import STOP_SETTLE_S, autostop_path
from rgt_tui.services.telemetry import JournalLastSeen
from rgt_tui.services.watch.events import HostState, WatchEvent
from rgt_tui.services.watch.sinks import Sink
from rgt_tui.services.watch.sinks.metrics import FleetMetrics
from rgt_tui.services.watch.watcher import Watcher

FLEET = """\
[[hosts]]
name = "box3"
ssh = "root@10.0.0.7:40022"
profile = "vastai"
cost_per_hour = 0.4
started_at = 2026-01-01T10:00:00Z
pull = ["/workspace/runs"]
pull_every = "1m"
stop = "vastai stop instance 1234567"
autostop_minutes = 1
"""


class Recorder(Sink):
    def __init__(self) -> None:
        self.states: list[HostState] = []
        self.events: list[WatchEvent] = []

    def on_host(self, host: HostConfig, state: HostState) -> None:
        self.states.append(state)

    def on_event(self, event: WatchEvent) -> None:
        self.events.append(event)


async def test_a_box_watch_stopped_is_stopped_not_lost_until_it_answers_again(
    tmp_path: Path,
) -> None:
    (tmp_path / "hosts.toml").write_text(FLEET)
    fleet = load_fleet(tmp_path / "hosts.toml")
    clock, rec = Clock(), Recorder()
    monitor = ReplayMonitor(fleet.host("box3"), clock)
    watcher = Watcher(fleet, sinks=[rec], clock=clock, monitors={"box3": monitor})
    metrics = FleetMetrics(fleet)
    watcher.sinks.append(metrics)
    stopped_at = clock.t - 5  # the stop ran; the box answers a moment longer
    record_stop(journal_dir(fleet.path), "box3", stopped_at)
    task = asyncio.create_task(watcher.run())
    try:
        await asyncio.wait_for(monitor.started.wait(), 30)
        monitor.sample(agent_sample("box3", t=clock.t))
        assert watcher.latest["box3"].connection.status == "connected"  # shown as it is
        clock.t += 60
        monitor.lose("connection refused")  # the provider's stop took the box away
        update = watcher.latest["box3"]
        assert update.connection.status == "stopped", update.connection
        assert update.connection.since == stopped_at  # the pane says "stopped by watch at" it
        assert "autostop" in (update.connection.error or "")
        assert GEN8_ALERT not in {a.id for a in update.alerts}
        await watcher.check_now()
        billed = rec.states[-1].cost_so_far
        assert rec.states[-1].cost_per_hour == 0.0 and billed is not None
        clock.t += 600  # past the silent grace, and many pull cadences
        await watcher.check_now()
        assert [e for e in rec.events if e.kind in ("silent", "pull_failed")] == []
        assert rec.states[-1].cost_so_far == billed  # no compute billed while stopped
        assert watcher.pull is not None and watcher.pull.start_due() == []
        assert watcher.pull.held_back["box3"].startswith("stopped by watch at ")
        scraped = {m.name: m for m in metrics.collect()}["rgt_connection_state"]
        on = {s.labels["state"] for s in scraped.samples if s.value == 1}
        assert on == {"stopped"}  # not lost|reconnecting|unreached: RgtHostLost stays quiet

        # Started again from the provider: it answers (the monitor records when), and a
        # drop after that is a lost connection again, GEN8 and all.
        clock.t += STOP_SETTLE_S
        JournalLastSeen(journal_for(fleet)).saw("box3", clock.t)
        monitor.sample(agent_sample("box3", t=clock.t))
        assert watcher.latest["box3"].connection.status == "connected"
        monitor.lose("connection refused")
        again = watcher.latest["box3"]
        assert again.connection.status == "reconnecting"
        assert GEN8_ALERT in {a.id for a in again.alerts}
        await watcher.check_now()
        assert rec.states[-1].cost_per_hour == 0.4
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    await wait_for(lambda: task.done(), timeout=10)


async def test_a_box_started_again_bills_nothing_for_the_time_it_was_stopped(
    tmp_path: Path,
) -> None:
    """h582 #3: once a box watch's autostop stopped answered again, ``rgt_cost_so_far``
    charged the whole stop back (the meter ran from started_at to now again). The time
    from the stop to its first answer is kept beside the stop, so another process (the
    TUI, watch run again) leaves it out too."""
    (tmp_path / "hosts.toml").write_text(FLEET)
    fleet = load_fleet(tmp_path / "hosts.toml")
    clock, rec = Clock(), Recorder()
    monitor = ReplayMonitor(fleet.host("box3"), clock)
    watcher = Watcher(fleet, sinks=[rec], clock=clock, monitors={"box3": monitor})
    metrics = FleetMetrics(fleet)
    watcher.sinks.append(metrics)
    stopped_at = clock.t - 5
    record_stop(journal_dir(fleet.path), "box3", stopped_at)
    task = asyncio.create_task(watcher.run())
    try:
        await asyncio.wait_for(monitor.started.wait(), 30)
        monitor.sample(agent_sample("box3", t=clock.t))
        clock.t += 60
        monitor.lose("connection refused")
        await watcher.check_now()
        at_stop = rec.states[-1].cost_so_far
        assert at_stop is not None
        clock.t += 3600  # an hour stopped, then started from the provider; its PID 1
        started = clock.t - 40  # started 40 s before it answered (its boot, a backoff)
        JournalLastSeen(journal_for(fleet)).saw("box3", clock.t)
        monitor.sample(agent_sample("box3", t=clock.t, seq=2, container_start=started))
        clock.t += 1800  # half an hour running again
        monitor.sample(agent_sample("box3", t=clock.t, seq=3, container_start=started))
        await watcher.check_now()
        assert rec.states[-1].cost_per_hour == 0.4
        # Billed from its own start, not from when it answered (review h594 #4).
        billed = at_stop + 0.4 * (1800 + 40) / 3600
        assert rec.states[-1].cost_so_far == pytest.approx(billed)
        scraped = {m.name: m for m in metrics.collect()}["rgt_cost_so_far"]
        assert scraped.samples[0].value == pytest.approx(billed)
        await wait_for(lambda: _back_at(fleet) is not None, timeout=10)
        assert _back_at(fleet) == started
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    # Another process on the same fleet (the TUI, or watch started again) reads it.
    rec2, monitor2 = Recorder(), ReplayMonitor(fleet.host("box3"), clock)
    watcher2 = Watcher(fleet, sinks=[rec2], clock=clock, monitors={"box3": monitor2})
    task = asyncio.create_task(watcher2.run())
    try:
        await asyncio.wait_for(monitor2.started.wait(), 30)
        monitor2.sample(agent_sample("box3", t=clock.t, seq=4, container_start=started))
        await watcher2.check_now()
        assert rec2.states[-1].cost_so_far == pytest.approx(billed)
        assert watcher2.latest["box3"].connection.status == "connected"
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_box_that_never_went_down_by_its_own_word_bills_the_whole_stop(
    tmp_path: Path,
) -> None:
    """Review h594 #4: a stop that exited 0 and stopped nothing, while this machine could
    not reach the box for an hour: the box answers with the PID 1 it had before the stop.
    It billed all along, so nothing is left out of the cost (the figure errs high)."""
    (tmp_path / "hosts.toml").write_text(FLEET)
    fleet = load_fleet(tmp_path / "hosts.toml")
    clock, rec = Clock(), Recorder()
    monitor = ReplayMonitor(fleet.host("box3"), clock)
    watcher = Watcher(fleet, sinks=[rec], clock=clock, monitors={"box3": monitor})
    stopped_at = clock.t - 5
    record_stop(journal_dir(fleet.path), "box3", stopped_at)
    pid1 = clock.t - 86400  # up for a day before the stop
    task = asyncio.create_task(watcher.run())
    try:
        await asyncio.wait_for(monitor.started.wait(), 30)
        monitor.sample(agent_sample("box3", t=clock.t, container_start=pid1))
        clock.t += 60
        monitor.lose("connection refused")  # this side's link, not the box
        await watcher.check_now()
        at_stop = rec.states[-1].cost_so_far
        assert at_stop is not None
        clock.t += 3600
        monitor.sample(agent_sample("box3", t=clock.t, seq=2, container_start=pid1))
        await watcher.check_now()
        # From the stop (5 s before the first sample) to now: all of it billed.
        assert rec.states[-1].cost_so_far == pytest.approx(at_stop + 0.4 * 3665 / 3600)
        assert _back_at(fleet) is None
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def _back_at(fleet: Fleet) -> float | None:
    data = json.loads(autostop_path(journal_dir(fleet.path), "box3").read_text())
    return data["stops"][0].get("back_at")


async def test_a_box_watch_stopped_keeps_no_idle_alert(tmp_path: Path) -> None:
    """h513 #4: a box idle long enough to be told "GPUs idle … while billed" kept that
    alert beside "stopped by watch", in the pane and in /metrics, billed at $0."""
    from support.samples import gpu

    from rgt_tui.domain.health import IDLE_ALERT

    (tmp_path / "hosts.toml").write_text(FLEET)
    fleet = load_fleet(tmp_path / "hosts.toml")
    clock = Clock()
    monitor = ReplayMonitor(fleet.host("box3"), clock)
    watcher = Watcher(fleet, sinks=[Recorder()], clock=clock, monitors={"box3": monitor})
    task = asyncio.create_task(watcher.run())
    try:
        await asyncio.wait_for(monitor.started.wait(), 30)
        for seq in range(1, 10):  # 36 minutes idle: past the 30 the alert waits
            monitor.sample(agent_sample("box3", t=clock.t, seq=seq, gpus=[gpu(0, 0.0, 210, 1, 40)]))
            clock.t += 240
        assert IDLE_ALERT in {a.id for a in watcher.latest["box3"].alerts}
        record_stop(journal_dir(fleet.path), "box3", clock.t - 5)
        monitor.lose("connection refused")
        update = watcher.latest["box3"]
        assert update.connection.status == "stopped", update.connection
        assert IDLE_ALERT not in {a.id for a in update.alerts}, update.alerts
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_box_started_again_soon_after_the_stop_is_pulled_again_at_once(
    tmp_path: Path,
) -> None:
    """h582 #2: started again 80 s after the stop, the box answered on a new connection,
    yet its journal's last_seen (written at most every 5 minutes) was not past the stop's
    settle time: periodic pulls stayed off for nearly 10 minutes. A connection made after
    the stop is the box started again."""
    (tmp_path / "hosts.toml").write_text(FLEET)
    fleet = load_fleet(tmp_path / "hosts.toml")
    clock, rec = Clock(), Recorder()
    monitor = ReplayMonitor(fleet.host("box3"), clock)
    watcher = Watcher(fleet, sinks=[rec], clock=clock, monitors={"box3": monitor})
    stopped_at = clock.t - 5
    record_stop(journal_dir(fleet.path), "box3", stopped_at)
    task = asyncio.create_task(watcher.run())
    try:
        await asyncio.wait_for(monitor.started.wait(), 30)
        monitor.sample(agent_sample("box3", t=clock.t))  # still going down: the same connection
        assert watcher.runtime.stopped_at("box3") == stopped_at
        clock.t += 10
        monitor.lose("connection refused")
        assert watcher.latest["box3"].connection.status == "stopped"
        clock.t += 70  # started again from the provider, well within the settle time
        JournalLastSeen(journal_for(fleet)).saw("box3", clock.t)  # the monitor's first write
        monitor.sample(agent_sample("box3", t=clock.t))
        assert watcher.latest["box3"].connection.status == "connected"
        assert watcher.runtime.stops.stopped_at("box3") == stopped_at  # the journal alone
        assert watcher.runtime.stopped_at("box3") is None  # a connection since the stop
        assert watcher.pull is not None
        watcher.pull.start_due()
        assert "box3" not in watcher.pull.held_back, watcher.pull.held_back
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    await wait_for(lambda: task.done(), timeout=10)
