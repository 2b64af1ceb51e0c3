"""Where the queue runner writes its logs on a box (the on-box layout, nothing read)."""

from __future__ import annotations

QUEUE_DIR = "~/.rgt/queue"  # the on-box layout of the queue runner


def queue_log_path() -> str:
    """The runner's log: every cell's output plus runner lines, ending with QUEUE DONE."""
    return f"{QUEUE_DIR}/queue.log"


def is_cell_name(cell: str) -> bool:
    """Whether ``cell`` can name a log in the cells directory: a box's records can hold
    any name (``a/b``, ``..``), and only these have a log of their own to follow."""
    return bool(cell) and "/" not in cell and cell not in (".", "..") and "\0" not in cell


def cell_log_path(cell: str) -> str:
    """One cell's own log; ValueError for a name that would leave the cells directory."""
    if not is_cell_name(cell):
        raise ValueError(f"not a cell name: {cell!r}")
    return f"{QUEUE_DIR}/cells/{cell}.log"
