"""A host whose monitor ends by an error is no longer shown as connected (ux-i 1): its
pane and watch's metrics read "lost" with the error and the fix, not "connected" over the
last figures for as long as the app or watch runs."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import generate_latest
from support.replay import ReplayMonitor
from support.samples import FROZEN, agent_sample, make_update

from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.runtime.events import TelemetryEnded
from rgt_tui.services.runtime.runtime import FleetRuntime
from rgt_tui.services.watch.sinks.metrics import FleetMetrics
from rgt_tui.services.watch.state import host_state

FLEET = '[[hosts]]\nname = "box1"\nssh = "root@10.0.0.5:40022"\n'


async def test_a_monitor_that_ends_by_an_error_leaves_its_host_lost_not_connected(
    tmp_path: Path,
) -> None:
    (tmp_path / "hosts.toml").write_text(FLEET)
    fleet = load_fleet(tmp_path / "hosts.toml")
    crashing = ReplayMonitor(updates=[make_update("box1", agent_sample("box1"))], crash="boom")
    events: list[object] = []
    runtime = FleetRuntime(
        fleet,
        FleetConnections(fleet.hosts),
        monitors={"box1": crashing},
        clock=lambda: FROZEN,
        on_event=events.append,
    )
    try:
        await runtime.start_monitor("box1")
        assert any(isinstance(e, TelemetryEnded) for e in events)
        latest = runtime.latest["box1"]
        assert latest.connection.status == "lost"
        assert latest.connection.error == "telemetry stopped: RuntimeError: boom"
        assert latest.connection.fix is not None and "press r" in latest.connection.fix
        assert latest.snapshot is not None  # its last figures, as the last sample's

        metrics = FleetMetrics(fleet)
        host = fleet.host("box1")
        metrics.on_host(host, host_state(host, latest, None, FROZEN))
        scrape = generate_latest(metrics.registry).decode()
        assert 'rgt_connection_state{host="box1",state="lost"} 1.0' in scrape
        assert 'rgt_connection_state{host="box1",state="connected"} 0.0' in scrape
    finally:
        await runtime.close()


async def test_r_while_a_stopped_monitor_is_still_closing_starts_a_new_one(
    tmp_path: Path,
) -> None:
    """A torn-down box's monitor is cancelled but takes a round trip to close its channel:
    ``r`` in that window starts a monitor, it does not ask the dying one to reconnect (the
    key would do nothing). The CI saw the window: the task was still cancelling."""
    (tmp_path / "hosts.toml").write_text(FLEET)
    fleet = load_fleet(tmp_path / "hosts.toml")
    monitor = ReplayMonitor(updates=[make_update("box1", agent_sample("box1"))])
    runtime = FleetRuntime(
        fleet, FleetConnections(fleet.hosts), monitors={"box1": monitor}, clock=lambda: FROZEN
    )
    try:
        first = runtime.start_monitor("box1")
        await monitor.started.wait()
        assert runtime.running("box1")

        assert runtime.stop_telemetry("box1")
        assert not first.done()  # cancelling: the same tick, nothing awaited
        assert not runtime.running("box1")
        assert runtime.reconnect("box1")
        second = runtime.monitor_tasks["box1"]
        assert second is not first and monitor.reconnects == 0
        assert runtime.running("box1") and "box1" not in runtime.stopped
    finally:
        await runtime.close()
