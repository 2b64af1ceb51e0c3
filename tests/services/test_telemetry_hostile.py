"""What a hostile box's telemetry does to a host's monitor (ux-i 1, 4, 5): nothing it
sends ends the monitor, a stream it breaks is retried with backoff, and while no sample
comes the host never reads "connected" with frozen figures — its pane says why and how
old the last sample is.

The box is a loopback SSH box whose ``python3`` (first on its PATH) is the test's agent
stand-in: it reads the agent source from stdin, then prints the file ``lines`` every
0.2 s, whatever the test last put there (a sample with ``Infinity`` in it, a 2 MiB line,
nothing at all)."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from prometheus_client import generate_latest
from support.pulls import host_of
from support.samples import agent_sample
from support.telemetry import Watch
from support.waiting import wait_for

from rgt_tui.content.host_text import connection_lines
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.telemetry import HostMonitor, HostUpdate
from rgt_tui.services.watch.sinks.metrics import FleetMetrics
from rgt_tui.services.watch.state import host_state
from rgt_tui.transport import transport_for
from rgt_tui.transport.backoff import Backoff

SLOW_S = 600.0  # a backoff no test waits out: an attempt seen soon was not waited for


@dataclass(frozen=True)
class AskedSchedule(Backoff):
    """The real schedule, noting every attempt number the monitor asked it about."""

    asked: list[int] = field(default_factory=list, compare=False)

    def delay(self, attempt: int, rng=None) -> float:  # type: ignore[no-untyped-def]
        self.asked.append(attempt)
        return super().delay(attempt, rng)


class Lines:
    """What the stand-in prints every 0.2 s (replaced whole: never read half-written)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def put(self, text: str) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(text)
        os.replace(tmp, self.path)

    def sample(self, **overrides: object) -> None:
        self.put(json.dumps(agent_sample("box1", t=time.time(), **overrides)) + "\n")


@pytest.fixture
async def hostile(make_loopback_fleet, tmp_path):  # type: ignore[no-untyped-def]
    """(fleet, lines): box1's python3 prints ``lines`` every 0.2 s."""
    fleet = await make_loopback_fleet(1)
    bin_dir = tmp_path / "hostile-bin"
    bin_dir.mkdir()
    lines = Lines(tmp_path / "lines")
    lines.put("")
    script = bin_dir / "python3"
    script.write_text(
        f"#!/bin/sh\ncat > /dev/null\nwhile :; do cat '{lines.path}'; sleep 0.2; done\n"
    )
    script.chmod(0o755)
    fleet.box("box1").extra_path.append(bin_dir)
    return fleet, lines


def _pane(update: HostUpdate) -> str:
    """The host's status lines as its pane shows them."""
    return "\n".join(line.plain for line in connection_lines(update.connection, update.snapshot, time.time()))  # fmt: skip


async def test_infinity_and_nan_in_a_sample_are_refused_by_field_and_the_monitor_goes_on(
    hostile,
):  # type: ignore[no-untyped-def]
    fleet, lines = hostile
    good = json.dumps(agent_sample("box1", t=time.time()))
    lines.put(good.replace('"host_cpus": 128', '"host_cpus": Infinity').replace('"seq": 1', '"seq": NaN') + "\n")  # fmt: skip
    host = host_of(fleet)
    watch = Watch(HostMonitor(host, transport_for(host), interval=0.2))
    try:
        bad = await watch.until(lambda u: u.snapshot is not None, 30, "a sample")
        assert bad.connection.status == "connected" and bad.snapshot is not None
        assert bad.snapshot.host_cpus is None and bad.snapshot.seq == 0
        problems = bad.snapshot.problems
        assert "sample.host_cpus: expected a number, got Infinity" in problems, problems
        assert "sample.seq: expected a number, got NaN" in problems, problems
        # The monitor still runs: the box's next good sample arrives.
        lines.sample()
        back = await watch.until(
            lambda u: u.snapshot is not None and u.snapshot.host_cpus == 128, 30, "a good sample"
        )
        assert back.connection.status == "connected" and back.snapshot.problems == ()
    finally:
        await watch.stop()


