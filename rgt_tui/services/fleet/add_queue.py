"""Whether an existing file named as a new host's queue reads as one (``rgt-tui add`` and
the add screen; issue 43's launch keys).

A file named by a slip of the completion — a training script, a config, a checkpoint,
``requirements.txt``, an SSH key — was written into the fleet file and refused only at the
first launch; a key's lines were then echoed by ``queue check``. Refused here, with its
first problem's line: a file that does not parse as a queue (a launch refuses it), one
whose configs are none of the code tree's (no cell of it could start: "torch numpy" parses
as a cell), another host's queue file (every cell would run on both); a key's lines are never shown (``read_queue_file``). A queue with one config still to write is taken: launch and
``queue check`` name what is missing.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from rgt_tui.domain.config import Fleet
from rgt_tui.domain.queue_file import QueueCell
from rgt_tui.services.fleet.append import AddRefused
from rgt_tui.services.queue.check import display_path, read_queue_file

# A queue file is a few lines of text; anything longer is another file named by mistake.
MAX_QUEUE_BYTES = 1 << 20
FORMAT = "one cell per line: <config> <task> [epochs]"


def fleet_queues(fleet: Fleet | None) -> dict[Path, str]:
    """Each queue file the fleet's hosts name (resolved) → the host naming it."""
    if fleet is None:
        return {}
    return {h.queue.resolve(): h.name for h in fleet.hosts if h.queue is not None}


def refuse_unfit_queue(
    value: str, where: Path, *, code: Path | None, others: Mapping[Path, str]
) -> None:
    """AddRefused (``field`` queue) when the existing file ``where`` (``value`` as typed)
    does not read as this host's queue (see the module docstring); a missing or
    unreadable file is let through (``create_queue_file`` offers one; launch says why)."""
    try:
        size = where.stat().st_size if where.is_file() else None
    except OSError:
        return
    if size is None:
        return
    shown = shlex.quote(display_path(where))
    fix = f"fix it (rgt-tui queue check {shown} names every line) or name your queue file ({FORMAT}); `none`: no queue yet"
    owner = others.get(where.resolve())
    if owner is not None:
        raise AddRefused(
            f"queue: {value} is {owner}'s queue file already: every cell of it would run on both",
            f"give this host its own queue file ({FORMAT})",
            field="queue",
        )
    if size > MAX_QUEUE_BYTES:
        raise AddRefused(
            f"queue: {value} is {size:,} bytes, not a queue file (a few lines of text)",
            fix,
            field="queue",
        )
    parsed = read_queue_file(where, host=None, default_epochs=1).parsed
    if parsed.problems:
        first = parsed.problems[0]
        more = len(parsed.problems) - 1
        raise AddRefused(
            f"queue: {value} does not read as a queue file: line {first.line or 1}: "
            f"{first.message}" + (f" (and {more} more)" if more else ""),
            fix,
            field="queue",
        )
    absent = _no_config_there(parsed.cells, code)
    if absent is not None:
        raise AddRefused(
            f"queue: {value} names no config of the code tree {code}: {absent.cfg} (line "
            f"{absent.line}) is not there, nor any other it names",
            fix,
            field="queue",
        )


def _no_config_there(cells: tuple[QueueCell, ...], code: Path | None) -> QueueCell | None:
    """The first of ``cells`` when none of their relative configs is a file of ``code``
    (None when one is, when a config is absolute, or when there is no code tree)."""
    if code is None or not cells:
        return None
    for cell in cells:
        if PurePosixPath(cell.cfg).is_absolute() or (code / cell.cfg).is_file():
            return None
    return cells[0]
