"""Why a cell on a Slurm host ended early: its job state, with the evidence (pure).

On a Slurm host the four causes of U3 are the scheduler's to tell: OOM is a job STATE,
not a log line (SLURM4: ``OUT_OF_MEMORY``, or ``FAILED`` with slurmstepd's ``Exceeded
job memory limit`` where the cluster enforces memory by polling); a walltime kill is
``TIMEOUT``; the node going away is ``PREEMPTED`` or ``NODE_FAIL``; someone's
``scancel`` is ``CANCELLED``. A hang-up cannot end an ``sbatch`` job, and the login
node's boot id says nothing about the compute node's. ``diagnose_slurm`` names the
cause from the cell's task state and the next step: more ``mem``, more ``time``, or
relaunch from the cell's index.
"""

from __future__ import annotations

from dataclasses import dataclass

from rgt_tui.domain.queue_state import (
    CANCELLED,
    FAILED,
    INTERRUPTED,
    NODE_FAIL,
    OUT_OF_MEMORY,
    PREEMPTED,
    TIMEOUT,
    CellView,
    QueueView,
    queue_is,
)
from rgt_tui.domain.slurm_jobs import SlurmCell
from rgt_tui.domain.units import fmt_duration
from rgt_tui.domain.vanished import HANGUP, MANUAL_KILL, NO, OOM, UNKNOWN, YES, Diagnosis, Evidence

WALLTIME, PREEMPTION, NODE_FAILURE = "walltime", "preemption", "node failure"
_CAUSE = {
    OUT_OF_MEMORY: OOM, TIMEOUT: WALLTIME, PREEMPTED: PREEMPTION, NODE_FAIL: NODE_FAILURE,
    CANCELLED: MANUAL_KILL,
}  # fmt: skip
_ENDED_EARLY = (OUT_OF_MEMORY, TIMEOUT, PREEMPTED, NODE_FAIL, CANCELLED, INTERRUPTED)


@dataclass(frozen=True)
class SlurmLimits:
    """The host's requests as hosts.toml sets them (None: the cluster's default)."""

    mem: str | None = None
    time: str | None = None
    signal_lead_s: int = 300


def _state_text(job: SlurmCell | None) -> str:
    if job is None:
        return "Slurm no longer lists its task (not in squeue, no accounting record)"
    where = {"jobcomp": "the job-completion log"}.get(job.source, job.source)
    code = f", signal {job.signal}" if job.signal else ""
    code = code or (f", exit {job.exit_code}" if job.exit_code is not None else "")
    node = f" on {job.node}" if job.node else ""
    return f"task {job.job_id} ended {job.state}{code}{node} ({where})"


def _evidence(cell: CellView, limits: SlurmLimits) -> tuple[Evidence, ...]:
    job = cell.slurm
    state = _state_text(job)
    if job is not None and job.oom:
        line = f": {job.oom_line}" if job.oom_line else ""
        oom = Evidence(
            OOM, YES,
            f"{state}" + (f"; its Slurm output says{line}" if job.state != "OUT_OF_MEMORY" else "")
            + f" — over its memory request ({limits.mem or 'the partition default'})",
        )  # fmt: skip
    elif job is None:
        oom = Evidence(OOM, UNKNOWN, f"{state}: whether it went over its memory is not known")
    else:
        oom = Evidence(
            OOM, NO, f"{state}, not OUT_OF_MEMORY, and its Slurm output has no "
            "'Exceeded job memory limit' line",
        )  # fmt: skip
    verdict = {TIMEOUT: YES, PREEMPTED: YES, NODE_FAIL: YES, CANCELLED: YES}
    rows = [oom]
    for status, cause, what in (
        (TIMEOUT, WALLTIME, f"its walltime ({limits.time or 'the partition default'}) ran out"),
        (PREEMPTED, PREEMPTION, "a higher-priority job took its node"),
        (NODE_FAIL, NODE_FAILURE, "its node failed or went down"),
        (CANCELLED, MANUAL_KILL, "someone ran scancel on it (rgt-tui queue kill records its own)"),
    ):
        if cell.status == status:
            rows.append(Evidence(cause, verdict[status], f"{state}: {what}"))
        elif job is not None:
            rows.append(Evidence(cause, NO, f"Slurm's state is {job.state}, not {status}"))
        else:
            rows.append(Evidence(cause, UNKNOWN, state))
    rows.append(
        Evidence(HANGUP, NO, "submitted with sbatch: the job never depended on an SSH session")
    )
    return tuple(rows)


