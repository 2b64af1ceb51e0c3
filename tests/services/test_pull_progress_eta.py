"""A pull's ETA is the time left for the bytes it still has to move, not for the whole
manifest: files already here count as done only once their hash is checked, so while
the box still hashes, an ETA on the manifest read `eta 9m26s` for a pull that ended in
20 s (a user's hour)."""

from __future__ import annotations

import pytest

from rgt_tui.services.pull.progress import ProgressTracker

MB = 1_000_000


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_eta_counts_the_bytes_to_move_not_the_files_already_here() -> None:
    clock, seen = Clock(), []
    tracker = ProgressTracker("box3", seen.append, interval=0, clock=clock)
    # The listing: 3.4 GB, of which 1.9 GB already here (not yet checked) and 1.5 GB to move.
    tracker.plan(5, 3_400 * MB, 0, 0)
    tracker.to_move = 1_500 * MB
    tracker.start_file("new.bin", 1_500 * MB, 0)
    for _ in range(10):  # 100 MB/s for a second
        clock.now += 0.1
        tracker.moved("new.bin", 10 * MB)
        tracker.advance("new.bin", 10 * MB)
    p = tracker.snapshot()
    assert p.bytes_done == 100 * MB and p.bytes_total == 3_400 * MB  # the bar: unchanged
    assert p.rate == pytest.approx(100 * MB, rel=0.15)
    assert p.eta_s == pytest.approx(1_400 * MB / p.rate)  # 14 s, not (3.4 G - 0.1 G) / rate
    # Before any plan said what moves, the whole manifest is all it has.
    plain = ProgressTracker("box3", None, clock=clock)
    plain.plan(5, 3_400 * MB, 0, 0)
    plain.start_file("new.bin", 1_500 * MB, 0)
    for _ in range(10):
        clock.now += 0.1
        plain.moved("new.bin", 10 * MB)
        plain.advance("new.bin", 10 * MB)
    q = plain.snapshot()
    assert q.rate > 0 and q.eta_s == pytest.approx((3_400 - 100) * MB / q.rate)


def test_no_rate_before_half_a_second_of_bytes() -> None:
    """The first bytes over the microseconds since they came read '43G/s eta 0s' on a
    pull's first line (hour s17b #13c): too soon to say, no rate and no eta."""
    clock = Clock()
    tracker = ProgressTracker("box3", None, interval=0, clock=clock)
    tracker.plan(1, 1_200 * MB, 0, 0)
    tracker.start_file("big.bin", 1_200 * MB, 0)
    tracker.moved("big.bin", 1 * MB)
    tracker.advance("big.bin", 1 * MB)
    clock.now += 0.00002  # read a moment after the bytes came
    first = tracker.snapshot()
    assert first.rate == 0 and first.eta_s is None
    assert first.active[0].rate == 0 and first.active[0].eta_s is None
    for _ in range(6):
        clock.now += 0.1
        tracker.moved("big.bin", 10 * MB)
        tracker.advance("big.bin", 10 * MB)
    later = tracker.snapshot()
    assert later.rate == pytest.approx(100 * MB, rel=0.25) and later.eta_s is not None
