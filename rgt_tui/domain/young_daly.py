"""Checkpoint cadence: the Young/Daly interval beside the one a run keeps.

W = √(2·MTBF·C) minimises the work a preemption costs (the rollback since the last
checkpoint) plus the cost of writing checkpoints (``reference/spot-resilience.md`` §2):
MTBF is the mean time between preemptions (``preempt_mtbf_hours``, per profile, a host
may override it), C the time one checkpoint takes to write. The agent observes the
writes in a running cell's output folder (``agent/probe/artifacts.py``); this module
turns them into one line and decides whether the run checkpoints too seldom.

Pure: numbers in, words out.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

# An observed interval past this many W raises the info alert (health rule
# ``ckpt-cadence``): between W and 2·W the waste is within a few percent of the optimum.
SLOW_FACTOR = 2.0


def young_daly_s(mtbf_s: float, write_s: float) -> float:
    """W = √(2·MTBF·C), seconds (0 when either is not positive)."""
    if mtbf_s <= 0 or write_s <= 0:
        return 0.0
    return math.sqrt(2.0 * mtbf_s * write_s)


@dataclass(frozen=True)
class CheckpointWrite:
    """One checkpoint write seen in a cell's output folder (box clock, seconds)."""

    at: float  # when the checkpoint was complete (its rename / its final mtime)
    write_s: float | None = None  # how long it took (``*.tmp`` seen → renamed); None: unseen
    size: int = 0


@dataclass(frozen=True)
class Cadence:
    """A run's checkpoint cadence against the Young/Daly interval."""

    interval_s: float | None  # the observed median interval between writes
    write_s: float | None  # the observed median write time
    mtbf_s: float
    w_s: float | None  # Young/Daly W, when the write time is known

    @property
    def too_slow(self) -> bool:
        """The run checkpoints more than ``SLOW_FACTOR``·W apart."""
        return (
            self.interval_s is not None and bool(self.w_s) and self.interval_s > SLOW_FACTOR * self.w_s  # type: ignore[operator]
        )  # fmt: skip


def cadence(writes: Sequence[CheckpointWrite], mtbf_s: float) -> Cadence:
    """The median interval and write time of ``writes`` (any order) and W from them."""
    ordered = sorted(writes, key=lambda w: w.at)
    gaps = [b.at - a.at for a, b in zip(ordered, ordered[1:], strict=False) if b.at > a.at]
    times = [w.write_s for w in ordered if w.write_s is not None and w.write_s >= 0]
    interval = statistics.median(gaps) if gaps else None
    write = statistics.median(times) if times else None
    # A write quicker than a second still costs something: 1 s keeps W meaningful.
    w = young_daly_s(mtbf_s, max(write, 1.0)) if write is not None else None
    return Cadence(interval, write, mtbf_s, w)


def span(seconds: float) -> str:
    """``30 s``, ``13 min``, ``3 h``, ``2.5 h``: the runbook's way of saying a cadence."""
    if seconds < 120:
        return f"{round(seconds)} s"
    if seconds < 3 * 3600 and seconds % 3600:
        return f"{round(seconds / 60)} min"
    hours = seconds / 3600.0
    return f"{hours:g} h" if hours == round(hours) else f"{hours:.1f} h"


def cadence_line(c: Cadence, pull_every_s: float | None = None) -> str:
    """``checkpoints every 41 min; for this box W ≈ 13 min (write 30 s, MTBF 3 h)``, plus what a
    ``pull_every`` shorter than the interval or longer than W means."""
    if c.interval_s is None:
        head = "checkpoint interval not seen yet (one write so far)"
    else:
        head = f"checkpoints every {span(c.interval_s)}"
    if c.w_s:
        write = span(c.write_s or 0.0)
        head += f"; for this box W ≈ {span(c.w_s)} (write {write}, MTBF {span(c.mtbf_s)})"
    else:
        head += f"; W unknown until a write is timed (MTBF {span(c.mtbf_s)})"
    if c.too_slow:
        head += f" — over 2·W: checkpoint more often (every ~{span(c.w_s)})"
    note = pull_note(c, pull_every_s)
    return f"{head}; {note}" if note else head


def pull_note(c: Cadence, pull_every_s: float | None) -> str:
    """What ``pull_every`` buys against this cadence ("" when nothing to say)."""
    if not pull_every_s:
        return ""
    every = span(pull_every_s)
    if c.interval_s is not None and pull_every_s < c.interval_s:
        return (
            f"pull_every {every} is shorter than the checkpoint interval: "
            "most pulls find no new checkpoint"
        )
    if c.w_s and pull_every_s > c.w_s:
        return (
            f"pull_every {every} is longer than W: a preemption loses up to {every} "
            "of checkpoints not yet pulled"
        )
    return ""
