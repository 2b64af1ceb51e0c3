"""What Slurm says about a host's job arrays, parsed (pure; issue 32).

A Slurm host's queue is one job array per submission, listed in
``~/.rgt/queue/slurm.jobs``::

    <array job id> <first index> <last index> <submit unix ts> <launch|append|retry>

Task k of an array runs cell k (line k of ``cells.tsv``). A task's state comes from
``squeue`` while Slurm still holds it, then from accounting (``sacct``) where the
cluster has it, else from the job-completion log (``jobcomp/filetxt``). Every line here
is the cluster's text: parsers bound it, skip what does not parse, and never raise.

OOM is a job state, not a log line (SLURM4): ``OUT_OF_MEMORY`` where the cluster
enforces memory with cgroups, ``FAILED`` plus slurmstepd's ``Exceeded job memory
limit`` (or ``oom-kill event``) in the task's output where it enforces by polling —
both read as an OOM kill here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from rgt_tui.domain.text import is_digits, printable

FIELD_CHARS = 80  # one field of Slurm's text (a reason, a node list), cut
MAX_ARRAY_TASKS = 100_000  # indices one slurm.jobs line may cover; a larger range is junk

# Slurm's states, grouped by what they mean for a cell.
PENDING_STATES = frozenset(
    {"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "SPECIAL_EXIT"}
)
RUNNING_STATES = frozenset(
    {"RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "STOPPED", "SIGNALING",
     "STAGE_OUT", "RESIZING"}
)  # fmt: skip
LIVE_STATES = PENDING_STATES | RUNNING_STATES
# Reasons a pending task waits for the user, not for the cluster (queue stop holds them).
HELD_REASONS = frozenset({"JobHeldUser", "JobHeldAdmin"})
# slurmstepd's lines for a task killed over its memory (poll-based and cgroup-based).
OOM_MARKERS = ("Exceeded job memory limit", "oom-kill event", "oom_kill event")

_TASK_ID = re.compile(r"(\d{1,20})_(\d{1,9})")
_TASK_RANGE = re.compile(r"(\d{1,20})_\[([0-9,\-]{1,2000})(?:%\d{1,9})?\]")
_DURATION = re.compile(r"(?:(\d{1,5})-)?(\d{1,6})(?::(\d{1,2}))?(?::(\d{1,2}))?")
_KEY_VALUE = re.compile(r"(?:^| )([A-Za-z]{1,40})=(\S{0,400})")


@dataclass(frozen=True)
class SlurmCell:
    """One cell's array task as Slurm last reported it.

    ``job_id``: ``<array job id>_<index>``, what ``scancel``/``scontrol`` take for one
    task; ``state``: Slurm's word (PENDING RUNNING COMPLETED FAILED OUT_OF_MEMORY
    TIMEOUT PREEMPTED NODE_FAIL CANCELLED REQUEUED …); ``exit_code``: the task's exit
    status (``None`` while it runs, or when a signal ended it: see ``signal``);
    ``oom``: killed over its memory (the state, or slurmstepd's line in its output);
    ``source``: where the state was read (squeue, sacct, jobcomp) — the evidence.
    """

    name: str
    index: int
    job_id: str
    state: str
    reason: str = ""
    node: str = ""
    elapsed_s: int | None = None
    time_left_s: int | None = None
    exit_code: int | None = None
    oom: bool = False
    source: str = ""
    signal: int | None = None
    oom_line: str = ""  # slurmstepd's line in the task's output, when that said OOM
    # Slurm requeued the task (preempted with PreemptMode=REQUEUE, a node lost, scontrol
    # requeue): how many times, and when last (a requeue resets its submit time; unix s).
    restarts: int = 0
    requeued_at: int | None = None
    # How the attempt before the requeue ended, where the accounting or completion log
    # says (NODE_FAIL, PREEMPTED, …): "" when unknown (a requeue is then called the
    # preemption it most often is).
    requeued_after: str = ""

    @property
    def live(self) -> bool:
        """Slurm still holds it: pending, or running (or on its way out)."""
        return self.state in LIVE_STATES

    @property
    def held(self) -> bool:
        """Pending because someone held it (queue stop), not waiting for resources."""
        return self.state in PENDING_STATES and self.reason in HELD_REASONS


@dataclass(frozen=True)
class ArraySubmission:
    """One line of ``slurm.jobs``: an array and the cell indices it covers (the one model
    of it: the view, queue control and the teardown gate read it)."""

    job_id: str
    first: int
    last: int
    submitted_at: int
    kind: str  # launch | append | retry


@dataclass(frozen=True)
class TaskReport:
    """One task's line from squeue, sacct or the job-completion log (the one model of a
    Slurm task: the view merges them into cells, queue control holds, kills and cancels
    them by ``task_id``). ``index`` is the cell's, None for a job that is no array task
    — or, in the job-completion log, the array's tasks that never split off (a pending
    array cancelled whole logs one line, its array id, no task id)."""

    array_id: str
    index: int | None
    state: str
    reason: str = ""
    node: str = ""
    elapsed_s: int | None = None
    time_left_s: int | None = None
    exit_code: int | None = None
    signal: int | None = None

    @property
    def task_id(self) -> str:
        """``123_4``: what scontrol and scancel take for this task (``123`` for a job)."""
        return self.array_id if self.index is None else f"{self.array_id}_{self.index}"

    def evidence(self) -> str:
        """``job 123_4 RUNNING on node1`` / ``job 123_5 PENDING (JobHeldUser)``."""
        if self.state == "PENDING":
            why = f" ({self.reason})" if self.reason and self.reason != "None" else ""
            return printable(f"job {self.task_id} PENDING{why}", 200)
        where = f" on {self.node}" if self.node and self.node != "(null)" else ""
        return printable(f"job {self.task_id} {self.state}{where}", 200)


@dataclass(frozen=True)
class Partition:
    """One partition as ``sinfo -o '%P|%a|%F'`` shows it (nodes allocated/idle/other/total)."""

    name: str
    available: str
    alloc: int
    idle: int
    other: int
    total: int


@dataclass(frozen=True)
class ClusterSide:
    """The login node's view of the cluster, for the pane: the user's jobs by state,
    the partitions' nodes, where ended states come from, and the GPU telemetry line
    (filled in by the TUI's poll from inside a running cell's allocation)."""

    my_jobs: tuple[tuple[str, int], ...] = ()
    partitions: tuple[Partition, ...] = ()
    accounting: str = ""  # "sacct", "job-completion log <path>", or why neither
    # The one-shot CLI never runs srun: the TUI's queue poll samples inside a running
    # cell's allocation and replaces this (services/slurm_telemetry.py).
    gpu_note: str = (
        "GPU telemetry: sampled inside a running cell's allocation by the TUI (srun --overlap)"
    )
    problem: str = ""  # squeue failed: the states shown are the cells' own records

    def jobs_text(self) -> str:
        """``your jobs: 2 RUNNING · 3 PENDING``; '' when squeue failed (nothing is known
        of them: "none in the queue" beside "squeue failed" read as a fact, s39 Slurm #10)."""
        if self.problem:
            return ""
        if not self.my_jobs:
            return "your jobs: none in the queue"
        return "your jobs: " + " · ".join(f"{n} {state}" for state, n in self.my_jobs)

    def line(self) -> str:
        """``cluster: your jobs: 2 RUNNING · debug 0 idle/1 alloc of 1 · … · GPU telemetry: …``:
        what the pane, the Queue tab and ``queue show`` say of the cluster."""
        parts = [self.problem, self.jobs_text(), self.partitions_text(), self.accounting]
        return "cluster: " + " · ".join(p for p in [*parts, self.gpu_note] if p)

    def partitions_text(self, limit: int = 4) -> str:
        """``gpu 2 idle/6 alloc of 8 · debug down``, the first ``limit`` partitions."""
        parts = []
        for p in self.partitions[:limit]:
            text = f"{p.name} {p.idle} idle/{p.alloc} alloc of {p.total}"
            parts.append(text if p.available == "up" else f"{text} ({p.available})")
        more = len(self.partitions) - limit
        return " · ".join(parts + ([f"+{more} more"] if more > 0 else []))


def _int(text: str) -> int | None:
    return int(text) if is_digits(text) else None


def _field(text: str) -> str:
    return printable(text.strip(), FIELD_CHARS)


def parse_duration(text: str) -> int | None:
    """Slurm's ``[days-][hours:]minutes:seconds`` (``5:03``, ``1-02:03:04``, ``00:00:07``)
    as seconds; None for ``UNLIMITED``, ``NOT_SET``, ``INVALID`` or junk."""
    m = _DURATION.fullmatch(text.strip())
    if m is None:
        return None
    days, a, b, c = m.groups()
    parts = [int(x) for x in (a, b, c) if x is not None]
    if len(parts) == 1 and days is not None:
        parts = [parts[0], 0, 0]  # "1-02" is days-hours
    while len(parts) < 3:
        parts.insert(0, 0)  # "5:03" is minutes:seconds; "7" is seconds
    hours, minutes, seconds = parts
    return (int(days or 0) * 24 + hours) * 3600 + minutes * 60 + seconds


def parse_exit(text: str) -> tuple[int | None, int | None]:
    """Slurm's ``ExitCode`` ``<exit>:<signal>`` as (exit code, signal); a signal wins:
    ``0:9`` is (None, 9), killed by SIGKILL."""
    code, _, sig = text.strip().partition(":")
    exit_code, signal = _int(code), _int(sig)
    if signal:
        return None, signal
    return exit_code, None


def parse_jobs_file(text: str) -> tuple[ArraySubmission, ...]:
    """``slurm.jobs``, oldest first; a line that does not parse (half-written) is skipped."""
    out = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) != 5:
            continue
        job, first, last, ts = (_int(f) for f in fields[:4])
        if None in (job, first, last, ts) or last < first or last - first >= MAX_ARRAY_TASKS:  # type: ignore[operator]
            continue
        kind = printable(fields[4], 10)  # launch | append | retry, or the box's junk
        out.append(ArraySubmission(fields[0], first, last, ts, kind))  # type: ignore[arg-type]
    return tuple(out)


