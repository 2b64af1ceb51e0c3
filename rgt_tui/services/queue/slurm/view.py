"""The scheduler's view of a Slurm host's queue: each cell's array task, in one round trip.

``rgt_tui/scripts/slurm_view.sh`` runs on the login node: it reads ``slurm.jobs`` and
``cells.tsv``, asks ``squeue`` for the arrays' tasks, and for tasks squeue no longer
lists ``sacct`` where the cluster has accounting (it answers "Slurm accounting storage
is disabled" otherwise) or else the job-completion log (``jobcomp/filetxt``, found
through ``scontrol show config``). It also reads the end of each cell's Slurm output
for slurmstepd's OOM line (SLURM4), the user's jobs by state and the partitions'
nodes (the pane's cluster side). The parsing is ``domain.slurm_jobs``: everything the
cluster prints is bounded and checked there.

A task Slurm requeued (a preemption with ``PreemptMode=REQUEUE``, a lost node,
``scontrol requeue``) runs its identical command again in the same output path (SLURM1):
its restart count and requeue time come with it, and ``with_requeues`` names it as a
preemption on the cell — "preempted at ~14:03: cell X interrupted; requeued" — in the
pane, the Queue tab, ``queue show`` and ``diagnose`` (``requeue_diagnosis``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.preemption import hhmm
from rgt_tui.domain.queue_records import parse_cells_tsv
from rgt_tui.domain.queue_state import SKIPPED, CellView, QueueView
from rgt_tui.domain.slurm_jobs import (
    ClusterSide,
    Requeue,
    SlurmCell,
    merge_tasks,
    parse_jobcomp_line,
    parse_jobs_file,
    parse_partition,
    parse_requeue_line,
    parse_sacct_line,
    parse_squeue_line,
)
from rgt_tui.domain.slurm_vanished import PREEMPTION
from rgt_tui.domain.text import is_digits, printable
from rgt_tui.domain.vanished import YES, Diagnosis, Evidence
from rgt_tui.services.box_script import box_command, script_text
from rgt_tui.transport import Transport

__all__ = [
    "SlurmCell", "SlurmFacts", "parse_slurm_view", "read_slurm", "requeue_diagnosis",
    "requeue_line", "slurm_cells", "with_requeues",
]  # fmt: skip

VIEW_TIMEOUT_S = 90.0  # squeue, sacct/scontrol and sinfo, each bounded to 20 s on the box


@dataclass(frozen=True)
class SlurmFacts:
    """What the login node said: each cell's task, the cluster side, and whether
    squeue answered (when it did not, no task state is known)."""

    cells: dict[str, SlurmCell] = field(default_factory=dict)
    cluster: ClusterSide = field(default_factory=ClusterSide)
    squeue_ok: bool = True


def _accounting(single: dict[str, str], acct: bool, jc: bool) -> str:
    """Where ended tasks' states were read, or why they could not be."""
    if acct:
        return "ended tasks from sacct"
    kind_loc = single.get("jc_loc", "").split(" ", 1)
    loc = printable(kind_loc[1] if len(kind_loc) > 1 else "", 120)
    if jc or (loc and "jc_err" not in single):
        return f"ended tasks from the job-completion log {loc}"
    if "jc_err" in single or "acct_off" in single:
        why = printable(single.get("jc_err", ""), 160)
        return "ended tasks from the cells' own records: no accounting (sacct disabled)" + (
            f"; {why}" if why else ""
        )
    return ""


def parse_slurm_view(text: str) -> SlurmFacts:
    """slurm_view.sh's ``key<TAB>value`` lines as facts (pure)."""
    single: dict[str, str] = {}
    cells, jobs, live, ended, mine, parts = [], [], [], [], [], []
    oom: dict[str, str] = {}
    requeues: list[Requeue] = []
    acct = jc = False
    for line in text.splitlines():
        key, _, rest = line.partition("\t")
        if key == "cell":
            cells.append(rest)
        elif key == "jobs":
            jobs.append(rest)
        elif key == "sq":
            live += parse_squeue_line(rest)
        elif key == "acct":
            acct = True
            ended += parse_sacct_line(rest)
        elif key == "jc":
            jc = True
            report = parse_jobcomp_line(rest)
            ended += [report] if report is not None else []
        elif key == "rq":
            requeue = parse_requeue_line(rest)
            requeues += [requeue] if requeue is not None else []
        elif key == "oomout":
            name, _, found = rest.partition("\t")
            # Keyed as parse_cells_tsv names the cell (printable): a raw name holding a
            # control character would match no cell, and the OOM line would be lost.
            oom[printable(name, None)] = found
        elif key == "mine":
            count, _, state = rest.partition("\t")
            if is_digits(count) and state.replace("_", "").isalpha():
                mine.append((printable(state, 30), int(count)))
        elif key == "part":
            partition = parse_partition(rest)
            parts += [partition] if partition is not None else []
        else:
            single[key] = rest
    names = {c.index: c.name for c in parse_cells_tsv("".join(f"{c}\t-\n" for c in cells))}
    source = "sacct" if acct else "jobcomp"
    merged = merge_tasks(
        parse_jobs_file("\n".join(jobs)), names, live, ended, oom, source=source,
        requeues=requeues,
    )  # fmt: skip
    problem = ""
    if "sq_err" in single:
        problem = f"squeue failed: {printable(single['sq_err'], 200)}"
    cluster = ClusterSide(
        my_jobs=tuple(sorted(mine, key=lambda s: (-s[1], s[0]))),
        partitions=tuple(parts),
        accounting=_accounting(single, acct, jc),
        problem=problem,
    )
    return SlurmFacts(merged, cluster, squeue_ok=not problem)


