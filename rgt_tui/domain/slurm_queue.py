"""A Slurm host's queue view: the cells' own records, read through the scheduler (pure).

On a Slurm host the runner is not a process on the login node: each cell is an array
task on some compute node. The records (``cells/NAME.state``) still say what the cell's
command did, but whether it waits, runs, or was ended by Slurm (out of memory, past its
walltime, preempted, its node lost) is the scheduler's to say — and a compute node's
boot id or pid means nothing on the login node. ``slurm_view`` takes the view the
records give and lays each cell's task state (``SlurmCell``) over it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from rgt_tui.domain.queue_records import RunnerLaunch
from rgt_tui.domain.queue_state import (
    CANCELLED,
    DONE,
    FAILED,
    FINISHED,
    INTERRUPTED,
    KILLED,
    NODE_FAIL,
    OUT_OF_MEMORY,
    PENDING,
    PREEMPTED,
    Q_RUNNING,
    RETRY,
    RUNNING,
    SKIPPED,
    TIMEOUT,
    USER_STOPPED,
    CellView,
    QueueView,
)
from rgt_tui.domain.slurm_jobs import PENDING_STATES, ClusterSide, SlurmCell
from rgt_tui.domain.units import fmt_duration

# Slurm's terminal states shown under their own name; other failures read FAILED.
_NAMED = {
    "OUT_OF_MEMORY": OUT_OF_MEMORY,
    "TIMEOUT": TIMEOUT,
    "DEADLINE": TIMEOUT,
    "PREEMPTED": PREEMPTED,
    "NODE_FAIL": NODE_FAIL,
    "BOOT_FAIL": NODE_FAIL,
    "CANCELLED": CANCELLED,
}
# The whole queue's state when squeue did not answer: the records alone cannot say it.
CLUSTER_UNKNOWN = "unknown: squeue did not answer"
# Where a relaunch (a resubmission of these indices) picks up.
RESUMABLE = (INTERRUPTED, TIMEOUT, PREEMPTED, NODE_FAIL)


def running_note(job: SlurmCell) -> str:
    """``on node1 · 1m02s elapsed · 58m left``."""
    parts = [f"on {job.node}" if job.node else "on a node Slurm did not name"]
    if job.elapsed_s is not None:
        parts.append(f"{fmt_duration(job.elapsed_s)} elapsed")
    if job.time_left_s is not None:
        parts.append(f"{fmt_duration(job.time_left_s)} left")
    if job.state != "RUNNING":
        parts.append(job.state)
    return " · ".join(parts)


def ended_note(job: SlurmCell, *, ran: bool = True) -> str:
    """What Slurm says about an ended task, and where it was read; ``ran`` False: the
    task never got a node (cancelled while pending), so it has no exit code."""
    where = {"squeue": "squeue", "sacct": "sacct", "jobcomp": "the job-completion log"}.get(
        job.source, job.source
    )
    code = f" signal {job.signal}" if job.signal else f" exit {job.exit_code}"
    text = f"Slurm: {job.state}{code if job.exit_code is not None or job.signal else ''}"
    if not ran:
        text = f"Slurm: {job.state} before it started"
    text += f" on {job.node}" if job.node else ""
    if job.oom and job.oom_line:
        text += f" — {job.oom_line}"
    return f"{text} ({where}, task {job.job_id})"


def _cell(cell: CellView, job: SlurmCell | None, now: int, squeue_ok: bool) -> CellView:
    """One cell: its records' view, corrected by its task's state."""
    cell = replace(cell, slurm=job)
    if cell.status == SKIPPED:  # moved off this host: whatever Slurm did, it runs elsewhere
        return cell
    unfinished = cell.status in (RUNNING, INTERRUPTED)  # a start without an end record
    if job is None:
        if not squeue_ok and cell.status != DONE:  # pending, or ended by Slurm: unknown
            return replace(cell, note="squeue failed: its state on the cluster is unknown")
        if not unfinished:
            return cell
        return replace(
            cell,
            status=INTERRUPTED,
            note="no end record, and Slurm no longer lists its task (not in squeue, and no "
            "accounting or completion record of it)",
        )
    if job.state in PENDING_STATES:
        why = f"held ({job.reason})" if job.held else (job.reason or "no reason given")
        note = f"Slurm: {job.state} · {why}" if job.state != "PENDING" else f"waiting: {why}"
        if cell.status == RETRY:
            # A retry with no note of its own is the scheduler's note alone (h501 #12: it
            # read "— ; waiting: Resources").
            return replace(cell, note=f"{cell.note}; {note}" if cell.note else note)
        return replace(cell, status=PENDING, note=note, exit_code=None)
    if job.live:
        started = cell.started_at if unfinished else None
        if started is None and job.elapsed_s is not None:
            started = now - job.elapsed_s
        return replace(
            cell, status=RUNNING, note=running_note(job), started_at=started, ended_at=None,
            exit_code=None,
        )  # fmt: skip
    if job.state == "COMPLETED":
        if cell.status in (FAILED, KILLED):  # the records hold the command's own exit
            return cell
        return replace(cell, status=DONE, exit_code=0 if cell.exit_code is None else cell.exit_code)
    exit_code = cell.exit_code if cell.exit_code is not None else job.exit_code
    if exit_code is None and job.signal:
        exit_code = 128 + job.signal
    # No start record for this attempt (pending, or a retry still queued) and no node:
    # Slurm ended the task before it ran (a pending task or array scancelled).
    ran = bool(job.node) or cell.status not in (PENDING, RETRY)
    if not ran:
        exit_code = None
    note = ended_note(job, ran=ran)
    if cell.ended_at is None and cell.started_at and job.elapsed_s is not None:
        # Killed before its end record (SIGKILL): Slurm knows how long the task ran.
        cell = replace(cell, ended_at=cell.started_at + job.elapsed_s)
    if job.oom:
        return replace(cell, status=OUT_OF_MEMORY, exit_code=exit_code, note=note)
    status = _NAMED.get(job.state, FAILED)
    if status == CANCELLED and cell.status == KILLED:  # rgt-tui queue kill: scancel of it
        return cell
    if status == FAILED and cell.status == FAILED and cell.note:
        note = f"{cell.note} — {note}"  # the command's last line says more than Slurm's
    return replace(cell, status=status, exit_code=exit_code, note=note)


def slurm_view(
    view: QueueView,
    jobs: Mapping[str, SlurmCell],
    cluster: ClusterSide,
    *,
    squeue_ok: bool = True,
) -> QueueView:
    """The records' view (``derive_view``) with each cell's array task laid over it.

    The queue runs while any of its tasks is pending or running (Slurm holds it); a
    stop asked for with nothing left running reads as stopped by the user, and a stop
    whose holds were released (or that later cells went past) is no longer shown; otherwise
    the arrays have ended: finished. Where to resume: the first cell that Slurm ended
    before its command did (TIMEOUT, PREEMPTED, NODE_FAIL) or that vanished.
    """
    cells = tuple(_cell(c, jobs.get(c.name), view.now, squeue_ok) for c in view.cells)
    live = [c for c in cells if c.slurm is not None and c.slurm.live]
    launch = view.launch
    if launch is not None and squeue_ok and _stop_lifted(launch, cells, live):
        launch = replace(launch, stop_requested_at=None, stop_by="")
    if not squeue_ok:
        # Nothing the cluster says is known: not stopped, not where to resume (the
        # records alone read a TIMEOUT or an OOM as interrupted, a cancelled task as
        # pending, and a resume from there would run done cells again).
        return replace(
            view, cells=cells, state=CLUSTER_UNKNOWN, runner_alive=False,
            session_present=False, resume_index=None, cluster=cluster,
        )  # fmt: skip
    if launch is None:
        state, alive = view.state, False
    elif any(c.status == RUNNING or not c.slurm.held for c in live if c.slurm):
        state, alive = Q_RUNNING, True
    elif live or launch.stop_requested_at is not None:
        state, alive = USER_STOPPED, bool(live)  # held tasks wait for the user
    else:
        state, alive = FINISHED, False
    resume = None
    # Not while a task is still in squeue (held by a stop): the launch that line offers
    # is refused until the holds are released or cancelled (h572 #4), which the stop's
    # own words say.
    if state != Q_RUNNING and not live:
        stuck = [c.index for c in cells if c.status in RESUMABLE]
        resume = min(stuck) if stuck else view.resume_index
    return replace(
        view, cells=cells, state=state, runner_alive=alive, session_present=False,
        resume_index=resume, cluster=cluster, launch=launch,
    )  # fmt: skip


def _stop_lifted(launch: RunnerLaunch, cells: tuple[CellView, ...], live: list[CellView]) -> bool:
    """A stop on Slurm holds the pending tasks; it no longer applies once none of them is
    held and a task waits unheld, or a cell started after it (``scontrol release``, a
    retry or an append went on). A start in the stop's own second counts only for a task
    the stop's record names as held: whole seconds cannot tell it from the cell that ran
    as the stop came."""
    stop_at = launch.stop_requested_at
    if stop_at is None or any(c.slurm is not None and c.slurm.held for c in live):
        return False

    def started_after(c: CellView) -> bool:
        if c.started_at is None or c.started_at < stop_at:
            return False
        held = c.slurm is not None and c.slurm.job_id in launch.stop_held
        return c.started_at > stop_at or held

    waiting = any(c.slurm is not None and c.slurm.state in PENDING_STATES for c in live)
    return waiting or any(started_after(c) for c in cells)