def _task_ids(text: str) -> list[tuple[str, int]]:
    """``123_4`` → [(123, 4)]; ``123_[5-7,9%2]`` (a pending array squeue did not split)
    → its indices, bounded; anything else → []."""
    text = text.strip()
    m = _TASK_ID.fullmatch(text)
    if m:
        return [(m.group(1), int(m.group(2)))]
    m = _TASK_RANGE.fullmatch(text)
    if not m:
        return []
    out: list[tuple[str, int]] = []
    for piece in m.group(2).split(","):
        lo, _, hi = piece.partition("-")
        a, b = _int(lo), _int(hi or lo)
        if a is None or b is None or b < a or b - a >= MAX_ARRAY_TASKS:
            continue
        out += [(m.group(1), i) for i in range(a, b + 1)]
        if len(out) >= MAX_ARRAY_TASKS:
            break
    return out[:MAX_ARRAY_TASKS]


def parse_squeue_line(line: str) -> list[TaskReport]:
    """One ``squeue -h -r -o '%i|%T|%r|%N|%M|%L'`` line (job id, state, reason, node,
    elapsed, time left); the reason is whatever lies between the fixed fields."""
    fields = line.rstrip("\n").split("|")
    if len(fields) < 6:
        return []
    job, state, node, elapsed, left = fields[0], fields[1], *fields[-3:]
    reason = "|".join(fields[2:-3])
    state = state.strip().upper()
    if not state.replace("_", "").isalpha() or len(state) > 30:
        return []
    reason = "" if reason.strip() in ("None", "(null)") else _field(reason)
    return [
        TaskReport(array, index, state, reason, _field(node), parse_duration(elapsed),
                   parse_duration(left))
        for array, index in _task_ids(job)
    ]  # fmt: skip