async def read_slurm(host: HostConfig, transport: Transport) -> SlurmFacts:
    """Run slurm_view.sh on the login node over the host's connection (one round trip)."""
    command = box_command(script_text("slurm_view.sh"), "slurm_view")
    result = await transport.run(command, timeout=VIEW_TIMEOUT_S)
    flood = result.overflow("the Slurm queue view")
    if flood is not None:
        raise TransportError(host.name, flood, "fewer cells or arrays per host")
    if result.exit_status != 0 or "\nnow\t" not in "\n" + result.stdout:
        err = result.stderr.strip().splitlines()
        raise TransportError(
            host.name,
            f"the Slurm queue view exited {result.exit_status}: {printable(err[-1] if err else 'no message', 200)}",
            "is bash on the login node's PATH?",
        )
    return parse_slurm_view(result.stdout)


async def slurm_cells(host: HostConfig, transport: Transport) -> dict[str, SlurmCell]:
    """Each cell's array task (the latest array that covers it) as Slurm reports it, by
    cell name; a cell no source knows is absent."""
    return (await read_slurm(host, transport)).cells


def requeue_line(name: str, job: SlurmCell) -> str:
    """``preempted at ~14:03: cell X interrupted; requeued (Slurm restart 1, task 7_0)``:
    a requeued task named as the preemption it most often is ("" when not requeued)."""
    if job.restarts <= 0:
        return ""
    at = f" at ~{hhmm(job.requeued_at)}" if job.requeued_at is not None else ""
    # Named by how the attempt ended where Slurm's records say: NODE_FAIL was told as a
    # preemption, which docs/slurm.md promises by name (hour s18b #9).
    what = {"NODE_FAIL": "its node failed", "BOOT_FAIL": "its node failed to boot"}.get(
        job.requeued_after, "preempted"
    )
    return (
        f"{what}{at}: cell {name} interrupted; requeued "
        f"(Slurm restart {job.restarts}, task {job.job_id})"
    )


def with_requeues(view: QueueView) -> QueueView:
    """Each requeued cell's note leads with its preemption (``requeue_line``); its state
    stays Slurm's (pending again, running again, done…)."""
    cells = tuple(_requeued(c) for c in view.cells)
    return view if cells == view.cells else replace(view, cells=cells)


def _requeued(cell: CellView) -> CellView:
    line = requeue_line(cell.name, cell.slurm) if cell.slurm is not None else ""
    if not line or cell.status == SKIPPED:
        return cell
    return replace(cell, note=f"{line} · {cell.note}" if cell.note else line)


def requeue_diagnosis(view: QueueView, found: Diagnosis) -> Diagnosis:
    """``diagnose`` on a Slurm host where nothing vanished but a task was requeued: the
    latest requeued cell, named as a preemption, and that it resumes by itself."""
    if found.subject is not None:
        return found
    requeued = [c for c in view.cells if c.slurm is not None and c.slurm.restarts > 0]
    if not requeued:
        return found
    cell = max(requeued, key=lambda c: (c.slurm.requeued_at or 0, c.index))  # type: ignore[union-attr]
    job = cell.slurm
    assert job is not None
    subject = f"cell {cell.index} ({cell.name})"
    return Diagnosis(
        view.host, subject, PREEMPTION,
        f"{subject}: {requeue_line(cell.name, job)} — it is {cell.label} now",
        (Evidence(PREEMPTION, YES, f"squeue: task {job.job_id} restart count {job.restarts}"
                  + (f", requeued at ~{hhmm(job.requeued_at)}" if job.requeued_at else "")),),
        f"nothing to do: Slurm runs {cell.name}'s identical command again in the same "
        "output path, and its run loads the latest checkpoint there (docs/spot.md)",
        None,
    )  # fmt: skip
