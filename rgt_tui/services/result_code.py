"""Which code made a host's pulled results (U42): each queue cell's code, kept beside them.

A pull reads the box's queue records (the same probe as the Queue tab: each cell's last
attempt and the ``code`` record ``run_one.sh`` wrote after its start) and keeps what each
cell ran in ``<results_dir>/<host>/.rgt/code.json``, next to the manifest, so the pull's
summary and every later ``verify`` name the code that made each cell's results, even
once the box is gone.

Record (version 1)::

    {"version": 1, "read_at": <unix s, this machine>, "problem": str | null,
     "cells": [{"name": str, "status": str,
                "code": {"tree": <64 hex>, "commit": <hex> | "", "dirty": bool} | null}]}

``problem``: the box's records could not be read, so no cell's code is known; a cell's
``code`` null: its last attempt recorded none (launched before rgt-tui recorded code, or
no ``code`` configured for the host). The file is rgt-tui's own record, read back as
untrusted (it may be edited or corrupt): anything that does not parse counts as unknown.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rgt_tui.domain.code_identity import CodeIdentity
from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.queue_state import CODE_UNKNOWN, code_text
from rgt_tui.domain.text import printable
from rgt_tui.services.box_ctl import QueueError
from rgt_tui.services.records import atomic_write_json, read_json, records_dir
from rgt_tui.transport import Transport

CODE_FILE = "code.json"
CODE_VERSION = 1
NAMES_SHOWN = 8  # cells named on one line before "+N more"

NO_RECORD = (
    # Not only an old pull's: a first pull cut short (Ctrl+C) has none either (h563 #5).
    "code: no record of the code that made these results (no pull of them finished yet, "
    "or the last one predates rgt-tui recording it) — pull again to record it"
)


@dataclass(frozen=True)
class CellCode:
    """One queue cell's last attempt as the box recorded it at the pull."""

    name: str
    status: str  # the cell's state then: done, failed, running, interrupted
    code: CodeIdentity | None  # None: the attempt recorded no code


@dataclass(frozen=True)
class ResultCode:
    """The code of every cell that ran on the box, read at the pull."""

    read_at: float
    cells: tuple[CellCode, ...] = ()
    problem: str = ""  # why the box's records could not be read ("" when they were)

    def of(self, name: str) -> CellCode | None:
        """The cell called ``name``, None when it never ran on the box."""
        return next((c for c in self.cells if c.name == name), None)

    def to_json(self) -> dict[str, Any]:
        """The record (module docstring)."""
        return {
            "version": CODE_VERSION,
            "read_at": self.read_at,
            "problem": self.problem or None,
            "cells": [
                {"name": c.name, "status": c.status, "code": _code_json(c.code)} for c in self.cells
            ],
        }


def _code_json(code: CodeIdentity | None) -> dict[str, Any] | None:
    return None if code is None else {"tree": code.tree, "commit": code.commit, "dirty": code.dirty}


def code_path(host_dir: Path) -> Path:
    """``<host folder>/.rgt/code.json``."""
    return records_dir(host_dir) / CODE_FILE


async def read_result_code(host: HostConfig, transport: Transport) -> ResultCode:
    """Each cell's last attempt and its code, from the box's queue records; a box whose
    records cannot be read gives a ResultCode whose ``problem`` says why (never raises
    for the box: the results are pulled either way)."""
    now = time.time()
    try:
        # Imported here: the queue's backends (Slurm, groups) are a third of what a
        # one-shot `rgt-tui pull` imports, and only this read, beside the copy, needs them.
        from rgt_tui.services.queue.view import read_queue_view

        view = await read_queue_view(host, transport)
    except (TransportError, QueueError) as exc:
        why = printable(exc.message, None)  # may quote the box
        return ResultCode(now, problem=f"could not read {host.name}'s queue records: {why}")
    cells = tuple(CellCode(c.name, c.status, c.code) for c in view.cells if c.attempts)
    return ResultCode(now, cells)


