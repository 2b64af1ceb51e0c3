"""Launching a Slurm host's queue: one job array (issue 32; docs/queues.md, Slurm hosts).

The queue file is checked and sent exactly as on any host (``services.queue``'s plan:
the fleet-wide names, the prefix rule, the render, ``--start``, ``--fresh``); what
differs is what starts the cells. Instead of a runner in tmux on the login node — the
one place a cluster forbids training — ``sbatch --array`` submits one task per cell,
task k running cell k through ``slurm_task.sh`` and the same ``run_one.sh``. Appending
cells submits a new array for the new ones. With ``nodes = N`` each task is a job over
N nodes whose cell ``srun`` starts on every one (issue 41; docs/slurm.md).

Refused before anything is submitted: a durable dir on node-local storage (SLURM5), a
login node without ``sbatch``, an array of this queue still queued or running (a second
would run the same cells twice), and everything a launch is refused for elsewhere.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.node_local import NODE_LOCAL_FIX, node_local_reason
from rgt_tui.domain.preflight import PreflightReport
from rgt_tui.domain.queue_file import expand_home
from rgt_tui.domain.queue_records import tmux_session_name
from rgt_tui.domain.queue_state import DONE
from rgt_tui.domain.slurm_jobs import HELD_REASONS
from rgt_tui.domain.text import is_digits
from rgt_tui.profiles import profile as load_profile
from rgt_tui.services.box_ctl import QueueError, deployed_name, refusal, run_ctl
from rgt_tui.services.box_script import script_text
from rgt_tui.services.ckpt_record import observed_write
from rgt_tui.services.code_sync import SyncError, code_status, fleet_files
from rgt_tui.services.queue.box import probe
from rgt_tui.services.queue.launch_checks import unreadable_credentials
from rgt_tui.services.queue.launch_preflight import (
    append_ack_hint,
    preflight_problems,
    preflight_warnings,
    run_preflight,
)
from rgt_tui.services.queue.moved_skips import record_moved_skips
from rgt_tui.services.queue.slurm.sbatch import (
    array_spec,
    held_append_problems,
    live_problems,
    nodes_template,
    plan_notes,
    sbatch_command,
    signal_lead_check,
    task_args,
)
from rgt_tui.transport import Transport

TASK_SCRIPT = "slurm_task.sh"
# services.queue's LaunchPlan, and its plan_launch: passed in by services.queue, which
# imports this module (it dispatches here), so this one cannot import it back. A Slurm
# plan is that plan with detach "slurm", ``session`` the array's job name, ``sbatch``
# the whole command the box runs and ``notes`` what the plan shows of it.
LaunchPlan = Any
BasePlanner = Callable[..., Awaitable[Any]]
_TASK = re.compile(r"\d{1,20}_\d{1,9}")  # one array task (123_4): all a hint may name


@dataclass(frozen=True)
class SlurmFacts:
    """What the login node said: its $TMPDIR, the durable dir's real path, sbatch, and
    the arrays of this queue squeue still lists (job id → states; ``held``: job id →
    its tasks a stop or the user holds)."""

    tmpdir: str = ""
    durable_real: str = ""
    sbatch: str = ""
    live: dict[str, tuple[str, ...]] | None = None
    squeue_error: str = ""
    held: dict[str, tuple[str, ...]] = field(default_factory=dict)


def parse_slurm_probe(text: str) -> SlurmFacts:
    """The ``slurm-probe`` verb's ``key<TAB>value`` lines (pure)."""
    single: dict[str, str] = {}
    live: dict[str, list[str]] = {}
    held: dict[str, list[str]] = {}
    for line in text.splitlines():
        key, _, rest = line.partition("\t")
        if key == "live":  # JOB STATE [TASK REASON]
            job, state, task, reason = (rest.split("\t") + ["", "", ""])[:4]
            live.setdefault(job, []).append(state)
            if reason in HELD_REASONS and _TASK.fullmatch(task):
                held.setdefault(job, []).append(task)
        else:
            single[key] = rest
    return SlurmFacts(
        tmpdir=single.get("tmpdir", ""),
        durable_real=single.get("durable_real", ""),
        sbatch=single.get("sbatch", ""),
        live={job: tuple(states) for job, states in live.items()},
        squeue_error=single.get("squeue_error", ""),
        held={
            job: tuple(sorted(tasks, key=lambda t: int(t.split("_")[1])))
            for job, tasks in held.items()
        },
    )


