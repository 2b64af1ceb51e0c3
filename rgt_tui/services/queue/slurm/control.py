"""Queue control on a Slurm host: the verbs of ``services.queue.control`` in Slurm's terms.

On a login node the queue is a job array (``~/.rgt/queue/slurm.jobs``, one line per
submitted array), so no runner on the box reads a stop or kill record; Slurm acts, and
the same records are written beside it so every view reads the action as on any host:

- **stop** after the running cells: ``scontrol uhold`` of each PENDING task of the host's
  arrays (they stay PENDING, reason JobHeldUser; the running ones finish), and
  ``stop <ts> user`` in runner.state. ``scontrol release`` (or a cancel) undoes it.
- **kill**: ``kill <ts> user next|stop`` in the cell's state, then ``scancel`` of its
  task; ``stop`` also holds the pending tasks (``stop <ts> kill``).
- **retry**: refused while a task of the cell is still in squeue
  (``live_task_problems``); services.queue.control then runs queue_ctl.sh's ``retry``
  (outputs renamed aside, the record) and the launch slice's ``submit_indices`` (kind
  ``retry`` in slurm.jobs): one sbatch builder, not two.
- **skip** (queue move): ``scancel`` of the cell's PENDING task, then the skip record;
  refused while the task runs.
- **cancel** (the teardown gate): ``scancel`` of every task still in squeue, only after
  the host's name was typed.

The box side is ``scripts/slurm_ctl.sh``, sent whole like queue_ctl.sh; it re-checks each
task's state under the queue lock before it holds, kills or cancels. Each verb returns a
small result of its own, which services.queue.control (which dispatches here) turns into
the result every host's verb returns: this package never imports that module (sibling
modules form no import cycle).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.slurm_jobs import ArraySubmission, TaskReport
from rgt_tui.domain.text import is_digits, printable, shell_word
from rgt_tui.services.box_ctl import QueueError, refusal
from rgt_tui.services.box_script import box_command, script_text
from rgt_tui.services.queue.records import read_queue_facts
from rgt_tui.transport import CommandResult, Transport

SLURM_CTL_TIMEOUT_S = 90.0  # a scontrol/scancel per task, each answering in well under 1 s
TASK_ID = re.compile(r"^\d+(_\d+)?$")
KILL_THEN = ("next", "stop")  # as services.queue.control's kill
ACTIVE = "active"  # any state squeue still lists: the task has not ended
SHOWN_TASKS = 6  # tasks named in one line of evidence; the rest are counted


@dataclass(frozen=True)
class SlurmTasks:
    """The host's arrays and the tasks of them that have not ended."""

    arrays: tuple[ArraySubmission, ...]
    tasks: tuple[TaskReport, ...]

    def pending(self) -> tuple[TaskReport, ...]:
        """The tasks still waiting to start."""
        return tuple(t for t in self.tasks if t.state == "PENDING")

    def of_index(self, index: int) -> TaskReport | None:
        """The live task of cell ``index``, from the latest array that has one."""
        found = [t for t in self.tasks if t.index == index]
        order = {a.job_id: n for n, a in enumerate(self.arrays)}
        return max(found, key=lambda t: order.get(t.array_id, -1), default=None)


def ctl_command(verb: str, *args: str) -> str:
    """The command line that runs ``verb`` of slurm_ctl.sh on the box (every argument
    quoted; Slurm job ids checked to be digits first)."""
    return box_command(script_text("slurm_ctl.sh"), "slurm_ctl", verb, *args)


def _task_ids(ids: Iterable[str]) -> list[str]:
    out = list(ids)
    bad = [i for i in out if not TASK_ID.match(i)]
    if bad:
        raise ValueError(f"not a Slurm job id: {bad[0]!r}")
    return out


def hold_args(task_ids: Iterable[str], why: str = "user") -> tuple[str, ...]:
    """slurm_ctl.sh's arguments to hold ``task_ids`` and record the stop."""
    return ("hold", why, *_task_ids(task_ids))


def kill_args(name: str, task_id: str, then: str, pending: Iterable[str] = ()) -> tuple[str, ...]:
    """slurm_ctl.sh's arguments to record the kill of ``name`` and scancel its task;
    ``then="stop"`` also holds ``pending``."""
    if then not in KILL_THEN:
        raise ValueError(f"then must be next or stop, not {then!r}")
    held = _task_ids(pending) if then == "stop" else []
    return ("kill", name, *_task_ids([task_id]), then, *held)


def cancel_args(task_ids: Iterable[str], *, pending_only: bool) -> tuple[str, ...]:
    """slurm_ctl.sh's arguments to scancel ``task_ids`` (``pending_only``: refused unless
    every one is still PENDING)."""
    ids = _task_ids(task_ids)
    if not ids:
        raise ValueError("name at least one Slurm job to cancel")
    return ("cancel", "pending" if pending_only else "any", *ids)


