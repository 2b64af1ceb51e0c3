"""The pure parts of a Slurm launch: the array, the ``sbatch`` command, the refusals.

Nothing here talks to a box: ``services.queue.slurm.launch`` gathers the facts and submits.
The command line is built here whole (every option one argument, shell-quoted when it
is sent) so a test can read exactly what a host's keys make ``sbatch`` do.
"""

from __future__ import annotations

import re
import shlex
import string
from collections.abc import Mapping, Sequence

from rgt_tui.domain.config import GROUP_FIELDS, SlurmConfig
from rgt_tui.domain.preflight_checks import LOGIN_NODE_CHECKS
from rgt_tui.domain.slurm_lead import (  # noqa: F401 (the launch's, the tests')
    SIGNAL_SLACK_S,
    signal_lead_check,
    time_seconds,
)
from rgt_tui.domain.text import is_digits
from rgt_tui.domain.units import plural

# Where each task's Slurm output goes, under the box's queue dir (``%A``: the array's
# job id, ``%a``: the task's index). Slurm cannot name a cell in a pattern, so the task
# links its file to ``cells/<name>.slurm.out`` (rgt_tui/scripts/slurm_task.sh).
OUTPUT_PATTERN = "slurm/%A_%a.out"
_ARRAY = re.compile(r"\d+(-\d+)?(,\d+(-\d+)?)*(%\d+)?")
# A multi-node cell's placeholders (issue 41) are known only in the job, from its
# allocation: they become references to what slurm_task.sh exports there (the names a
# group's ranks export too), expanded by each srun task's own shell.
NODES_ENV = {
    "nnodes": "RGT_NNODES",
    "node_rank": "RGT_NODE_RANK",
    "nproc_per_node": "RGT_NPROC_PER_NODE",
    "master_addr": "RGT_MASTER_ADDR",
    "master_port": "RGT_MASTER_PORT",
}


def nodes_template(template: str) -> str:
    """A ``nodes = N`` host's run template with the group placeholders made shell
    references (``{nnodes}`` → ``"$RGT_NNODES"``), the cell's own left for the render.

    >>> nodes_template("torchrun --nnodes {nnodes} --rdzv-endpoint {master_addr}:{master_port} t.py {cfg}")
    'torchrun --nnodes "$RGT_NNODES" --rdzv-endpoint "$RGT_MASTER_ADDR":"$RGT_MASTER_PORT" t.py {cfg}'
    """
    out = []
    for literal, field, spec, conv in string.Formatter().parse(template):
        out.append(literal.replace("{", "{{").replace("}", "}}"))
        if field is None:
            continue
        if field in GROUP_FIELDS:
            out.append(f'"${NODES_ENV[field]}"')
        else:
            out.append(
                "{" + field + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "") + "}"
            )
    return "".join(out)


def nproc_per_node(slurm: SlurmConfig) -> int:
    """Processes per node: the host's ``nproc_per_node``, else the GPUs its ``gres``
    asks for (``gpu:4``, ``gpu:a100:4``; a bare ``gpu`` is one), else 1."""
    if slurm.nproc_per_node is not None:
        return slurm.nproc_per_node
    for part in (slurm.gres or "").split(","):
        name, *rest = part.strip().split(":")
        if name == "gpu":  # gpu, gpu:N, gpu:TYPE, gpu:TYPE:N
            return int(rest[-1]) if rest and is_digits(rest[-1]) else 1
    return 1


def task_args(slurm: SlurmConfig) -> tuple[str, ...]:
    """slurm_task.sh's arguments after QUEUE_DIR RUN_ONE WORKDIR: for a ``nodes`` host,
    NPROC_PER_NODE and MASTER_PORT (0: derived from the job id in the job); else none."""
    if slurm.nodes is None:
        return ()
    return (str(nproc_per_node(slurm)), str(slurm.master_port or 0))