def save_result_code(host_dir: Path, record: ResultCode) -> Path:
    """Keep the record beside the host's results (atomically); returns its path."""
    path = code_path(host_dir)
    atomic_write_json(path, record.to_json())
    return path


def load_result_code(host_dir: Path) -> ResultCode | None:
    """The kept record; None when there is none, or when it does not parse (unknown)."""
    try:
        data = read_json(code_path(host_dir))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("version") != CODE_VERSION:
        return None
    cells = []
    for item in data.get("cells") if isinstance(data.get("cells"), list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        # Read back as untrusted, and a record an older rgt-tui wrote may hold a box's name
        # as the box wrote it: printable (identity on every name a queue file can hold).
        name, status = printable(item["name"], None), printable(item.get("status", ""), 40)
        cells.append(CellCode(name, status, _code_of(item)))
    read_at = data.get("read_at")
    problem = data.get("problem")
    return ResultCode(
        float(read_at) if isinstance(read_at, (int, float)) else 0.0,
        tuple(cells),
        printable(problem, None) if isinstance(problem, str) else "",
    )


def _code_of(item: dict[str, Any]) -> CodeIdentity | None:
    code = item.get("code")
    if not isinstance(code, dict):
        return None
    commit, dirty = code.get("commit") or "-", code.get("dirty")
    if not isinstance(commit, str) or not isinstance(dirty, bool):
        return None
    # Through the record's own parser: the same checks as a record from the box.
    return CodeIdentity.parse(f"tree={code.get('tree')} commit={commit} dirty={int(dirty)}")


def running_line(record: ResultCode | None) -> str:
    """``cell hotel runs on the box: its files may still change …`` for a pull taken while
    cells ran there ("" when none did): the pull's ✓ read as safe while a checkpoint was
    half-written in place, and verify then called it corrupt (hour s19a #9)."""
    names = running_names(record)
    if not names:
        return ""
    return (
        f"cell {names} ran on the box at the pull: its files may still change (a checkpoint "
        "written in place may be half-written here); pull again once it ends"
    )


def running_names(record: ResultCode | None) -> str:
    """``hotel, india``: the cells that ran on the box at the pull (five at most), else ""."""
    running = [c.name for c in record.cells if c.status == "running"] if record else []
    return ", ".join(running[:5]) + (" …" if len(running) > 5 else "")


def result_code_lines(record: ResultCode | None, names: Sequence[str] | None = None) -> list[str]:
    """What to show beside the results: one line per distinct code, naming its cells
    (``cells a, b: code tree 1a2b3c4d5e6f, git 89abcde``), and the cells whose code is
    unknown, with why. ``names``: the cells to account for (verify's roster); None: every
    cell that ran. Nothing when no queue ever ran on the box and no cell is expected."""
    if record is None:
        return [NO_RECORD] if names is None or names else []
    if record.problem:
        return [f"code: not known — {record.problem}"]
    wanted = list(dict.fromkeys(names)) if names is not None else [c.name for c in record.cells]
    groups: dict[str, list[str]] = {}
    for name in wanted:
        cell = record.of(name)
        if cell is None:
            # Not "it never ran": a pull cut short leaves the records of the one before,
            # which may predate the cell (h472 #5).
            key = f"code unknown (not in the box's queue records as read at {_at(record)})"
        else:
            key = code_text(cell.code) if cell.code is not None else CODE_UNKNOWN
        groups.setdefault(key, []).append(name)
    return [f"{_cells(members)}: {key}" for key, members in groups.items()]


def _at(record: ResultCode) -> str:
    """When the box's records were read (local time), "an earlier pull" when unknown."""
    if record.read_at <= 0:
        return "an earlier pull"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(record.read_at))


def _cells(names: list[str]) -> str:
    shown = ", ".join(names[:NAMES_SHOWN])
    more = f" +{len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else ""
    return f"cell{'s' if len(names) > 1 else ''} {shown}{more}"