def parse_tasks(stdout: str) -> SlurmTasks:
    """slurm_ctl.sh ``tasks`` output → the arrays and their live tasks (lines of any
    other shape are ignored: the output passed through the box)."""
    arrays: list[ArraySubmission] = []
    tasks: list[TaskReport] = []
    for line in stdout.splitlines():
        f = line.split("\t")
        if (
            f[0] == "array"
            and len(f) >= 5
            and is_digits(f[1])
            and is_digits(f[2])
            and is_digits(f[3])
        ):
            # slurm_ctl.sh's tasks verb does not send the submit time: 0, not read here.
            arrays.append(ArraySubmission(f[1], int(f[2]), int(f[3]), 0, printable(f[4], 20)))
        elif f[0] == "task" and len(f) >= 7 and TASK_ID.match(f[3]) and is_digits(f[1]):
            index = int(f[2]) if is_digits(f[2]) else None
            if f[3] != (f[1] if index is None else f"{f[1]}_{index}"):
                continue  # the task id must be the array's and index's (one squeue line)
            tasks.append(
                TaskReport(
                    f[1],
                    index,
                    printable(f[4], 40),
                    printable(f[5], 160),
                    printable(f[6], 200),
                )
            )
    return SlurmTasks(tuple(arrays), tuple(tasks))


async def _ctl(transport: Transport, host: str, *args: str) -> CommandResult:
    result = await transport.run(ctl_command(*args), timeout=SLURM_CTL_TIMEOUT_S)
    error = refusal(host, result)
    if error is not None:
        raise error
    return result


async def host_tasks(host: HostConfig, transport: Transport) -> SlurmTasks:
    """The host's arrays (slurm.jobs) and every task of them squeue still lists.
    QueueError when squeue cannot answer (its message, one line)."""
    await transport.connect()
    return parse_tasks((await _ctl(transport, host.name, "tasks")).stdout)


def _lines(stdout: str, key: str) -> list[list[str]]:
    return [f[1:] for line in stdout.splitlines() if (f := line.split("\t"))[0] == key]


# --- stop ----------------------------------------------------------------------------


@dataclass(frozen=True)
class SlurmStop:
    """A stop on Slurm: the pending tasks held, those Slurm refused, those left to finish."""

    already: bool  # a stop was recorded before for this launch
    held: tuple[str, ...]
    not_held: tuple[str, ...]  # "123_4: why" (started meanwhile, …)
    running: tuple[str, ...]  # evidence of the tasks left to finish


async def slurm_stop(host: HostConfig, transport: Transport) -> SlurmStop:
    """Hold every pending task of the host's arrays and record the stop. QueueError
    (``not-running``) when no task of them is pending or running."""
    tasks = await host_tasks(host, transport)
    if not tasks.tasks:
        raise QueueError(
            host.name, "no job of this host's queue is pending or running in Slurm: nothing to stop",
            code="not-running",
        )  # fmt: skip
    result = await _ctl(transport, host.name, *hold_args(t.task_id for t in tasks.pending()))
    state = _lines(result.stdout, "stop")
    return SlurmStop(
        bool(state) and state[0][:1] == ["already"],
        tuple(f[0] for f in _lines(result.stdout, "held") if f),
        tuple(": ".join(f[:2]) for f in _lines(result.stdout, "notheld") if f),
        tuple(t.evidence() for t in tasks.tasks if t.state != "PENDING"),
    )


# --- kill ----------------------------------------------------------------------------


@dataclass(frozen=True)
class SlurmKill:
    """A kill on Slurm: the cell, its task, and whether squeue saw the task end."""

    name: str
    task: str
    ended: bool


async def _deployed(host: HostConfig, transport: Transport) -> dict[str, int]:
    """The box's cells (cells.tsv): name → index, which is the array task's index."""
    facts = await read_queue_facts(host, transport)
    return {c.name: c.index for c in facts.deployed}


def _task_for(
    host: str, tasks: SlurmTasks, cells: dict[str, int], name: str | None
) -> tuple[str, TaskReport]:
    """The cell to kill (None: the one running task) and its running task."""
    names = {i: n for n, i in cells.items()}
    if name is None:
        running = [t for t in tasks.tasks if t.state == "RUNNING" and t.index is not None]
        if not running:
            raise QueueError(
                host, "no cell is running in Slurm: there is nothing to kill", code="not-running"
            )
        if len(running) > 1:
            which = ", ".join(f"{names.get(t.index, '?')} ({t.task_id})" for t in running)  # type: ignore[arg-type]
            raise QueueError(
                host,
                f"{len(running)} cells run now: name the one to kill ({which})",
                code="ambiguous",
            )
        task = running[0]
        return names.get(task.index, f"#{task.index}"), task  # type: ignore[arg-type]
    if name not in cells:
        raise QueueError(host, f"no cell named {name} in the box's queue", code="unknown")
    found = tasks.of_index(cells[name])
    if found is None or found.state != "RUNNING":
        what = (
            f"job {found.task_id} is {found.state}" if found else "no job of it is in Slurm's queue"
        )
        # A task still waiting in Slurm's queue: said how to keep it from starting, which
        # is what a kill of it was for (h531 #7: "nothing to kill", and no way on).
        pending = (
            f" — to keep it from starting: rgt-tui queue stop {host} holds the tasks not "
            f"started (scontrol release undoes it), rgt-tui queue move {shell_word(name)} "
            "--to HOST runs it elsewhere"
            if found is not None and found.state == "PENDING"
            else ""
        )
        raise QueueError(
            host,
            f"cell {name} is not running ({what}): there is nothing to kill{pending}",
            code="not-running",
        )
    return name, found


