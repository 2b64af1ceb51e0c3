"""A bandwidth limit is a limit: the budget's arithmetic on an injected clock, and a
resumed pull over a loopback box whose progress follows the budget on that clock.

No test here reads the wall clock: time is the budget's own (``VirtualClock``), moved only
by the budget's waits, so a loaded machine changes nothing. The delivered rate against
the wall clock is ``scripts/bench_pull.py --link bwlimit``'s job.
"""

from __future__ import annotations

import asyncio

import pytest
from support.pulls import Counted, box_results, fast, host_of, random_file, sha

from rgt_tui.services.pull import pull_host
from rgt_tui.services.pull.budget import MAX_CHUNK, MIN_CHUNK, Bandwidth
from rgt_tui.services.pull.copy import FLUSH_BYTES
from rgt_tui.transport import transport_for

MIB = 1 << 20


class VirtualClock:
    """Time that moves only when a budget waits: ``sleep(d)`` jumps it to the end of the
    wait (never back), then lets the loop run."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, delay: float) -> None:
        self.now = max(self.now, self.now + delay)
        await asyncio.sleep(0)


def budget_on(clock: VirtualClock, rate: float) -> Bandwidth:
    return Bandwidth(rate, clock=clock, sleep=clock.sleep)


async def test_a_cancelled_take_gives_its_time_back() -> None:
    """A copy cancelled while it waits for the budget (a lost connection, a cancelled
    pull) never asked for those bytes: the next caller is not held back by them."""
    clock = VirtualClock()
    budget = budget_on(clock, 1000.0)
    await budget.take(250)  # the burst: no wait

    async def never_resumed() -> None:
        await budget.take(10_000)  # ten seconds' worth, reserved

    waiting = asyncio.ensure_future(never_resumed())
    await asyncio.sleep(0)
    clock.now = 0.0  # the reservation is made; nothing has moved yet
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting

    clock.now = 0.0
    await budget.take(500)
    # 250 + 500 bytes at 1000 B/s with a 0.25 s burst: free at 0.5 s, not after the 10 s
    # of the cancelled reservation.
    assert clock.now == pytest.approx(0.5)


def test_a_budgeted_copy_asks_for_a_tenth_of_a_second_at_once() -> None:
    """The chunk a budgeted copy asks for: fine enough for a 10 s window at any rate."""
    assert Bandwidth.from_mbit(5).chunk_bytes() == 62_500
    assert Bandwidth.from_mbit(200).chunk_bytes() == 2_500_000
    assert Bandwidth.from_mbit(1000).chunk_bytes() == MAX_CHUNK
    assert Bandwidth(1000.0).chunk_bytes() == MIN_CHUNK


async def test_a_resumed_pull_under_a_budget_grows_and_reports_at_the_budgets_rate(
    make_loopback_fleet, tmp_path
):
    """A 40 MiB file resumed from an 8 MiB part, at 2 MB/s on the budget's clock, through
    two SFTP lanes: the part grows at the budget's rate (never a 16 MiB segment waiting
    in memory behind another lane's), and the progress's rate, counting only this run's
    bytes over its sliding window, reads the budget — the issue's 1.6 Mbit/s under
    ``--bwlimit 10`` was half the rate and jumps."""
    fleet = await make_loopback_fleet(1)
    box_file = box_results(fleet) / "ckpt" / "big.pt"
    digest = random_file(box_file, 40 * MIB)
    resumed = 8 * MIB
    part = tmp_path / "box1" / ".rgt" / "parts" / "ckpt" / "big.pt.part"
    part.parent.mkdir(parents=True)
    part.write_bytes(box_file.read_bytes()[:resumed])

    clock = VirtualClock()
    rate = 2e6
    budget = budget_on(clock, rate)
    seen = []
    host = host_of(fleet)
    box = Counted(transport_for(host))  # the file bytes the box has sent so far
    try:
        result = await pull_host(
            host,
            tmp_path,
            box,  # type: ignore[arg-type]
            options=fast(lanes_per_file=2, max_requests=1, budget=budget, progress_interval_s=0),
            on_progress=lambda p: seen.append((clock.now, box.total, p)),
            clock=clock,
        )
    finally:
        await box.inner.close()
    assert result.ok and sha(tmp_path / "box1" / "ckpt" / "big.pt") == digest
    (pulled,) = result.pulled
    assert pulled.resumed_from == resumed and result.bytes_received == 40 * MIB - resumed

    moving = [(t, sent, p) for t, sent, p in seen if p.phase == "pulling" and p.bytes_received]
    start = moving[0][0]
    end = start + (40 * MIB - resumed) / rate
    steady = [(t, sent, p) for t, sent, p in moving if start + 5 <= t <= end - 1]
    # Progress comes per batch written, and a batch holds what arrived while the last was
    # written: one chunk on a quiet machine, up to FLUSH_BYTES on a loaded one (there 17
    # points, not the 20 once asked for). The window holds at least this many batches:
    most = FLUSH_BYTES + budget.chunk_bytes()
    assert len(steady) >= int((end - 1 - (start + 5)) * rate / most) - 1 >= 3
    for t, sent, p in steady:
        # This run's bytes only, never more than the budget granted; and what came from
        # the box is on disk but for the writer's one batch: never a lane's 16 MiB
        # segment waiting in memory behind another lane's, the part still.
        assert p.bytes_done == resumed + p.bytes_received
        # (+1: the grant can be exactly the limit, 32 MiB at t + 0.25 = 16.777216 s, which
        # the float product reads as 33554431.99999993)
        assert sent <= rate * (t + 0.25) + 1
        # (The batch being written is cut after the chunk that reaches FLUSH_BYTES, so it
        # holds up to one chunk more; while a slow writer writes it, the lanes gather up
        # to FLUSH_BYTES more before they wait (copy.py's segment: one batch waiting, one
        # written; a loaded CI run saw 6.6 MB out); and each of the two lanes holds one
        # chunk. A lane's 16 MiB segment held back would still be far past this.)
        assert sent - p.bytes_received <= 2 * FLUSH_BYTES + 3 * budget.chunk_bytes()
        assert p.rate == pytest.approx(rate, rel=0.10), f"at {t:.1f} s the progress read {p.rate}"
        remaining = 40 * MIB - p.bytes_done
        assert p.eta_s == pytest.approx(remaining / p.rate)
