"""Unfinished work, as the teardown gate's facts: which cells of a queue are not done.

A cell counts for the roster by its verified files only when nothing says its run is
unfinished. ``queue_cells_seen`` reads the queue view (the box's records, laid over with
the scheduler's states on a Slurm host) into the gate's ``QueueCellsSeen`` fact: every
cell failed, killed, interrupted, ended by the scheduler (CANCELLED, TIMEOUT, PREEMPTED,
OUT_OF_MEMORY, NODE_FAIL), waiting to be retried, or still pending while its queue runs
(a running cell is the gate's ``CellsRunning``). A cell that never ran under rgt-tui
(pending, no attempt, its queue not running) is no fact here: results made outside
rgt-tui count by their verified files, as the roster has them. A state file with bytes
but no record (a crash's NULs, a line a full disk cut) is no "never ran": the queue view
reads it as interrupted, so it is unfinished here. A cell the host's queue
file records as moved (``#moved-to``) is the other host's work, whatever this box says.

``newest_checkpoint`` names what is safe: the cell's newest checkpoint file that is in
the pull's manifest, pulled with its SHA-256 and loaded by verify. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

from rgt_tui.domain.artifacts import kind_of
from rgt_tui.domain.checkpoints import recency
from rgt_tui.domain.gate_events import FileFacts, QueueCellsSeen
from rgt_tui.domain.queue_state import (
    FAILED,
    INTERRUPTED,
    KILLED,
    PENDING,
    RETRY,
    SLURM_ENDED,
    CellView,
    QueueView,
)
from rgt_tui.domain.roster import in_outputs
from rgt_tui.domain.text import printable

# Statuses whose run started and did not finish (a retry waits to run again).
UNFINISHED = (FAILED, KILLED, INTERRUPTED, RETRY, *SLURM_ENDED)
CHECKPOINT_KINDS = ("torch", "safetensors")
NOTE_CHARS = 120  # a failed cell's last line, in its checklist line


def _what(cell: CellView, now: int) -> str:
    """``interrupted after ≥41m``, ``failed (exit 3) after 2m05s: <its last line>``,
    ``pending (waiting: Priority)``: what the records know of the cell's run."""
    text = cell.label
    ran = cell.ran(now)
    if ran:
        text += f" after {ran}"
    if cell.status == PENDING:
        # Pending again after a run (a Slurm requeue): its next attempt has not started;
        # "not started yet" beside "interrupted" read as a contradiction (h501 #6).
        again = "ran before; its next attempt has not started" if cell.attempts else ""
        text += f" ({again or 'not started yet'}" + (f": {cell.note}" if cell.note else "") + ")"
    elif cell.status == FAILED and cell.note:
        text += f": {printable(cell.note, NOTE_CHARS)}"
    elif cell.status == INTERRUPTED and not cell.attempts and cell.note:
        text += f": {printable(cell.note, NOTE_CHARS)}"  # its state record is unreadable
    return printable(text, 300)


def is_unfinished(cell: CellView, view: QueueView) -> bool:
    """Whether the records know ``cell``'s work as unfinished (its run started and did
    not end done, or it waits in a queue that runs, or on the scheduler)."""
    if cell.status in UNFINISHED:
        return True
    if cell.status == PENDING:
        return cell.attempts > 0 or view.runner_alive or cell.slurm is not None
    return False


def queue_cells_seen(
    view: QueueView,
    moved: Mapping[str, str],
    outputs: Callable[[str], Sequence[str]],
) -> QueueCellsSeen:
    """The gate's fact about ``view``: its unfinished cells (those of ``moved``, name →
    host, left out: they are that host's now), the moved ones, and where each unfinished
    cell's outputs land in the pulled copy (``outputs(name)``: local folders)."""
    cells = [c for c in view.cells if is_unfinished(c, view) and c.name not in moved]
    return QueueCellsSeen(
        unfinished=tuple((c.name, c.status, _what(c, view.now)) for c in cells),
        moved=tuple(sorted(moved.items())),
        outputs=tuple((c.name, pre) for c in cells for pre in outputs(c.name)),
        runs=tuple((c.name, run_key(c)) for c in cells),
    )


def run_key(cell: CellView) -> str:
    """Which run of ``cell`` this is: its attempts, its last start, and on a scheduler
    its task (``3/1700000050/41_2``). A retry changes it (one more attempt, a later start,
    or a new task before it starts), so an acknowledgement of the run before never
    settles the retry's."""
    task = cell.slurm.job_id if cell.slurm is not None else ""
    return f"{cell.attempts}/{cell.started_at or ''}/{task}"


def newest_checkpoint(
    name: str,
    prefixes: Sequence[str],
    files: Mapping[str, FileFacts],
    pulled: Collection[str],
    loaded: Collection[str],
    failed: Collection[str],
) -> tuple[str, float] | None:
    """(local path, mtime) of cell ``name``'s newest checkpoint (torch or safetensors)
    that the manifest lists, was pulled with its hash and loaded; None when there is none."""
    found = [
        (recency(facts.mtime, path), path, facts.mtime)
        for path, facts in files.items()
        if in_outputs(path, name, prefixes)
        and kind_of(path) in CHECKPOINT_KINDS
        and path in pulled
        and path in loaded
        and path not in failed
    ]
    if not found:
        return None
    _, path, mtime = max(found)
    return path, mtime