def array_spec(indices: Sequence[int], max_parallel: int | None) -> str:
    """``--array``'s value: runs of consecutive indices as ``a-b``, then ``%N``.

    >>> array_spec([0, 1, 2, 3], 2)
    '0-3%2'
    >>> array_spec([1, 3, 4, 5], None)
    '1,3-5'
    """
    if not indices:
        raise ValueError("an array needs at least one index")
    runs: list[list[int]] = []
    for i in sorted(set(indices)):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    spec = ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)
    return spec + (f"%{max_parallel}" if max_parallel else "")


def valid_array(spec: str) -> bool:
    """Whether ``spec`` is an ``--array`` value this module makes (digits, ``-``, ``,``, ``%``)."""
    return _ARRAY.fullmatch(spec) is not None


def sbatch_command(
    slurm: SlurmConfig,
    *,
    job_name: str,
    array: str,
    workdir: str,
    queue_dir: str,
    script: str,
    script_args: Sequence[str] = (),
) -> tuple[str, ...]:
    """The whole ``sbatch`` argv for one array: rgt-tui's own options, then the host's
    keys (one ``--option=value`` each, the cluster's default where unset), then its
    ``sbatch_args``, then the task script and its arguments."""
    argv = [
        "sbatch",
        "--parsable",
        f"--array={array}",
        f"--job-name={job_name}",
        # B: signals the batch shell (the task script) alone: it passes a TERM on to the
        # cell, which checkpoints at its next safe point (SLURM1). USR1, not TERM: a
        # scancel or preemption TERMs every process, the cell too, and the task script
        # must tell the two apart, or the cell gets TERM twice.
        f"--signal=B:USR1@{slurm.signal_lead_s}",
        "--requeue",
        f"--chdir={workdir}",
        f"--output={queue_dir.rstrip('/')}/{OUTPUT_PATTERN}",
        # A requeued task appends to its output instead of wiping the first run's.
        "--open-mode=append",
    ]
    if slurm.nodes is not None:
        # One job per cell over N nodes, one srun task (a torchrun agent) on each. Before
        # the host's keys: a later --nodes in sbatch_args wins (the one-node test cluster).
        argv += [f"--nodes={slurm.nodes}", "--ntasks-per-node=1"]
    for key, value in (
        ("partition", slurm.partition),
        ("account", slurm.account),
        ("gres", slurm.gres),
        ("time", slurm.time),
        ("mem", slurm.mem),
        ("cpus-per-task", slurm.cpus_per_task),
    ):
        if value is not None:
            argv.append(f"--{key}={value}")
    argv += slurm.sbatch_args
    return (*argv, script, *script_args)


def limits_text(slurm: SlurmConfig) -> str:
    """``partition gpu · gres gpu:1 · time 04:00:00 · …`` (unset: the cluster's default)."""
    parts = [
        f"{label} {value if value is not None else '(cluster default)'}"
        for label, value in (
            ("partition", slurm.partition),
            ("account", slurm.account),
            ("gres", slurm.gres),
            ("time", slurm.time),
            ("mem", slurm.mem),
            ("cpus-per-task", slurm.cpus_per_task),
        )
    ]
    if slurm.sbatch_args:
        parts.append("also " + " ".join(slurm.sbatch_args))
    return " · ".join(parts)