async def test_a_line_over_the_cap_backs_off_and_the_pane_says_why(hostile):  # type: ignore[no-untyped-def]
    fleet, lines = hostile
    box = fleet.box("box1")
    lines.sample()
    host = host_of(fleet)
    schedule = AskedSchedule(base=SLOW_S, cap=SLOW_S)
    monitor = HostMonitor(host, transport_for(host), interval=0.2, backoff=schedule)
    watch = Watch(monitor)
    try:
        await watch.until(lambda u: u.snapshot is not None, 30, "a first sample")
        flood_from = len(watch.updates)
        lines.put("x" * (2 << 20) + "\n")

        # The stream ends on the long line and the monitor waits before the next login.
        waiting = await watch.until(
            lambda u: u.connection.next_try_at is not None, 20, "a backoff wait"
        )
        assert schedule.asked == [1] and box.connections_made == 1
        conn = waiting.connection
        assert conn.status == "reconnecting" and conn.attempt == 1
        assert conn.next_try_at is not None and conn.next_try_at - time.time() >= SLOW_S / 2 - 5
        pane = _pane(waiting)
        assert "◐ reconnecting (attempt 1" in pane and "sample " in pane, pane
        assert "the box printed a line over 1 MiB" in pane, pane

        # r: tried at once; connected again, the stream ends the same way. Until a sample
        # comes, the host never reads "connected" over its frozen figures.
        monitor.request_reconnect()
        await wait_for(lambda: box.connections_made == 2, 30, "the retry's login")
        await wait_for(lambda: len(schedule.asked) == 2, 30, "the retry's backoff wait")
        assert schedule.asked == [1, 2], schedule.asked  # r skipped one wait: the count goes on
        after = watch.updates[flood_from:]
        assert all(u.connection.status != "connected" for u in after), [u.connection for u in after]  # fmt: skip
        assert all(u.connection.error for u in after)  # each says why
    finally:
        await watch.stop()


async def test_a_box_that_sends_nothing_is_stalled_not_connected_and_is_retried(hostile):  # type: ignore[no-untyped-def]
    fleet, lines = hostile
    box = fleet.box("box1")
    lines.sample()
    host = host_of(fleet)
    monitor = HostMonitor(
        host, transport_for(host), interval=0.2, stall_s=2, backoff=Backoff(base=0.2, cap=0.5)
    )
    watch = Watch(monitor)
    metrics = FleetMetrics(load_fleet(fleet.hosts_file))
    try:
        await watch.until(lambda u: u.snapshot is not None, 30, "a first sample")
        silent_from = len(watch.updates)
        lines.put("")  # the channel stays open; nothing comes

        stalled = await watch.until(
            lambda u: "no sample within 2 s" in (u.connection.error or ""), 20, "the stall"
        )
        assert stalled.connection.status == "reconnecting"
        pane = _pane(stalled)
        assert "◐ reconnecting" in pane and " ago" in pane and "no sample within 2 s" in pane
        assert "hung mount" in pane  # the fix
        metrics.on_host(host, host_state(host, stalled, None, time.time()))
        scrape = generate_latest(metrics.registry).decode()
        assert 'rgt_connection_state{host="box1",state="reconnecting"} 1.0' in scrape

        # Started again (a new agent, after a backoff), and still not "connected".
        await wait_for(lambda: box.connections_made >= 3, 30, "the agent started again")
        after = watch.updates[silent_from:]
        assert all(u.connection.status != "connected" for u in after)

        lines.sample()
        back = await watch.until(
            lambda u: u.connection.status == "connected" and u.snapshot is not None
            and u.connection.gap_s is not None,
            30,
            "samples again",
        )  # fmt: skip
        assert back.connection.gap_s >= 2
    finally:
        await watch.stop()
