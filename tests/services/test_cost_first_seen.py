"""Cost starts when the user said: a host with no ``started_at`` is billed from when
rgt-tui first saw its box answer (kept in the fleet's journal, across app runs), never
from the box's uptime (a box up for days, added a minute ago, has cost a minute)."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from support.telemetry import Watch
from support.waiting import wait_for

from rgt_tui.content.host_text import cost_text, host_cost
from rgt_tui.demo.loopback import LoopbackFleet
from rgt_tui.domain.box_identity import BoxIdentity
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.journal import Journal
from rgt_tui.services.telemetry import HostMonitor, JournalLastSeen
from rgt_tui.transport import transport_for

HOUR = 3600.0


@pytest.mark.usefixtures("utc")
async def test_cost_counts_from_first_seen_across_restarts_not_from_uptime(
    tmp_path: Path,
) -> None:
    journal = Journal(tmp_path / "journal")
    offset = [0.0]

    def clock() -> float:
        return time.time() + offset[0]

    async with LoopbackFleet(1, tmp_path / "fleet", costs=(("vastai", 3.6),)) as loopback:
        fleet = load_fleet(loopback.hosts_file)
        host = fleet.host("box1")
        assert host.started_at is None and host.cost_per_hour == 3.6

        first = HostMonitor(
            host, transport_for(host), interval=0.2, clock=clock,
            last_seen=JournalLastSeen(journal), agent_args=["--no-gpu"],
        )  # fmt: skip
        watch = Watch(first)
        try:
            sampled = await watch.until(lambda u: u.snapshot is not None, 30, "a sample")
        finally:
            await watch.stop()
        seen = first.last_sample_at
        assert seen is not None and sampled.first_seen == seen
        assert sampled.snapshot is not None and sampled.snapshot.uptime_s
        # This machine (the loopback box) has been up far longer than the test has run:
        # counting from boot would bill it; counting from the sighting bills ~nothing.
        assert sampled.snapshot.uptime_s > 60
        assert host_cost(host, seen + 1, first_seen=sampled.first_seen) == pytest.approx(0.001)
        # The journal records it beside the sample, not before it is emitted: wait for it.
        await wait_for(lambda: journal.load("box1").first_seen == seen, 30, "first_seen kept")

        # An hour later, a new app run: the bill still counts from the first sighting.
        offset[0] = HOUR
        second = HostMonitor(
            host, transport_for(host), interval=0.2, clock=clock,
            last_seen=JournalLastSeen(journal), agent_args=["--no-gpu"],
        )  # fmt: skip
        watch = Watch(second)
        try:
            later = await watch.until(lambda u: u.snapshot is not None, 30, "a sample")
        finally:
            await watch.stop()
        assert later.first_seen == seen
        now = seen + HOUR
        hhmm = time.strftime("%H:%M", time.localtime(seen))
        text = cost_text(host, now, first_seen=later.first_seen)
        # (with the date in front when the hour crossed midnight)
        assert text.startswith("$3.60/h · $3.60 since first seen ") and text.endswith(hhmm)


def test_another_box_under_the_name_restarts_the_bill(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal")
    store = JournalLastSeen(journal)
    store.saw("gpu1", 1000.0)
    journal.observe_box("gpu1", BoxIdentity("a" * 32, "SHA256:old"), 1000.0)
    store.saw("gpu1", 5000.0)
    assert store.first_seen("gpu1") == 1000.0
    # The platform gave the name to a new box: its bill starts when it answered.
    journal.observe_box("gpu1", BoxIdentity("b" * 32, "SHA256:new"), 9000.0)
    assert store.first_seen("gpu1") == 9000.0
    assert store.first_seen("never-seen") is None


def test_started_at_wins_and_says_so_far(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        '[[hosts]]\nname = "a"\nssh = "local"\ncost_per_hour = 2.0\n'
        "started_at = 2026-01-01T10:00:00Z\n"
        '[[hosts]]\nname = "b"\nssh = "local"\ncost_per_hour = 2.0\n'
    )
    fleet = load_fleet(hosts)
    noon = fleet.host("a").started_at.timestamp() + 2 * HOUR  # type: ignore[union-attr]
    assert cost_text(fleet.host("a"), noon, first_seen=noon - 60) == "$2.00/h · $4.00 so far"
    # Never seen and no started_at: the rate only, no invented spend.
    assert cost_text(fleet.host("b"), noon) == "$2.00/h"
    # Torn down: the total up to the teardown.
    assert cost_text(fleet.host("b"), noon, noon - HOUR, first_seen=noon - 2 * HOUR) == (
        "$2.00 total"
    )


@pytest.mark.usefixtures("utc")
def test_first_seen_names_the_day_when_it_was_not_today() -> None:
    from rgt_tui.content.host_text import first_seen_label

    noon = 1767268800.0  # 2026-01-01 12:00 UTC
    assert first_seen_label(noon - 3600, noon) == "since first seen 11:00"
    assert first_seen_label(noon - 2 * 86400, noon) == "since first seen Dec 30 12:00"


async def test_a_monitor_stopped_right_after_its_first_sample_still_records_the_sighting(
    tmp_path: Path,
) -> None:
    # The sighting is written by a worker thread. On a busy machine the write can still
    # wait for a free thread when the monitor is stopped (the app quits): the write must
    # not be dropped with the monitor, or the next run bills from a later sighting.
    journal = Journal(tmp_path / "journal")
    loop = asyncio.get_running_loop()
    pool = ThreadPoolExecutor(max_workers=1)
    loop.set_default_executor(pool)
    release = threading.Event()
    async with LoopbackFleet(1, tmp_path / "fleet") as loopback:
        host = load_fleet(loopback.hosts_file).host("box1")
        monitor = HostMonitor(
            host, transport_for(host), interval=0.2,
            last_seen=JournalLastSeen(journal), agent_args=["--no-gpu"],
        )  # fmt: skip
        watch = Watch(monitor)
        try:
            await watch.until(lambda u: u.connection.status == "connected", 30, "connected")
            busy = loop.run_in_executor(None, release.wait)  # the one thread is taken
            await watch.until(lambda u: u.snapshot is not None, 30, "a sample")
        finally:
            await watch.stop()
            release.set()
        await busy
        seen = monitor.last_sample_at
        assert seen is not None
        await wait_for(lambda: journal.load("box1").first_seen is not None, 30, "first_seen")
        assert journal.load("box1").first_seen == monitor.first_seen
