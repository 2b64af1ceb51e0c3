"""Which folders the queue's cells write to now or will resume from: never offered for
deletion.

A running cell writes its checkpoints into its ``{out}`` (``<durable_dir>/<cell>``);
deleting that folder, or one that holds it, kills the run at its next save. A cell queued
to resume, or still to run, reloads what its ``{out}`` holds when it starts: deleted, it
starts over, the GPU hours to its checkpoint lost (h551 #2). Whether
everything in it is pulled and verified says nothing about that (an empty folder of a
cell in its first epoch passes trivially), so the box's queue decides: it is read the way
every other view reads it (``services.queue.view.read_queue_view``: the host's backend,
box records or Slurm) when the audit is taken, and again right before a delete.

When the queue cannot be read, whether a cell writes under ``durable_dir`` is not known:
no folder under it (or holding it) is offered until it can be read — never a guess.
"""

from __future__ import annotations

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.queue_state import PENDING, RETRY, RUNNING, CellView
from rgt_tui.domain.text import printable
from rgt_tui.services.queue.view import read_queue_view
from rgt_tui.transport.base import Transport

RUNS = "is running"


def in_use(cell: CellView, runner_alive: bool) -> str | None:
    """How ``cell`` uses its ``{out}`` now, in words after its name; None: it does not. A
    pending cell counts only while its queue runs on towards it: a stopped queue's, or
    one a relaunch passed over, is the user's to clean (review h554 #3)."""
    if cell.status == RUNNING:
        return RUNS
    if cell.status == RETRY and cell.resume_pending:
        return "is queued to resume from it"
    if cell.status == PENDING and runner_alive:
        return "is still to run in the running queue, and resumes from what it holds"
    return None


async def read_running(
    host: HostConfig, transport: Transport
) -> tuple[tuple[tuple[str, str], ...], str | None]:
    """(name, how) of each queue cell that writes to its ``{out}`` now or will resume
    from it (``in_use``), and why the queue could not be read (None: it was read)."""
    try:
        view = await read_queue_view(host, transport)
    except Exception as exc:  # whatever failed, not knowing refuses: it never allows
        return (), printable(str(exc) or type(exc).__name__, 300)
    return tuple(
        (c.name, how) for c in view.cells if (how := in_use(c, view.runner_alive)) is not None
    ), None


def running_outs(
    cells: tuple[tuple[str, str], ...],
    durable: tuple[str, ...],
    cell_dirs: tuple[tuple[str, str], ...],
) -> tuple[tuple[str, str, str], ...]:
    """(cell, how, path) for each such cell's ``{out}``: a running cell's under every form
    of the durable folder (resolved on the box, and as given: it may make it any moment),
    and each as the audit resolved the cell's folder (one still to run: only a folder
    there is, never one it has not made: review h554 #3)."""
    dirs = dict(cell_dirs)
    outs = []
    for name, how in cells:
        if how == RUNS:
            outs += [(name, how, (d.rstrip("/") or "") + "/" + name) for d in durable]
        if name in dirs:
            outs.append((name, how, dirs[name]))
    return tuple(dict.fromkeys(outs))


UNREAD_NOTE_START = "the queue could not be read"


def unread_note(unread: str) -> str:
    """The audit's note when the queue could not be read."""
    return (
        f"{UNREAD_NOTE_START} ({unread}): no folder under the durable folder is "
        "offered for deletion until it can be (a running cell may write there)"
    )