async def slurm_probe(transport: Transport, host: str, durable: str, job_name: str) -> SlurmFacts:
    """Ask the login node for the facts a Slurm plan needs (one round trip)."""
    result = await run_ctl(transport, "slurm-probe", durable, job_name)
    error = refusal(host, result)
    if error is not None:
        raise error
    return parse_slurm_probe(result.stdout)


async def plan_slurm_launch(
    fleet: Fleet,
    host: HostConfig,
    transport: Transport,
    base_plan: BasePlanner,
    *,
    start_index: int = 0,
    detach: str = "auto",
    fresh: bool = False,
    acks: Iterable[str] = (),
    preflight: bool = True,
    retry_only: bool = False,
    append: bool = False,
) -> LaunchPlan:
    """Everything submitting ``host``'s queue as a job array would do, and every reason
    it must not (``services.queue.plan_launch`` dispatches here for a Slurm host, and
    passes itself as ``base_plan``).

    ``append``: the cells the box does not hold yet, from the first of them.
    ``preflight``: the login node's checks only (``domain.preflight_checks.preflight_scope``).
    """
    slurm = host.slurm
    assert slurm is not None, f"{host.name} is not a Slurm host"
    # The same plan any host gets (queue file, fleet-wide names, prefix, render, start
    # index), made as for a runner without tmux and without preflight: both are this
    # module's to do differently.
    # A nodes = N host's group placeholders become the job's own values (nodes_template).
    run = nodes_template(host.run) if slurm.nodes is not None and host.run else host.run
    base = await base_plan(
        fleet, replace(host, slurm=None, run=run), transport, start_index=start_index,
        detach="nohup", fresh=fresh, acks=acks, preflight=False, retry_only=retry_only,
    )  # fmt: skip
    job_name = base.session
    if not base.box_queue_dir:  # not reached, or refused before the box was asked
        return replace(base, detach="")
    problems, warnings = list(base.problems), list(base.warnings)
    start = base.start_index
    if append:
        # New cells only: what the box does not hold yet. Their warnings are the
        # launch's (done cells run again, …), which do not apply to new cells.
        start = sum(1 for c in base.cells if c.deployed)
        problems = [p for p in problems if not p.startswith("start index ")]
        warnings = []
        if base.expect_qbytes == 0 and start == 0:
            problems.append(f"no queue on {host.name} yet — launch it first")
    if detach != "auto":
        problems.append(
            f"--detach {detach} does not apply to {host.name}: a Slurm host's queue is a job "
            "array (sbatch), never a runner on the login node"
        )
    if retry_only:
        problems.append(
            f"{host.name} is a Slurm host: a retry resubmits the chosen cells as their own array"
        )
    home = base.box_queue_dir.rsplit("/.rgt/queue", 1)[0]
    durable = expand_home(host.durable_dir, home)
    report = None
    try:
        facts = await slurm_probe(transport, host.name, durable, job_name)
        if preflight and not append:
            # The login node's checks only: preflight_scope decides them for a Slurm host.
            todo = sum(1 for c in base.cells[start:] if c.status != DONE)
            report = await run_preflight(fleet, host, transport, cells=todo)
    except TransportError as exc:
        problems.append(
            f"{host.name} is unreachable: {exc.message}" + (f" — {exc.fix}" if exc.fix else "")
        )
        return replace(base, problems=tuple(problems), detach="")
    except QueueError as exc:
        problems.append(exc.message)
        return replace(base, problems=tuple(problems), detach="")
    if report is not None:
        acked = base.acks
        problems += preflight_problems(report, acked, host.ready.preflight_ack)
        warnings += preflight_warnings(report, acked, host.ready.preflight_ack)
        # Every credential the launch sends, read now (as a box's plan does): all named.
        problems += await unreadable_credentials(host)
    local = node_local_reason(
        host.name, durable, facts.durable_real, facts.tmpdir, _profile_not_under(host), home
    )
    # Preflight's durable check says the same (one rule): said once. Acknowledging that
    # check never lets a node-local durable dir through: this refusal stays.
    if local and not any(local in p for p in problems):
        problems.append(f"{local} — {NODE_LOCAL_FIX}")
    if not facts.sbatch:
        problems.append(
            f"sbatch is not on the PATH of {host.name}'s login node — load Slurm's module in "
            "the login shell (~/.bashrc), or check that this host is a Slurm login node"
        )
    if not append:
        problems += live_problems(host.name, facts.live, facts.squeue_error, facts.held)
    else:
        problems += held_append_problems(host.name, facts.live, facts.held)
    if report is None or report.check("signal-lead") is None:  # preflight not run here
        observed = observed_write(fleet, host.name)  # SLURM2: the write time seen
        lead = PreflightReport(host.name, (signal_lead_check(host.name, slurm, observed),))
        hint = append_ack_hint if append else None  # `queue append` takes no --ack
        problems += preflight_problems(lead, base.acks, host.ready.preflight_ack, hint)
        warnings += preflight_warnings(lead, base.acks, host.ready.preflight_ack)
    indices = [c.index for c in base.cells[start:]]
    array = array_spec(indices, slurm.max_parallel) if indices else ""
    bin_dir = home.rstrip("/") + "/.rgt/bin"
    argv = sbatch_command(
        slurm,
        job_name=job_name,
        array=array or "0",
        workdir=base.workdir,
        queue_dir=base.box_queue_dir,
        script=f"{bin_dir}/{deployed_name(TASK_SCRIPT)}",
        script_args=(
            base.box_queue_dir,
            f"{bin_dir}/{deployed_name('run_one.sh')}",
            base.workdir,
            *task_args(slurm),
        ),  # fmt: skip
    )
    notes = plan_notes(
        slurm, job_name, array, len(indices), durable, argv, report is not None, append
    )
    ok = not problems
    return replace(
        base,
        start_index=start,
        detach="slurm",
        problems=tuple(problems),
        warnings=tuple(warnings),
        preflight=report,
        code_id=report.code.record() if report is not None and report.code else "",
        queue_append=base.queue_append if ok else "",
        cells_append=base.cells_append if ok else "",
        notes=notes,
        sbatch=argv,
    )