def parse_sacct_line(line: str) -> list[TaskReport]:
    """One ``sacct -n -P -X -o JobID,State,ExitCode,Elapsed,NodeList`` line.
    ``CANCELLED by 1000`` is CANCELLED."""
    fields = line.rstrip("\n").split("|")
    if len(fields) != 5:
        return []
    state = (fields[1].split() or [""])[0].upper()
    if not state.replace("_", "").isalpha() or len(state) > 30:
        return []
    exit_code, signal = parse_exit(fields[2])
    node = "" if fields[4].strip() in ("None assigned", "(null)") else _field(fields[4])
    return [
        TaskReport(array, index, state, "", node, parse_duration(fields[3]), None, exit_code,
                   signal)
        for array, index in _task_ids(fields[0])
    ]  # fmt: skip


def parse_jobcomp_line(line: str) -> TaskReport | None:
    """One ``jobcomp/filetxt`` line (``JobId=… JobState=… ExitCode=0:0 ArrayJobId=…
    ArrayTaskId=…``); None unless it names an array task, or an array's unsplit tasks
    (``ArrayJobId=`` empty: ``JobId`` is the array, ``index`` None). Each key's LAST
    occurrence counts: the keys that matter come after the job's name, so a name
    spelling ``JobState=…`` does not decide the state."""
    values: dict[str, str] = {}
    for key, value in _KEY_VALUE.findall(line[:8192]):
        values[key] = value
    whole = values.get("ArrayJobId") == "" and not values.get("ArrayTaskId")
    if whole:  # slurm_view.sh's line for an array's unsplit tasks
        array, index = _int(values.get("JobId", "")), None
    else:
        array, index = _int(values.get("ArrayJobId", "")), _int(values.get("ArrayTaskId", ""))
    state = values.get("JobState", "").upper()
    if array is None or (index is None and not whole):
        return None
    if not state.replace("_", "").isalpha() or len(state) > 30:
        return None
    exit_code, signal = parse_exit(values.get("ExitCode", ""))
    node = values.get("NodeList", "")
    start, end = _when(values.get("StartTime", "")), _when(values.get("EndTime", ""))
    return TaskReport(
        str(array), index, state, "", "" if node == "(null)" else _field(node),
        int((end - start).total_seconds()) if start and end and end >= start else None,
        None, exit_code, signal,
    )  # fmt: skip


