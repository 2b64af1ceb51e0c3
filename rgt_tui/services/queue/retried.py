"""When a retry set each cell's outputs aside, by the box's clock: a record beside the
host's pulled copy (``<results>/<host>/.rgt/retries.json``).

A copy pulled before a retry holds the attempt the retry discarded, under the cell's
``{out}``: taken for the retried attempt's, a resume move pushed that checkpoint and the
cell resumed from it after a preemption (hour s17a #1), though the retry promised a
fresh start. A manifest taken (box clock) before the cell's last retry therefore vouches
for nothing of it; a pull after the retry lists the set-aside folder under its own name
(``<out>.before-retry-<time>``), never under ``{out}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from rgt_tui.domain.config import Fleet
from rgt_tui.domain.units import local_time
from rgt_tui.services.records import atomic_write_json, fleet_host_dir, read_json, records_dir

RECORD_FILE = "retries.json"


def record_path(host_dir: Path) -> Path:
    """Where the host's retry times are kept (its stat is part of the pane's cache key)."""
    return records_dir(host_dir) / RECORD_FILE


def _read(host_dir: Path) -> dict[str, float]:
    try:
        data = read_json(record_path(host_dir))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: float(v) for k, v in data.items() if isinstance(v, (int, float))}


def record_retries(fleet: Fleet, host: str, times: Mapping[str, int]) -> str:
    """Keep each cell's retry time (the box's clock; the newest wins). "" or, when the
    record cannot be written, why: the retry stands, and a copy pulled before it may
    then still be offered to a resume move."""
    if not times:
        return ""
    folder = fleet_host_dir(fleet, host)
    record = _read(folder) | {name: float(at) for name, at in times.items()}
    try:
        atomic_write_json(record_path(folder), record)
    except OSError as exc:
        return f"could not record the retry in {record_path(folder)} ({exc.strerror})"
    return ""


def set_aside_since(host_dir: Path, cell: str, taken_at: float) -> str:
    """Why ``cell``'s files in a manifest taken at ``taken_at`` (box clock) are not its
    current attempt's ("" when they may be): a retry set them aside after that pull."""
    at = _read(host_dir).get(cell)
    if at is None or taken_at >= at:
        return ""
    return (
        f"pulled before the retry at {local_time(at)} set that attempt aside: never pushed "
        "(the retry starts over)"
    )