async def slurm_kill(
    host: HostConfig, transport: Transport, name: str | None = None, *, then: str = "next",
    check_timeout_s: float = 60.0,
) -> SlurmKill:  # fmt: skip
    """Record the kill of cell ``name`` (None: the one running) and scancel its task;
    ``then="stop"`` also holds the pending tasks. ``ended``: what squeue showed in later
    calls, until the task left the running state or ``check_timeout_s`` passed (Slurm
    sends TERM, then KILL after its KillWait)."""
    if then not in KILL_THEN:
        raise ValueError(f"then must be next or stop, not {then!r}")
    cells = await _deployed(host, transport)
    tasks = await host_tasks(host, transport)
    name, task = _task_for(host.name, tasks, cells, name)
    pending = [t.task_id for t in tasks.pending()]
    await _ctl(transport, host.name, *kill_args(name, task.task_id, then, pending))
    deadline = time.monotonic() + check_timeout_s
    while True:
        after = await host_tasks(host, transport)
        now = next((t for t in after.tasks if t.task_id == task.task_id), None)
        ended = now is None or now.state not in ("RUNNING", "COMPLETING")
        if ended or time.monotonic() >= deadline:
            return SlurmKill(name, task.task_id, ended)
        await asyncio.sleep(0.5)  # polling the scheduler: the next look, not a wait for a result


# --- retry ---------------------------------------------------------------------------


async def live_task_problems(
    host: HostConfig, transport: Transport, names: Iterable[str]
) -> dict[str, str]:
    """Cells of ``names`` that still have a task pending or running in Slurm, each with
    why a retry must wait (a retry submits a new array: two tasks of one cell would run)."""
    cells = await _deployed(host, transport)
    tasks = await host_tasks(host, transport)
    problems = {}
    for name in names:
        live = tasks.of_index(cells[name]) if name in cells else None
        if live is not None:
            problems[name] = (
                f"cell {name} still has {live.evidence()} in Slurm: kill it first (queue kill), then retry"
            )
    return problems


# --- skip (queue move) and cancel (teardown) -------------------------------------------


async def cancel_pending_of(host: HostConfig, transport: Transport, name: str) -> tuple[str, ...]:
    """Scancel the pending task of cell ``name`` before a move skips it (refused while it
    runs); the tasks cancelled."""
    index = (await _deployed(host, transport)).get(name)
    if index is None:
        return ()
    tasks = await host_tasks(host, transport)
    live = [t for t in tasks.tasks if t.index == index]
    running = [t for t in live if t.state != "PENDING"]
    if running:
        raise QueueError(
            host.name, f"cell {name} has {running[0].evidence()}: kill it first (queue kill)",
            code="running",
        )  # fmt: skip
    if not live:
        return ()
    result = await _ctl(
        transport, host.name, *cancel_args((t.task_id for t in live), pending_only=True)
    )
    return tuple(f[0] for f in _lines(result.stdout, "cancelled") if f)


@dataclass(frozen=True)
class CancelResult:
    """What ``cancel_jobs`` asked Slurm to cancel, and what it refused."""

    host: str
    cancelled: tuple[str, ...]
    failed: tuple[str, ...]  # "123_4: why"


async def cancel_jobs(host: HostConfig, transport: Transport, typed: str) -> CancelResult:
    """Scancel every task of the host's arrays still in squeue — only when ``typed`` is
    the host's name (the teardown gate's typed confirmation). PermissionError otherwise;
    QueueError when squeue or scancel cannot be reached."""
    if typed != host.name:
        raise PermissionError(f"'{typed}' is not '{host.name}': no job was cancelled")
    tasks = await host_tasks(host, transport)
    if not tasks.tasks:
        return CancelResult(host.name, (), ())
    result = await _ctl(
        transport, host.name, *cancel_args((t.task_id for t in tasks.tasks), pending_only=False)
    )
    return CancelResult(
        host.name,
        tuple(f[0] for f in _lines(result.stdout, "cancelled") if f),
        tuple(": ".join(f[:2]) for f in _lines(result.stdout, "notcancelled") if f),
    )


def jobs_evidence(tasks: SlurmTasks) -> tuple[str, ...]:
    """Each live task as the gate's checklist names it."""
    return tuple(t.evidence() for t in tasks.tasks)


__all__ = [
    "KILL_THEN", "CancelResult", "SlurmKill", "SlurmStop", "SlurmTasks", "cancel_args", "cancel_jobs", "cancel_pending_of", "ctl_command",
    "hold_args", "host_tasks", "jobs_evidence", "kill_args", "live_task_problems",
    "parse_tasks", "slurm_kill", "slurm_stop",
]  # fmt: skip
