"""Work at risk (issue 40): what a preemption would cost a running cell right now.

The agent reports the checkpoints the running cell writes on the box (the sample's
``ckpt``: ``agent/probe/checkpoints.py``): the newest one, and the last few writes (when
each was complete, how long it took when seen, its size). With the newest checkpoint
that is pulled and verified here, that says what a preemption loses:
``ckpt 3m ago on box · 41m ago verified here``; with the host's mean time between
preemptions (``domain.preemption.mtbf_s``) it gives the Young/Daly line (``domain.young_daly``).

Pure: parsed from the box's JSON (hostile input: bounded, typed, never raised), words out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rgt_tui.domain.text import printable
from rgt_tui.domain.young_daly import Cadence, CheckpointWrite, cadence

MAX_WRITES = 16  # the agent sends at most 8
NAME_CHARS = 120


@dataclass(frozen=True)
class CheckpointsSeen:
    """The running cell's checkpoints as the agent saw them on the box (box clock)."""

    name: str | None  # the newest one, relative to the cell's output folder
    mtime: float | None
    size: int | None
    writes: tuple[CheckpointWrite, ...] = ()
    writing: bool = False  # an unfinished write (``*.tmp``) is under way


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def read_checkpoints(value: Any, problems: list[str]) -> CheckpointsSeen | None:
    """The sample's ``ckpt`` object; None when absent. A wrong shape is a problem noted,
    never raised; bad writes are skipped."""
    if value is None:
        return None
    if not isinstance(value, dict):
        problems.append(f"sample.ckpt: expected an object, got {type(value).__name__}")
        return None
    name = value.get("name")
    size = _num(value.get("size"))
    writes = []
    raw = value.get("writes")
    for w in raw[:MAX_WRITES] if isinstance(raw, list) else ():
        if not isinstance(w, list) or len(w) != 3:
            continue
        at, took, wsize = _num(w[0]), _num(w[1]), _num(w[2])
        if at is None:
            continue
        writes.append(CheckpointWrite(at, took if took is None or took >= 0 else None,
                                      int(wsize) if wsize is not None and wsize >= 0 else 0))  # fmt: skip
    return CheckpointsSeen(
        printable(name, NAME_CHARS) if isinstance(name, str) else None,
        _num(value.get("mtime")),
        int(size) if size is not None and size >= 0 else None,
        tuple(writes),
        value.get("writing") is True,
    )


def cadence_seen(seen: CheckpointsSeen | None, mtbf: float | None) -> Cadence | None:
    """The observed cadence against W (None without an MTBF or a write seen)."""
    if seen is None or not mtbf or not seen.writes:
        return None
    return cadence(seen.writes, mtbf)


def ago(seconds: float) -> str:
    """``40s ago``, ``3m ago``, ``2h05m ago`` (never negative: the box's clock may run
    ahead of its files' mtimes by a moment)."""
    s = round(max(0.0, seconds))
    if s < 90:
        return f"{s}s ago"
    if s < 90 * 60:
        return f"{round(s / 60)}m ago"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m ago"


def ages_line(
    box_mtime: float | None, verified_mtime: float | None, now: float, from_host: str = ""
) -> str:
    """``ckpt 3m ago on box · 41m ago verified here``: the newest checkpoint on the box
    and the newest pulled and verified here (``none verified here`` without one; ``(from
    box1's copy)`` after it when a resume move brought the cell with that host's copy).
    The agent walks the cell's folder every 30 s: until it finds one, none is *seen* (a
    cell 30 s old with two checkpoints read "no checkpoint on box yet": hour s22a #5)."""
    box = (
        "no checkpoint seen on box yet"
        if box_mtime is None
        else f"ckpt {ago(now - box_mtime)} on box"
    )
    here = (
        "none verified here"
        if verified_mtime is None
        else f"{ago(now - verified_mtime)} verified here"
    )
    if verified_mtime is not None and from_host:
        here += f" (from {printable(from_host, NAME_CHARS)}'s copy)"
    return f"{box} · {here}"
