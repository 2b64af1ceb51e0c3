"""r on a box that answers is no outage (hour s17a #5): it read "not answering:
connection lost … a run may still be alive (GEN8)", then "back after a 0s gap" in place
of the last real gap. Over a real loopback box: the monitor reconnects at once, never
reads anything but connected, and keeps the gap it showed."""

from __future__ import annotations

from support.pulls import host_of
from support.telemetry import Watch
from support.waiting import wait_for

from rgt_tui.services.telemetry import HostMonitor
from rgt_tui.transport import transport_for


async def test_r_on_a_box_that_answers_reconnects_without_an_outage(loopback_fleet) -> None:
    box = loopback_fleet.box("box1")
    host = host_of(loopback_fleet)
    monitor = HostMonitor(host, transport_for(host), interval=0.2)
    watch = Watch(monitor)
    try:
        first = await watch.until(lambda u: u.snapshot is not None, 30, "a first sample")
        made, since = box.connections_made, len(watch.updates)
        shown_gap = first.connection.gap_s
        monitor.request_reconnect()
        await wait_for(lambda: box.connections_made == made + 1, 30, "the new connection")
        sampled = len(watch.updates)
        await wait_for(
            lambda: any(u.snapshot is not None for u in watch.updates[sampled:]),
            30,
            "a sample on the new connection",
        )
        after = watch.updates[since:]
        assert all(u.connection.status == "connected" for u in after), [
            (u.connection.status, u.connection.error) for u in after
        ]
        assert all(not u.connection.error for u in after)
        assert watch.updates[-1].connection.gap_s == shown_gap  # not "a 0s gap"
    finally:
        await watch.stop()


async def test_a_monitor_started_again_after_a_stop_tells_no_gap(loopback_fleet) -> None:
    # A torn-down box's monitor is stopped while connected; r (or the look 5 minutes
    # later) starts it again. That pause was the TUI's own, not an outage: the pane read
    # "back 07:14 after a 5m00s gap", 07:14 being the first connection (a user's second
    # hour, s41).
    host = host_of(loopback_fleet)
    monitor = HostMonitor(host, transport_for(host), interval=0.2)
    first = Watch(monitor)
    try:
        seen = await first.until(lambda u: u.snapshot is not None, 30, "a first sample")
    finally:
        await first.stop()  # cancelled while connected, as FleetRuntime.retire does
    assert seen.connection.gap_s is None and monitor.connection.status == "connected"
    paused_from = monitor.last_sample_at
    await wait_for(lambda: monitor.clock() - (paused_from or 0) >= 1.5, 30, "a pause")
    again = Watch(monitor)
    try:
        back = await again.until(
            lambda u: u.snapshot is not None and u.snapshot is not seen.snapshot,
            30,
            "a sample after the restart",
        )
        assert back.connection.status == "connected"
        assert back.connection.gap_s is None, back.connection
    finally:
        await again.stop()