def _profile_not_under(host: HostConfig) -> tuple[str, ...]:
    """The host profile's ``durable_not_under`` (issue 29's data), () when unknown."""
    try:
        return load_profile(host.profile).durable_not_under
    except KeyError:  # the fleet file's reader checked the name; a test's host may not
        return ()


async def submit(
    plan: LaunchPlan, transport: Transport, *, kind: str = "launch"
) -> tuple[int, str | None]:
    """Send the plan's cells and submit their array (``kind``: launch or append, as
    slurm.jobs records it); the array's job id, and where ``--fresh`` moved the old
    queue. The box re-checks under its lock that the plan still holds (sizes; for a
    launch, no live runner or array) before it runs ``sbatch``."""
    if plan.detach != "slurm" or not plan.sbatch:
        raise TypeError("submit needs a Slurm launch plan (plan_slurm_launch)")
    if not plan.ok:
        raise QueueError(plan.host, "the launch plan has problems:\n" + "\n".join(plan.problems))
    to_run = plan.to_run
    if not to_run:
        raise QueueError(plan.host, "no cells to submit")
    task, ro = script_text(TASK_SCRIPT), script_text("run_one.sh")
    code_line = plan.code_id + "\n" if plan.code_id else ""
    parts = [task, ro, plan.queue_append, plan.cells_append, code_line]
    sizes = [len(p.encode("utf-8")) for p in parts]
    # A launch's credentials were sent (or an earlier file removed) by queue.launch (U34).
    await transport.connect()
    # Before sbatch: a cell moved while this box did not answer never runs here again
    # (slurm_task.sh reads the skip record at each task's start).
    await record_moved_skips(transport, plan.host, plan.moved_skips)
    result = await run_ctl(
        transport, "slurm-submit", kind, plan.start_index, plan.expect_qbytes,
        plan.expect_clines, int(plan.fresh), to_run[0].index, to_run[-1].index,
        deployed_name(TASK_SCRIPT), sizes[0], deployed_name("run_one.sh"), sizes[1],
        sizes[2], sizes[3], sizes[4], plan.session, plan.session, *plan.sbatch,
        input="".join(parts),
    )  # fmt: skip
    error = refusal(plan.host, result)
    if error is not None:
        raise error
    fields = dict((line.split("\t", 1) + [""])[:2] for line in result.stdout.splitlines())
    job = fields.get("submitted", "").split("\t", 1)[0]
    if not is_digits(job):
        raise QueueError(plan.host, f"the box did not confirm the array: {result.stdout.strip()!r}")
    return int(job), fields.get("archived") or None


