"""GPU telemetry of a running Slurm cell, from inside its allocation (issue 32).

A Slurm host's telemetry agent runs on the login node, which has no GPU of the cell's.
Where the site allows it, ``srun --jobid <task's job id> --overlap`` starts a step inside
the running task's allocation, on its node, sharing its CPUs, memory and GPUs; the step
runs the same agent (``agent_command``, one sample: ``--count 1``) with the same bundle
on stdin, and the sample is parsed as every other (``parse_agent_line``). The box side is
``rgt_tui/scripts/slurm_gpu.sh``: srun takes only a job's numeric id, so it resolves the
array task's own id (squeue's ``%A``) first.

A site may forbid this (a cli_filter or job_submit plugin, steps that cannot be created,
srun hanging while the step waits): then the pane says why with srun's own error text,
bounded, and ``AllocationTelemetry`` stops trying for a while (a backoff that grows with
each refusal) instead of asking on every queue poll. Samples are taken at most every
``SAMPLE_EVERY_S``: a step is a scheduler round trip, not a free read.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace

from rgt_tui.agent import agent_command, agent_source
from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.queue_state import RUNNING, QueueView
from rgt_tui.domain.snapshot import HostSnapshot
from rgt_tui.domain.text import printable
from rgt_tui.domain.units import fmt_bytes, fmt_duration
from rgt_tui.services.box_script import ShellWord, box_command, script_text
from rgt_tui.services.telemetry import parse_agent_line, tracker_patterns
from rgt_tui.transport import Transport

__all__ = [
    "AllocationTelemetry",
    "InsideSample",
    "inside_note",
    "sample_inside",
]

SAMPLE_EVERY_S = 30.0  # between samples of the same host's running tasks
SRUN_LIMIT_S = 25  # srun's own bound on the box (a step that queues or hangs)
MAX_TASKS = 4  # running tasks sampled per round (one srun each, one after another)
BACKOFF_S = (120.0, 300.0, 900.0)  # after the 1st, 2nd, 3rd+ refusal in a row
ERROR_CHARS = 240  # srun's error text, as shown


@dataclass(frozen=True)
class InsideSample:
    """One attempt to sample a running task from inside its allocation: the agent's
    snapshot, or why there is none (``error``: srun's own words, bounded)."""

    task: str  # <array job id>_<index>
    node: str
    at: float
    snapshot: HostSnapshot | None = None
    error: str = ""

    @property
    def ok(self) -> bool:
        """The step ran and the agent gave a sample."""
        return self.snapshot is not None


def _why(stderr: str, status: int | None, limit_s: int) -> str:
    """srun's refusal in a line: its ``error:`` lines (the reason), else its last line."""
    if status == 124:
        return f"srun did not finish within {limit_s} s (the step may be queued or hung)"
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if "error" in ln.lower()] or lines[-1:]
    text = " / ".join(dict.fromkeys(errors[-3:]))
    if status == 127 and not text:
        text = "srun or python3 not found"
    return printable(text or f"srun exited {status} without a message", ERROR_CHARS)


async def sample_inside(
    host: HostConfig,
    transport: Transport,
    task: str,
    *,
    limit_s: int = SRUN_LIMIT_S,
    clock: Callable[[], float] = time.time,
) -> InsideSample:
    """Run the agent once inside running array task ``task`` (``12_3``) with ``srun
    --overlap`` over the login node's connection. A refusal is an ``InsideSample`` with
    its ``error``; a lost connection raises ``TransportError``."""
    agent = agent_command(
        host.mounts,
        0.0,
        count=1,
        out_root=host.durable_dir,
        tracker_patterns=tracker_patterns(host),
    )
    script = script_text("slurm_gpu.sh")
    # the agent's command line is words for the box's shell, passed as is
    command = box_command(script, "slurm_gpu", task, int(limit_s), ShellWord(agent))
    result = await transport.run(command, input=agent_source(), timeout=limit_s + 30)
    node, snaps = "", []
    for line in result.stdout.splitlines()[:50]:
        if line.startswith("rgt-node\t"):
            node = printable(line.split("\t")[1], 80)
            continue
        snap = parse_agent_line(host.name, line)
        snaps += [snap] if snap is not None else []
    flood = result.overflow("a sample from inside the Slurm allocation")
    if flood is not None:
        return InsideSample(task, node, clock(), error=flood)
    if result.exit_status == 0 and snaps:
        return InsideSample(task, node, clock(), snapshot=snaps[-1])
    return InsideSample(task, node, clock(), error=_why(result.stderr, result.exit_status, limit_s))


