"""The checkpoint write time a runtime observed on each host's box, kept beside the
fleet's journal (SLURM2): the ``signal-lead`` check sizes the warning's lead from it.

The TUI and ``watch`` (``services.runtime``) see the agent's timed checkpoint writes in
each sample; the median is recorded as ``<journal>/ckpt/<host>.json`` (``write_s`` and
``at``, this machine's clock) whenever it changes. Preflight and the Slurm launch plan
read it back (``observed_write``); a record older than ``MAX_AGE_S`` says nothing about
today's run and is left out, as is a damaged one (the configured value then stands)."""

from __future__ import annotations

import math
import time
from pathlib import Path

from rgt_tui.domain.config import Fleet
from rgt_tui.domain.slurm_lead import ObservedWrite
from rgt_tui.paths import journal_dir
from rgt_tui.services.records import atomic_write_json, read_json

MAX_AGE_S = 7 * 86400


def ckpt_dir(fleet: Fleet) -> Path | None:
    """Where ``fleet``'s observed write times are kept (None for the stand-in local
    fleet, which keeps no journal)."""
    return None if fleet.is_default else journal_dir(fleet.path) / "ckpt"


def record_write(folder: Path, host: str, write_s: float, at: float) -> None:
    """Keep ``write_s`` as the write time observed on ``host`` at ``at`` (OSError: the
    folder is unwritable; the caller decides). ``host``: a checked fleet host name."""
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_json(folder / f"{host}.json", {"write_s": round(write_s, 1), "at": at})


def _when(at: float, now: float) -> str:
    """``14:02`` today, ``Nov 27 14:02`` before (local time)."""
    local, today = time.localtime(at), time.localtime(now)
    same_day = local[:3] == today[:3]
    return time.strftime("%H:%M" if same_day else "%b %d %H:%M", local)


def observed_write(
    fleet: Fleet, host: str, now: float | None = None, max_age_s: float = MAX_AGE_S
) -> ObservedWrite | None:
    """The write time recorded for ``host`` within ``max_age_s``; None when there is none
    (never recorded, too old, damaged, unreadable: the configured value stands)."""
    folder = ckpt_dir(fleet)
    if folder is None:
        return None
    now = time.time() if now is None else now
    try:
        data = read_json(folder / f"{host}.json")
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    write_s, at = data.get("write_s"), data.get("at")
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (write_s, at))
    if not numbers or not (math.isfinite(write_s) and math.isfinite(at)) or write_s < 0:
        return None
    if now - at > max_age_s:
        return None
    return ObservedWrite(float(write_s), _when(at, now))