async def workdir_code_id(fleet: Fleet | None, host: HostConfig, transport: Transport) -> str:
    """The code identity (``CodeIdentity.record()``) of the tree ``host``'s workdir holds
    now, chosen as the launch's ``code`` check chooses it: the local identity (its git
    commit) when the box holds the local tree, else the box's own tree hash. A retry or
    an append submits it, so its cells record the code they run, not the first launch's
    (U42). "" when the host names no ``code`` or the local tree cannot be listed;
    TransportError when the box is unreachable."""
    try:
        withhold = fleet_files(fleet) if fleet is not None else ()
        status = await code_status(host, transport, withhold=withhold)
    except SyncError:
        return ""
    if status is None:
        return ""
    same = status.in_sync and status.box is not None and status.box.tree == status.local.tree
    identity = status.local if same else status.box
    return identity.record() if identity is not None else ""


async def append_slurm_cells(
    fleet: Fleet, host: HostConfig, transport: Transport, base_plan: BasePlanner
) -> tuple[tuple[Any, ...], str]:
    """``queue append`` on a Slurm host: the new lines are sent and their cells submitted
    as a new array (kind ``append`` in slurm.jobs) with the code the workdir holds now;
    names stay fleet-wide unique. The cells added (services.queue.cells.PlannedCell)
    and what became of them."""
    plan = await plan_slurm_launch(fleet, host, transport, base_plan, append=True, preflight=False)
    if plan.problems:
        rewritten = any(
            "changed since they were sent" in p or "no longer match" in p for p in plan.problems
        )
        raise QueueError(
            host.name, "cannot append:\n" + "\n".join(plan.problems),
            code="rewritten" if rewritten else "",
        )  # fmt: skip
    if not plan.to_run:
        if plan.queue_append:  # comments or blank lines only: the box's copy keeps up
            result = await run_ctl(
                transport, "append", plan.session, plan.expect_qbytes, plan.expect_clines,
                len(plan.queue_append.encode("utf-8")), 0, input=plan.queue_append,
            )  # fmt: skip
            error = refusal(host.name, result)
            if error is not None:
                raise error
        return (), "nothing new in the queue file"
    await _append_checks(fleet, host, transport, plan)
    plan = replace(plan, code_id=await workdir_code_id(fleet, host, transport))
    job, _ = await submit(plan, transport, kind="append")
    array = next((a for a in plan.sbatch if a.startswith("--array=")), "")
    return plan.to_run, (
        f"submitted as array job {job} ({array}); max_parallel limits each array on its own"
    )