def _gpus_text(snap: HostSnapshot) -> str:
    """``GPU0 NVIDIA H100 80GB HBM3 37% util · 1.2G/79.6G``, every GPU (or why none)."""
    if not snap.gpus:
        return f"no GPU seen ({printable(snap.gpu_unavailable_reason or 'none found', 120)})"
    parts = []
    for gpu in snap.gpus[:8]:
        util = "?" if gpu.util_pct is None else f"{gpu.util_pct:.0f}%"
        mem = f"{fmt_bytes(gpu.mem_used)}/{fmt_bytes(gpu.mem_total)}"
        parts.append(f"GPU{gpu.index} {printable(gpu.name, 40)} {util} util · {mem}")
    more = len(snap.gpus) - 8
    return " · ".join(parts + ([f"+{more} more"] if more > 0 else []))


def inside_note(
    samples: tuple[InsideSample, ...], now: float, *, retry_at: float | None = None
) -> str:
    """The pane's GPU line for a Slurm host (pure): each sampled task's GPUs ``on NODE
    (inside job 12_3)``, or why srun gave none and when it is tried again."""
    if not samples:
        return "GPU telemetry: no cell running (sampled inside a running task with srun --overlap)"
    parts = []
    for s in samples:
        where = f"on {s.node or 'its node'} (inside job {s.task}"
        if s.snapshot is not None:
            parts.append(f"{where}, {fmt_duration(now - s.at)} ago): {_gpus_text(s.snapshot)}")
        else:
            parts.append(f"not sampled {where}): srun --overlap refused: {s.error}")
    text = "GPU telemetry " + " · ".join(parts)
    if retry_at is not None and any(not s.ok for s in samples):
        text += f" (next try in {fmt_duration(max(0.0, retry_at - now))})"
    return text


Sampler = Callable[[HostConfig, Transport, str], Awaitable[InsideSample]]


@dataclass
class _HostState:
    samples: tuple[InsideSample, ...] = ()
    next_at: float = 0.0  # no attempt before this
    refusals: int = 0  # in a row
    tasks: tuple[str, ...] = field(default_factory=tuple)  # those the samples are of


class AllocationTelemetry:
    """Per Slurm host: the running tasks' in-allocation samples, refreshed at most every
    ``every_s``, with a growing pause after srun refuses (``backoff_s``)."""

    def __init__(
        self,
        *,
        sampler: Sampler | None = None,
        clock: Callable[[], float] = time.time,
        every_s: float = SAMPLE_EVERY_S,
        backoff_s: tuple[float, ...] = BACKOFF_S,
    ) -> None:
        self.sampler: Sampler = sampler or (lambda h, t, task: sample_inside(h, t, task))
        self.clock = clock
        self.every_s = every_s
        self.backoff_s = backoff_s
        self.hosts: dict[str, _HostState] = {}

    async def annotate(self, host: HostConfig, transport: Transport, view: QueueView) -> QueueView:
        """``view`` with its cluster side's GPU line from inside the running tasks'
        allocations (sampled now when due); unchanged for a host that is not Slurm."""
        if view.cluster is None:
            return view
        state = self.hosts.setdefault(host.name, _HostState())
        tasks = tuple(
            c.slurm.job_id
            for c in view.cells
            if c.status == RUNNING and c.slurm is not None and c.slurm.state == "RUNNING"
        )[:MAX_TASKS]
        now = self.clock()
        if not tasks:
            self.hosts[host.name] = _HostState(next_at=state.next_at, refusals=state.refusals)
            return replace(view, cluster=replace(view.cluster, gpu_note=inside_note((), now)))
        if now >= state.next_at or (tasks != state.tasks and not state.refusals):
            await self._sample(host, transport, state, tasks)
        kept = tuple(s for s in state.samples if s.task in tasks) or state.samples
        retry = state.next_at if state.refusals else None
        note = inside_note(kept, self.clock(), retry_at=retry)
        return replace(view, cluster=replace(view.cluster, gpu_note=note))

    async def _sample(
        self, host: HostConfig, transport: Transport, state: _HostState, tasks: tuple[str, ...]
    ) -> None:
        samples = []
        for task in tasks:
            try:
                sample = await self.sampler(host, transport, task)
            except TransportError as exc:  # the login node's connection: the poll says so
                sample = InsideSample(task, "", self.clock(), error=printable(exc.message, 200))
            samples.append(sample)
            if not sample.ok:
                break  # the site's answer is the same for the next task: do not ask again
        state.samples, state.tasks = tuple(samples), tasks
        if all(s.ok for s in samples):
            state.refusals = 0
            state.next_at = self.clock() + self.every_s
        else:
            pause = self.backoff_s[min(state.refusals, len(self.backoff_s) - 1)]
            state.refusals += 1
            state.next_at = self.clock() + pause