def live_problems(
    host: str, live: Mapping[str, tuple[str, ...]] | None, squeue_error: str,
    held: Mapping[str, tuple[str, ...]] | None = None,
) -> list[str]:  # fmt: skip
    """The refusal while an array of this queue is queued or running, or squeue cannot
    say; ``held``: its tasks held (a ``queue stop``), which never run until released."""
    if squeue_error:
        return [
            f"cannot ask squeue on {host} whether this queue's arrays still run: "
            f"{squeue_error} — the cluster's controller must answer before a launch"
        ]
    if not live:
        return []
    jobs = ", ".join(
        f"{job} ({', '.join(f'{states.count(s)} {s.lower()}' for s in dict.fromkeys(states))})"
        for job, states in live.items()
    )
    tasks = [t for job in live for t in (held or {}).get(job, ())]
    if tasks:
        ids = " ".join(tasks)
        return [
            f"the queue on {host} is already submitted: array job {jobs} is still in squeue, "
            f"and {len(tasks)} of its tasks are held by a stop ({ids}): they never run until "
            f"released — let them run with scontrol release {ids}, or drop only them with "
            f"scancel {ids} (scancel {' '.join(live)} would end its running cells too)"
        ]
    # A running task of it is a cell at work: the cancel ends it too, said before it is
    # typed (h501 #8: `scancel 2` was offered while cells c and d ran).
    running = any(s == "RUNNING" for states in live.values() for s in states)
    ends = ", which ends its running cells too" if running else ""
    return [
        f"the queue on {host} is already submitted: array job {jobs} is still in squeue "
        f"— wait for it, append cells (they get their own array), or cancel it first "
        f"(scancel {' '.join(live)}{ends})"
    ]


def held_append_problems(
    host: str, live: Mapping[str, tuple[str, ...]] | None,
    held: Mapping[str, tuple[str, ...]] | None,
) -> list[str]:  # fmt: skip
    """An append's refusal while a stop holds tasks of this queue: the new cells would be
    submitted at once, past the stop a launch is refused by (hour s22b #8)."""
    tasks = [t for job in (live or {}) for t in (held or {}).get(job, ())]
    if not tasks:
        return []
    ids = " ".join(tasks)
    return [
        f"the queue on {host} is stopped: {len(tasks)} of its tasks are held ({ids}), and "
        "an append would submit its new cells at once — let the held ones run first "
        f"(scontrol release {ids}), then append; or drop them (scancel {ids})"
    ]


def plan_notes(
    slurm: SlurmConfig,
    job_name: str,
    array: str,
    n: int,
    durable: str,
    argv: tuple[str, ...],
    preflight: bool,
    append: bool,
) -> tuple[str, ...]:
    """What the plan says it will submit: the array, limits, durable dir, signal lead."""
    at_once = f"at most {slurm.max_parallel} at once" if slurm.max_parallel else "no %N limit"
    new = "a new array for the new cells, " if append else ""
    lines = [
        f"job array {job_name}: --array={array or '(none)'} — {new}{plural(n, 'task')}, "
        f"one cell each, {at_once}",
    ]
    if slurm.nodes is not None:
        port = slurm.master_port or "20000 + job id % 20000"
        lines.append(
            f"each cell one job over {slurm.nodes} nodes (--nodes={slurm.nodes} "
            f"--ntasks-per-node=1): srun starts the cell on every node, {{nnodes}} "
            f"{{node_rank}} {{nproc_per_node}} ({nproc_per_node(slurm)}) {{master_addr}} "
            f"(the allocation's first node) {{master_port}} ({port}) filled in the job; "
            "one rank failing ends the others (srun --kill-on-bad-exit)"
        )
    lines += [
        f"limits: {limits_text(slurm)}",
        f"durable dir {durable}: checkpoints must go there, on the shared filesystem "
        "(node-local storage is refused: SLURM5)",
        f"SIGTERM {slurm.signal_lead_s} s before the walltime (±60 s, SLURM2): the task "
        "records it and passes it to the cell, which checkpoints at its next safe point "
        "(SLURM1); --requeue",
    ]
    if slurm.nodes is None:
        lines.append(
            "the cell runs in the batch step (no srun: it holds the allocation's CPUs and "
            "GPUs; a cell's own srun gets SRUN_CPUS_PER_TASK, SLURM3)"
        )
    if not append:
        lines.append(
            "preflight on the login node: "
            + (
                f"{', '.join(LOGIN_NODE_CHECKS)} only (it runs no cell: GPU, driver, "
                "arch, torch, storage and tmux are the compute nodes')"
                if preflight
                else "not run"
            )
        )
    lines.append("$ " + shlex.join(argv))
    return tuple(lines)