async def _append_checks(
    fleet: Fleet, host: HostConfig, transport: Transport, plan: LaunchPlan
) -> None:
    """What an append submits is a launch of new cells: the checks of the launch's that
    are about them, before an allocation is spent. Every credential read (a cell ran
    without its unset token), and each new cell's config in the workdir as it is here (two
    unsynced configs each spent an allocation to meet FileNotFoundError: hour s18b #3).
    QueueError when refused."""
    from rgt_tui.services.queue.append import configs_on_box
    from rgt_tui.services.queue.cells import read_local_queue

    unreadable = await unreadable_credentials(host)
    if unreadable:
        raise QueueError(host.name, "cannot append:\n" + "\n".join(unreadable))
    _, cells, _ = await read_local_queue(fleet, host)
    new = {c.name for c in plan.to_run}
    await configs_on_box(
        fleet, host, transport, tuple(c for c in cells if c.name in new and not c.moved_to),
        way_on=(
            "and each cell of an appended array runs the workdir's code as it is: the cell "
            f"would fail, or run the old config. rgt-tui sync {host.name} first, then append"
        ),
    )  # fmt: skip


async def submit_indices(
    host: HostConfig, transport: Transport, indices: Iterable[int], *, kind: str = "retry",
    code_id: str = "",
) -> int:  # fmt: skip
    """Submit cells already on the box (``indices``) as a new array of ``host``'s queue,
    recorded as ``kind`` in slurm.jobs (services.queue.slurm.control's retry); the job id.
    Nothing is sent but the scripts and ``code_id`` (``workdir_code_id``; "": unknown),
    the code its cells record: the cells are the box's cells.tsv lines."""
    slurm = host.slurm
    assert slurm is not None, f"{host.name} is not a Slurm host"
    chosen = sorted(set(indices))
    if not chosen:
        raise ValueError("name at least one cell to submit")
    await transport.connect()
    facts = await probe(
        transport, host.name, session=tmux_session_name(host.name),
        workdir=host.workdir, durable_dir=host.durable_dir,
    )  # fmt: skip
    if chosen[-1] >= len(facts.deployed):
        raise QueueError(host.name, f"cell {chosen[-1]} is not in the box's queue (cells.tsv)")
    home = facts.home.rstrip("/")
    qdir, bin_dir = f"{home}/.rgt/queue", f"{home}/.rgt/bin"
    workdir = expand_home(host.workdir, facts.home)
    job_name = tmux_session_name(host.name)
    argv = sbatch_command(
        slurm,
        job_name=job_name,
        array=array_spec(chosen, slurm.max_parallel),
        workdir=workdir,
        queue_dir=qdir,
        script=f"{bin_dir}/{deployed_name(TASK_SCRIPT)}",
        script_args=(qdir, f"{bin_dir}/{deployed_name('run_one.sh')}", workdir, *task_args(slurm)),
    )
    task, ro = script_text(TASK_SCRIPT), script_text("run_one.sh")
    code_line = code_id + "\n" if code_id else ""
    result = await run_ctl(
        transport, "slurm-submit", kind, chosen[0], facts.qbytes, facts.clines, 0,
        chosen[0], chosen[-1], deployed_name(TASK_SCRIPT), len(task.encode("utf-8")),
        deployed_name("run_one.sh"), len(ro.encode("utf-8")), 0, 0,
        len(code_line.encode("utf-8")), job_name, job_name, *argv, input=task + ro + code_line,
    )  # fmt: skip
    error = refusal(host.name, result)
    if error is not None:
        raise error
    job = next(
        (ln.split("\t")[1] for ln in result.stdout.splitlines() if ln.startswith("submitted\t")), ""
    )
    if not is_digits(job):
        raise QueueError(host.name, f"the box did not confirm the array: {result.stdout.strip()!r}")
    return int(job)