def _when(text: str) -> datetime | None:
    """The log's ``2026-01-31T12:00:05`` (the cluster's local time: only differences
    are taken), or None."""
    try:
        return datetime.fromisoformat(text[:19]) if len(text) >= 19 else None
    except ValueError:
        return None


@dataclass(frozen=True)
class Requeue:
    """A task Slurm requeued (slurm_view.sh's ``rq`` line): restarts, and when, last."""

    array_id: str
    index: int
    restarts: int
    at: int | None = None  # unix seconds; None when the login node could not say


def parse_requeue_line(line: str) -> Requeue | None:
    """One ``rq`` line, ``<array>_<index><TAB><restarts><TAB><unix ts or ->``; None
    for anything else."""
    fields = line.rstrip("\n").split("\t")
    if len(fields) != 3:
        return None
    m = _TASK_ID.fullmatch(fields[0].strip())
    restarts = _int(fields[1].strip())
    if m is None or not restarts or restarts > 1_000_000:
        return None
    return Requeue(m.group(1), int(m.group(2)), restarts, _int(fields[2].strip()))


def parse_partition(line: str) -> Partition | None:
    """One ``sinfo -h -o '%P|%a|%F'`` line (``debug*|up|0/1/0/1``)."""
    fields = line.split("|")
    if len(fields) != 3:
        return None
    counts = [_int(x) for x in fields[2].strip().split("/")]
    if len(counts) != 4 or None in counts:
        return None
    alloc, idle, other, total = counts  # type: ignore[misc]
    return Partition(_field(fields[0]), _field(fields[1]), alloc, idle, other, total)


def merge_tasks(
    submissions: Iterable[ArraySubmission],
    names: Mapping[int, str],
    live: Iterable[TaskReport],
    ended: Iterable[TaskReport],
    oom_lines: Mapping[str, str],
    *,
    source: str,
    requeues: Iterable[Requeue] = (),
) -> dict[str, SlurmCell]:
    """Each cell's task of the LATEST array that covers its index (a retry or an append
    supersedes the launch), by cell name: squeue's report while Slurm holds the task,
    else the ended report (``source``: sacct or jobcomp). A task no source knows is
    left out: the cell's own records then say what they can. ``requeues``: the tasks
    Slurm requeued (their restart count and when)."""
    latest: dict[int, str] = {}
    for s in submissions:
        for index in range(s.first, s.last + 1):
            if index in names:
                latest[index] = s.job_id
    wanted = {(job, index) for index, job in latest.items()}
    squeue = {(r.array_id, r.index): r for r in live if (r.array_id, r.index) in wanted}
    ended = tuple(ended)
    done = {(r.array_id, r.index): r for r in ended if (r.array_id, r.index) in wanted}
    # An array's tasks that never split off ended together (a pending array cancelled
    # whole): one report for every index of it with none of its own.
    unsplit = {r.array_id: r for r in ended if r.index is None}
    again = {(r.array_id, r.index): r for r in requeues if (r.array_id, r.index) in wanted}
    cells: dict[str, SlurmCell] = {}
    for index, job in latest.items():
        report, where = squeue.get((job, index)), "squeue"
        if report is None or (report.state not in LIVE_STATES and (job, index) in done):
            report, where = done.get((job, index)), source  # squeue has no exit code
        if report is None:
            report, where = unsplit.get(job), source
        if report is None:
            continue
        name = names[index]
        requeue = again.get((job, index))
        line = oom_lines.get(name, "")
        # slurmstepd's memory line counts only for a task that failed: one that completed
        # survived it (and a retry's output may still hold an earlier attempt's line).
        oom = report.state == "OUT_OF_MEMORY" or (report.state == "FAILED" and bool(line))
        cells[name] = SlurmCell(
            name, index, f"{job}_{index}", report.state, report.reason, report.node,
            report.elapsed_s, report.time_left_s, report.exit_code, oom, where,
            report.signal, printable(line, 200) if oom else "",
            requeue.restarts if requeue else 0, requeue.at if requeue else None,
            _ended_before(requeue, done.get((job, index)), where),
        )  # fmt: skip
    return cells


def _ended_before(requeue: Requeue | None, ended: TaskReport | None, where: str) -> str:
    """The state an ended record gives the attempt before a requeue, when the task's
    own report is a live one (squeue's) and the record is not it ("" otherwise)."""
    if requeue is None or ended is None or where != "squeue":
        return ""
    state = ended.state
    return state if state in ("NODE_FAIL", "BOOT_FAIL", "PREEMPTED") else ""
