"""Which host's verified copy a resume move pushed, kept beside the target's results.

``<results>/<target>/.rgt/resumed.json``: per cell, the host whose pulled and verified
copy the move pushed and the checkpoint the run there starts from. A later move of the
cell, when nothing of its run on the target is verified yet (a second preemption, a cell
moved on before it ran), resumes from that copy instead of from scratch
(``resume.earlier_hop``). Only a resume move that pushed a checkpoint writes it: a plain
move, or one from scratch, leaves no base to go back to (the user declined it).
"""

from __future__ import annotations

import time

from rgt_tui.domain.checkpoints import CellFile
from rgt_tui.domain.config import Fleet
from rgt_tui.services.records import atomic_write_json, fleet_host_dir, read_json, records_dir

RECORD_FILE = "resumed.json"


def record_resumed(fleet: Fleet, target: str, cell: str, origin: str, ck: CellFile) -> str:
    """Keep that ``cell`` on ``target`` started from ``ck`` of ``origin``'s copy; "" or,
    when it cannot be written, why (blocking)."""
    path = records_dir(fleet_host_dir(fleet, target)) / RECORD_FILE
    try:
        data = read_json(path)
    except (OSError, ValueError):
        data = None
    record = data if isinstance(data, dict) else {}
    record[cell] = {"from": origin, "checkpoint": ck.rel, "sha256": ck.sha256, "at": time.time()}
    try:
        atomic_write_json(path, record)
    except OSError as exc:
        return f"could not record the resume in {path} ({exc.strerror})"
    return ""


def resumed_from(fleet: Fleet, target: str, cell: str) -> str | None:
    """The host whose copy a resume move pushed when it brought ``cell`` to ``target``;
    None when none did, or the record cannot be read (blocking)."""
    try:
        data = read_json(records_dir(fleet_host_dir(fleet, target)) / RECORD_FILE)
    except (OSError, ValueError):
        return None
    entry = data.get(cell) if isinstance(data, dict) else None
    origin = entry.get("from") if isinstance(entry, dict) else None
    return origin if isinstance(origin, str) and origin else None