def _next_step(cell: CellView, cause: str | None, limits: SlurmLimits) -> str:
    resume = f"relaunch from cell {cell.index}"
    if cause == OOM:
        return (
            f"raise mem in hosts.toml (now {limits.mem or 'the partition default'}) to the "
            "cell's peak RSS × 1.2 (sacct -o MaxRSS,ReqMem where the cluster keeps accounting; "
            "SLURM4) — a host-RAM OOM: do not shrink the batch, that changes the experiment — "
            f"then retry the cell or {resume}"
        )
    if cause == WALLTIME:
        # What its record says when it has one, else what was asked for (s35 Slurm #6:
        # "~70s before the kill" of a cell whose record had the TERM 1m44s before it).
        if cell.signalled_at is not None and cell.ended_at is not None:
            got = f"{fmt_duration(max(0, cell.ended_at - cell.signalled_at))} before the kill"
        else:
            got = f"~{limits.signal_lead_s}s before the kill, as asked"
        return (
            f"raise time in hosts.toml (now {limits.time or 'the partition default'}), or let "
            f"the cell resume from its checkpoint (it got SIGTERM {got}, SLURM2) and {resume}"
        )
    if cause in (PREEMPTION, NODE_FAILURE):
        return (
            f"the cluster, not the cell, ended it: {resume} (each cell reloads its latest "
            "checkpoint from the durable dir; never node-local $TMPDIR, SLURM5)"
        )
    if cause == MANUAL_KILL:
        return f"find who cancelled it (scancel), then retry the cell or {resume}"
    return (
        f"read its Slurm output (~/.rgt/queue/cells/{cell.name}.slurm.out) and its log, "
        f"then {resume}"
    )


def diagnose_slurm(view: QueueView, limits: SlurmLimits | None = None) -> Diagnosis:
    """The latest cell that Slurm ended early (or that vanished), its cause from its job
    state with the evidence, and the next step; a cell that failed by itself is named
    as such; otherwise nothing vanished."""
    limits = limits or SlurmLimits()
    host = view.host
    early = [
        c for c in view.cells
        if c.status in _ENDED_EARLY or (c.status == FAILED and c.exit_code is None)
    ]  # fmt: skip
    if early:
        cell = max(early, key=lambda c: (c.ended_at or c.started_at or 0, c.index))
        cause = _CAUSE.get(cell.status)
        subject = f"cell {cell.index} ({cell.name})"
        if cause is None:
            summary = f"{subject} stopped without an end record: {_state_text(cell.slurm)}"
        else:
            summary = f"{subject} was ended by Slurm: {cell.status} ({cause})"
            if cell.slurm is not None and cell.slurm.state != cell.status:
                summary += f" — Slurm's state {cell.slurm.state}"
        return Diagnosis(
            host, subject, cause, summary, _evidence(cell, limits),
            _next_step(cell, cause, limits), cell.index,
        )  # fmt: skip
    failed = [c for c in view.cells if c.status == FAILED]
    if failed:
        cell = max(failed, key=lambda c: (c.ended_at or c.started_at or 0, c.index))
        return Diagnosis(
            host, f"cell {cell.index} ({cell.name})", None,
            f"cell {cell.index} ({cell.name}) exited {cell.exit_code} by itself — Slurm did not "
            f"end it ({_state_text(cell.slurm)})",
            _evidence(cell, limits),
            f"read its log (~/.rgt/queue/cells/{cell.name}.log), fix the cause, and rerun the "
            f"identical config from cell {cell.index}",
            cell.index, by_itself=True,
        )  # fmt: skip
    return Diagnosis(
        host,
        None,
        None,
        f"nothing vanished: {queue_is(view.state)}; {view.summary(with_state=False)}",
    )
