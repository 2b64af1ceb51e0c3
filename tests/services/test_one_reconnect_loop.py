"""One reconnect loop and one wake for a host's borrowers (issue 28: one of each thing).

Telemetry, a pull and a log follower share a host's one connection (``FleetConnections``).
When the box goes away each of them waits by the same schedule, reports its attempt its
own way, and one ``wake`` (the user's ``r``) ends all three waits: each resumes at once.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from functools import partial

from support import MIB
from support.pulls import box_results, fast, host_of, random_file, sha
from support.waiting import wait_for

from rgt_tui.domain.logscan import LogChunk
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.logs import LogFollower
from rgt_tui.services.pull import pull_host
from rgt_tui.services.pull.progress import PullProgress
from rgt_tui.services.telemetry import HostMonitor, HostUpdate
from rgt_tui.transport.backoff import Backoff
from rgt_tui.transport.base import TransportError

# Every wait is at least 300 s: a borrower back within a minute was woken, not timed out.
SLOW_S = 600.0


@dataclass(frozen=True)
class AskedSchedule(Backoff):
    """The real schedule, noting every attempt number a borrower asked it about."""

    asked: list[int] = field(default_factory=list, compare=False)

    def delay(self, attempt: int, rng=None) -> float:  # type: ignore[no-untyped-def]
        self.asked.append(attempt)
        return super().delay(attempt, rng)


async def test_telemetry_pull_and_log_follower_wait_by_one_schedule_and_one_wake(
    make_loopback_fleet, tmp_path
):  # type: ignore[no-untyped-def]
    fleet = await make_loopback_fleet(1)
    host = host_of(fleet)
    box = fleet.box("box1")
    digest = random_file(box_results(fleet) / "ckpt.pt", 40 * MIB)
    log = box.root / "train.log"
    log.write_text("step 0\nstep 1\nstep 2\n")
    schedule = AskedSchedule(base=SLOW_S, cap=SLOW_S)
    connections = FleetConnections([host], backoff=schedule)
    transport = connections.transport(host.name)

    updates: list[HostUpdate] = []
    monitor = HostMonitor(host, transport, interval=0.2, backoff=schedule, connections=connections)
    log_attempts: list[tuple[int, float]] = []
    chunks: list[LogChunk] = []
    events: list[PullProgress] = []
    stopping: list[asyncio.Task] = []

    def log_attempt(attempt: int, delay: float, exc: TransportError) -> None:
        log_attempts.append((attempt, delay))

    async def follow() -> None:
        await connections.connect_with_backoff(host.name)
        follower = LogFollower(
            transport,
            "train.log",
            poll=0.05,
            reconnect=partial(connections.connect_with_backoff, host.name, log_attempt),
        )
        try:
            async for chunk in follower:
                chunks.append(chunk)
        finally:
            await follower.close()

    def stop_mid_file(p: PullProgress) -> None:
        events.append(p)
        if not stopping and any(f.done >= 4 * MIB for f in p.active):
            stopping.append(asyncio.ensure_future(box.stop()))

    def lines() -> list[str]:
        return [ln.text for c in chunks for ln in c.lines]

    tasks = [asyncio.create_task(monitor.run(updates.append))]
    try:
        await wait_for(lambda: monitor.last is not None, 60, "a telemetry sample")
        tasks.append(asyncio.create_task(follow()))
        await wait_for(lambda: len(lines()) == 3, 60, "the log's first lines")
        options = fast(backoff=schedule, max_attempts=5, stall_timeout_s=120, progress_interval_s=0)
        pulling = asyncio.create_task(
            pull_host(
                host,
                tmp_path / "results",
                transport,
                options=options,
                on_progress=stop_mid_file,
                wait=connections.waiter(host.name),
            )
        )
        tasks.append(pulling)

        # The box goes away mid-file: each borrower reports attempt 1 of the one schedule.
        await wait_for(lambda: len(schedule.asked) == 3, 60, "three borrowers in backoff")
        assert schedule.asked == [1, 1, 1]
        state = monitor.connection
        assert state.status == "reconnecting" and state.attempt == 1
        assert state.next_try_at is not None
        assert state.next_try_at - monitor.clock() >= SLOW_S / 2 - 5
        assert [a for a, _ in log_attempts] == [1] and log_attempts[0][1] >= SLOW_S / 2
        assert any(c.status == "reconnecting" for c in chunks)
        assert any(f.state == "retrying" for e in events for f in e.active)
        assert not pulling.done()
        await asyncio.gather(*stopping)

        # Back, with lines written meanwhile; one wake ends all three waits at once.
        await box.start()
        with log.open("a") as f:
            f.write("step 3\nstep 4\n")
        resumed_from = len(updates)
        connections.wake(host.name)

        result = await asyncio.wait_for(asyncio.shield(pulling), 60)
        assert result.ok and sha(tmp_path / "results" / "box1" / "ckpt.pt") == digest
        assert result.pulled[0].resumed_from >= 4 * MIB  # resumed from its part
        back = await wait_for(
            lambda: next(
                (u for u in updates[resumed_from:] if u.snapshot and u.connection.gap_s), None
            ),
            60,
            "telemetry after the wake",
        )
        assert back.connection.status == "connected"
        await wait_for(lambda: len(lines()) == 5, 60, "the lines written meanwhile")
        assert lines() == [f"step {i}" for i in range(5)]  # by offset: each line once
        assert schedule.asked == [1, 1, 1]  # nobody waited out a delay and asked again
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, *stopping, return_exceptions=True)
        await connections.close_all()


async def test_a_lost_connection_waits_first_and_gives_up_after_the_limit(
    make_loopback_fleet,
):  # type: ignore[no-untyped-def]
    """A borrower whose connection was just lost waits before its first try (attempt n
    already failed), and the last error is raised once ``max_attempts`` failed in a row."""
    from rgt_tui.services.connections import connect_with_backoff

    fleet = await make_loopback_fleet(1)
    host = host_of(fleet)
    await fleet.box("box1").stop()
    connections = FleetConnections([host], backoff=Backoff(base=0.02, cap=0.05))
    seen: list[int] = []
    lost = TransportError(host.name, "connection lost")
    try:
        try:
            await connect_with_backoff(
                connections.transport(host.name),
                connections.backoff,
                lambda attempt, delay, exc: seen.append(attempt),
                failed=2,
                failure=lost,
                max_attempts=4,
            )
        except TransportError as exc:
            assert "refused" in exc.message, exc.message  # the last try's error, not the loss
        else:
            raise AssertionError("a refused port connected")
        assert seen == [2, 3]  # the loss (2), then one refused try (3); the 4th gives up
    finally:
        await connections.close_all()
