"""A host's queue as its box records it: the probe's facts and the view derived from them.

Both hand the records to the pure domain (``domain.queue_state.derive_view``): what the
UI shows is what the box wrote, never what the app remembers. A scheduler's own view
(Slurm's array tasks) is laid over this one by its backend. One record is the user's own
file's: a cell moved while its box did not answer (``#moved-to``) has no skip record on
the box until its next launch, and the views people read (``moved``) show it moved.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.group_run import ENV_PREFIX
from rgt_tui.domain.queue_records import CellMarks, tmux_session_name
from rgt_tui.domain.queue_state import DONE, RUNNING, QueueView, derive_view
from rgt_tui.domain.text import printable, shell_word
from rgt_tui.services.queue.box import BoxQueueFacts, probe
from rgt_tui.transport import Transport

__all__ = ["read_queue_facts", "view_from_facts"]


def view_from_facts(
    host: HostConfig, facts: BoxQueueFacts, moved: Mapping[str, str] | None = None
) -> QueueView:
    """The queue view derived from probed facts (pure).

    ``moved``: cell → host of the local queue file's ``#moved-to`` lines
    (``moved_skips.moved_cells``). A moved cell its box did not record the skip of reads
    ``moved to HOST`` here, as it will once its next launch records it — unless the box
    ran it on (running, or done): that is shown as the box says. Without ``moved`` (a
    launch's own reading, which must see the missing skip to record it) the box's
    records alone."""
    view = _derived(host, facts, facts.marks)
    gone = {
        c.name: moved[c.name]
        for c in view.cells
        if moved and c.name in moved and c.status not in (RUNNING, DONE) and c.label != "moved"
    }
    if gone:
        marks = {printable(name, None): m for name, m in facts.marks.items()}
        for name, dest in gone.items():
            why = f"moved to {dest} (the queue file's #moved-to; the box records it at its next launch)"
            marks[name] = replace(marks.get(name, CellMarks()), skipped=why)
        view = _derived(host, facts, marks)
    return _runs_twice(_moved_on(view, moved or {}), host.name, moved or {})


def _moved_on(view: QueueView, moved: Mapping[str, str]) -> QueueView:
    """A cell this box skips as moved to one host, which the queue file now says moved to
    another (it moved on from there before that box held it: ``move_origin``): its note
    names where it is now, then what this box recorded (hour s25a #2)."""
    cells = tuple(
        replace(c, note=f"moved to {moved[c.name]} (on from: {c.note})")
        if c.name in moved and c.label == "moved" and f"moved to {moved[c.name]}" not in c.note
        else c
        for c in view.cells
    )
    return view if cells == view.cells else replace(view, cells=cells)


def _runs_twice(view: QueueView, host: str, moved: Mapping[str, str]) -> QueueView:
    """A cell the queue file moved away that still runs on this box (moved while the box
    did not answer, which then came back): said on the cell, or it runs here and there,
    unsaid by every view (hour s18a #4). Once it finished here, the other host still holds
    it and runs it again unless told (hour s24c #2): said too, with the two ways on."""
    cells = tuple(
        replace(
            c,
            note=_twice_note(host, c.name, moved[c.name], c.status)
            + (f" · {c.note}" if c.note else ""),
            moved_to=moved[c.name],
        )
        if c.name in moved and c.status in (RUNNING, DONE)
        else c
        for c in view.cells
    )
    return view if cells == view.cells else replace(view, cells=cells)


def _twice_note(host: str, cell: str, dest: str, status: str) -> str:
    # Taking the line off the destination's file helps only while its box was not sent
    # it: a resume move appends it there at once (s35 resume hour #6: a dead end).
    off = (
        f"take it off {dest}'s queue file if {dest}'s box was not sent it yet (rgt-tui queue "
        f"show {dest} lists it as not sent), else kill it on {dest} when it starts there "
        f"(rgt-tui queue kill {dest} {shell_word(cell)})"
    )
    if status == RUNNING:
        return (
            f"RUNS TWICE: moved to {dest} by the queue file, yet it runs here — keep one run: "
            f"kill it here (rgt-tui queue kill {host} {shell_word(cell)}), or, to keep this one, {off}"
        )
    return (
        f"DONE HERE, YET QUEUED ON {dest.upper()}: moved to {dest} by the queue file, it "
        f"finished here — pull {host}; {dest} runs it again unless you {off}"
    )


def _derived(host: HostConfig, facts: BoxQueueFacts, marks: Mapping[str, CellMarks]) -> QueueView:
    view = derive_view(
        host.name,
        facts.deployed,
        facts.launches,
        facts.attempts,
        boot_id=facts.boot_id,
        now=facts.now,
        runner_alive=facts.runner_alive,
        alive_cells=facts.alive_cells,
        session_present=facts.session_present,
        reasons=facts.why,
        log_mtimes=facts.log_mtimes,
        last_lines=facts.last_lines,
        marks=marks,
    )
    # A rank's cells run the group's template, which sources the group's env file first.
    ranked = any(c.command.startswith(ENV_PREFIX) for c in facts.deployed)
    return replace(view, group_job=ranked, sync_kept=facts.sync_kept, owner=facts.owner)


async def read_queue_facts(
    host: HostConfig, transport: Transport, *, diag: bool = False
) -> BoxQueueFacts:
    """Connect if needed and probe the box's queue records (TransportError when unreachable)."""
    await transport.connect()
    return await probe(
        transport,
        host.name,
        session=tmux_session_name(host.name),
        workdir=host.workdir,
        durable_dir=host.durable_dir,
        diag=diag,
    )


def other_queue_problem(host: HostConfig, view: QueueView) -> str | None:
    """Why the box's sent lines are not this queue's when its records are another kind
    of queue's (a user's hour, after a group's --fresh launch archived a box's own
    queue): a group's job on a box launched alone, or a box's own queue under a rank of
    a group. "Earlier lines changed since they were sent" named the wrong file and fix.
    None when the box's records are this kind's (a plain edit of sent lines)."""
    rank = host.run is not None and host.run.startswith(ENV_PREFIX)
    if rank == view.group_job or not view.cells:
        return None
    names = ", ".join(c.name for c in view.cells[:3]) + (", …" if len(view.cells) > 3 else "")
    aside = f"rgt-tui launch {host.name} --fresh moves them aside (kept, in ~/.rgt/queue.archived.<time>)"
    if rank:
        return (
            f"the box holds its own queue's records (cells {names}), not {host.name}'s: "
            f"{aside} and starts {host.name}'s"
        )
    return (
        f"{host.name}'s box holds a group's job (cells {names}: it ran as a rank of a group), "
        f"not its own queue's: {aside} and starts {host.name}'s own queue (Start over in "
        "the Launch dialog does the same)"
    )
