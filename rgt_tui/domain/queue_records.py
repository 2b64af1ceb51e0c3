"""The records a queue leaves on its box, parsed (pure; the layout is in docs/queues.md).

``~/.rgt/queue/runner.state``::

    launch <unix_ts> <boot_id> <detach> <start_index> <run_queue script path> <pid>
    stop <unix_ts> user|kill      (rgt-tui queue stop, or kill --then stop: a request)
    stopped <unix_ts> <index>     (the runner honoured it: cell <index> was not started)
    done <unix_ts> <n_ok> <n_failed>

``~/.rgt/queue/cells/<name>.state``::

    start <unix_ts> <boot_id> <pid>
    code tree=<64 hex> commit=<hex|-> dirty=<0|1>   (when the launch knew its code, U42)
    kill <unix_ts> user|group <next|stop>   (before the attempt's end: rgt-tui queue
                                  kill, or ``group`` when rgt-tui stopped a rank of a
                                  group because another rank failed; an older rgt-tui
                                  wrote ``user`` for both)
    end <unix_ts> <exit_code>
    retry <unix_ts> <aside path|->    (rgt-tui queue retry: run it again; its {out} moved)
    skip <unix_ts> <reason...>        (rgt-tui queue move/skip: never run it on this box)

Old records parse as before: a reader that does not know a record skips it.

``~/.rgt/queue/cells/<name>.oom`` (the cgroup's oom_kill counter around each attempt,
``?`` where the box does not expose it)::

    start <unix_ts> <count>
    end <unix_ts> <count>

``~/.rgt/queue/cells.tsv``: ``<index>\\t<name>\\t<command>`` — the rendered cells the
runner reads, one per line, append-only.

Files are appended to while being read, so a line that does not parse (a half-written
last line) is skipped rather than treated as an error.

Every string these records carry is the box's text: the ones rgt-tui shows (cell names,
the runner script, who killed, a skip's reason, a retry's aside path) are made printable
here, where they enter (``text.printable``, uncut, so a name stays one name). A cell name
with a control character is never one rgt-tui wrote (``cells_tsv_line`` refuses it): it
is kept at its index, so the counts and the cell the runner runs stay true, under its
escaped name (``\x1b]52;…``), which no action can reach on the box (the box finds no cell
by that name and refuses). The box's ids (boot id) stay as written: they are compared,
never shown raw by the CLI, whose output is fenced besides (``cli/fence.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from rgt_tui.domain.code_identity import CodeIdentity
from rgt_tui.domain.text import printable

_TASK_ID = re.compile(r"[0-9]{1,18}_[0-9]{1,9}")  # a Slurm array task, as a stop names it
_HELD_MAX = 3 + 100_000  # the stop record's fields read: a box's line is not trusted


@dataclass(frozen=True)
class RunnerDone:
    """The runner's final record for one launch."""

    ts: int
    n_ok: int
    n_failed: int


@dataclass(frozen=True)
class RunnerLaunch:
    """One ``launch`` record, with its ``done`` record once the runner finished."""

    ts: int
    boot_id: str
    detach: str  # tmux | nohup | none (started by hand in the foreground)
    start_index: int
    script: str
    pid: int
    done: RunnerDone | None = None
    # Queue control: when a stop was asked for this launch (`stop` record) and by what
    # (``user``: queue stop; ``kill``: queue kill --then stop); the index of the first
    # cell the runner did not start because of it (`stopped` record).
    stop_requested_at: int | None = None
    stop_by: str = ""
    stopped_before: int | None = None
    # On Slurm: the array tasks the stop held (``JOB_INDEX``), named in its record.
    stop_held: tuple[str, ...] = ()

    @property
    def stopping(self) -> bool:
        """A stop was asked for and the runner has not finished: it ends after the
        current cell."""
        return self.done is None and self.stop_requested_at is not None

    @property
    def stopped_by_user(self) -> bool:
        """The runner ended this launch early because the user asked it to."""
        return self.stopped_before is not None


@dataclass(frozen=True)
class CellAttempt:
    """One run of a cell: its ``start`` record and, once it ended, its ``end`` record."""

    ts: int
    boot_id: str
    pid: int
    end_ts: int | None = None
    exit_code: int | None = None
    oom_at_start: int | None = None  # cgroup oom_kill counter when the attempt started
    oom_at_end: int | None = None
    # The code this attempt ran (the ``code`` record after its start); None when the
    # launch recorded none (before rgt-tui recorded code, or no ``code`` configured).
    code: CodeIdentity | None = None
    # rgt-tui queue kill: who asked (``user``; ``group``: rgt-tui stopped this rank of a
    # group because another rank failed) and what the queue did next (next|stop); ""
    # when no kill record came before this attempt's end. Any other word is kept as
    # written (made printable): the views say it as the box's text.
    killed_by: str = ""
    kill_then: str = ""
    # On Slurm (slurm_task.sh): when the first TERM reached the cell (its ``signal``
    # record: the walltime's warning, a scancel or a preemption); None when none did.
    signalled_at: int | None = None

    @property
    def ended(self) -> bool:
        """Whether an ``end`` record closed this attempt."""
        return self.exit_code is not None


# A ``retry`` record's aside for a resume: its {out} kept as it is (queue_ctl.sh's OUT
# "="), told apart from a retry that found nothing to set aside ("-").
RESUMED = "="


@dataclass(frozen=True)
class CellMarks:
    """The queue-control records of one cell besides its attempts.

    ``skipped``: the reason of a ``skip`` record that is the cell's last say (no attempt
    started after it); ``retry_aside``: a ``retry`` record still waiting for its attempt
    (the path its outputs were moved to, "-" when there were none, ``RESUMED`` for a
    resume); ``retries``: every retry record, oldest first, as (ts, aside).
    """

    skipped: str | None = None
    skipped_at: int | None = None
    retry_aside: str | None = None
    retries: tuple[tuple[int, str], ...] = ()
    # The state file holds bytes but no record rgt-tui writes (NULs a crash left, a
    # line cut by a full disk, no read permission): what the cell ran is unknown.
    unreadable: bool = False

    @property
    def retry_pending(self) -> bool:
        """A retry was asked for and its attempt has not started yet."""
        return self.retry_aside is not None


@dataclass(frozen=True)
class DeployedCell:
    """One line of ``cells.tsv``: what the runner will run as cell ``index``."""

    index: int
    name: str
    command: str


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def parse_runner_state(text: str) -> tuple[RunnerLaunch, ...]:
    """Every launch of ``runner.state``, oldest first, each with its done record."""
    launches: list[RunnerLaunch] = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 7 and fields[0] == "launch":
            ts, start, pid = _int(fields[1]), _int(fields[4]), _int(fields[-1])
            if ts is None or start is None or pid is None:
                continue
            # The script path may hold spaces (a HOME with a space): it is everything
            # between the start index and the pid.
            script = printable(line.split(None, 5)[5].rsplit(None, 1)[0], None)
            detach = printable(fields[3], None)
            launches.append(RunnerLaunch(ts, fields[2], detach, start, script, pid))
        elif len(fields) >= 2 and fields[0] == "stop" and launches and launches[-1].done is None:
            ts = _int(fields[1])
            if ts is not None and launches[-1].stop_requested_at is None:
                by = printable(fields[2], None) if len(fields) > 2 else "user"
                held = tuple(f for f in fields[3:_HELD_MAX] if _TASK_ID.fullmatch(f))
                launches[-1] = replace(
                    launches[-1], stop_requested_at=ts, stop_by=by, stop_held=held
                )
        elif len(fields) == 3 and fields[0] == "stopped" and launches and launches[-1].done is None:
            index = _int(fields[2])
            if index is not None and _int(fields[1]) is not None:
                launches[-1] = replace(launches[-1], stopped_before=index)
        elif len(fields) == 4 and fields[0] == "done" and launches:
            numbers = [_int(f) for f in fields[1:]]
            if None in numbers or launches[-1].done is not None:
                continue
            ts, ok, failed = numbers  # type: ignore[misc]
            launches[-1] = replace(launches[-1], done=RunnerDone(ts, ok, failed))
    return tuple(launches)


def parse_cell_state(text: str, oom_text: str = "") -> tuple[CellAttempt, ...]:
    """Every attempt of one cell, oldest first, with the oom_kill counters beside them."""
    attempts: list[CellAttempt] = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[0] == "start":
            ts, pid = _int(fields[1]), _int(fields[3])
            if ts is not None and pid is not None:
                attempts.append(CellAttempt(ts, fields[2], pid))
        elif len(fields) == 3 and fields[0] == "end" and attempts and not attempts[-1].ended:
            ts, code = _int(fields[1]), _int(fields[2])
            if ts is not None and code is not None:
                attempts[-1] = replace(attempts[-1], end_ts=ts, exit_code=code)
        elif fields and fields[0] == "code" and attempts and attempts[-1].code is None:
            # The box's text: a line that is not a CodeIdentity record is no identity.
            identity = CodeIdentity.parse(line.split(None, 1)[1] if len(fields) > 1 else "")
            if identity is not None:
                attempts[-1] = replace(attempts[-1], code=identity)
        elif (
            len(fields) >= 3
            and fields[0] == "kill"
            and attempts
            and not attempts[-1].ended  # a kill recorded after the end did not end it
            and not attempts[-1].killed_by
            and _int(fields[1]) is not None
        ):
            then = printable(fields[3], None) if len(fields) > 3 else ""
            by = printable(fields[2], None)
            attempts[-1] = replace(attempts[-1], killed_by=by, kill_then=then)
        elif (
            len(fields) == 3
            and fields[0] == "signal"
            and attempts
            and not attempts[-1].ended
            and attempts[-1].signalled_at is None
        ):
            attempts[-1] = replace(attempts[-1], signalled_at=_int(fields[1]))
    return _with_oom(attempts, oom_text)


def parse_cell_marks(text: str) -> CellMarks:
    """The ``retry`` and ``skip`` records of one cell's state file (the box's text).

    The last ``start``/``end``/``retry``/``skip`` record says which one is in force: a
    retry or skip followed by a new attempt is history, not a pending mark.
    """
    last = ""
    skipped: str | None = None
    skipped_at: int | None = None
    aside: str | None = None
    retries: list[tuple[int, str]] = []
    for line in text.splitlines():
        fields = line.split(None, 2)
        if not fields or fields[0] not in ("start", "end", "retry", "skip"):
            continue
        if fields[0] in ("retry", "skip") and (len(fields) < 2 or _int(fields[1]) is None):
            continue  # half-written
        last = fields[0]
        if last == "retry":
            retries.append((int(fields[1]), printable(fields[2], None) if len(fields) > 2 else "-"))
            aside = retries[-1][1]
        elif last == "skip":
            skipped_at = int(fields[1])
            skipped = printable(fields[2], None) if len(fields) > 2 else ""
    return CellMarks(
        skipped=skipped if last == "skip" else None,
        skipped_at=skipped_at if last == "skip" else None,
        retry_aside=aside if last == "retry" else None,
        retries=tuple(retries),
    )


def _with_oom(attempts: list[CellAttempt], oom_text: str) -> tuple[CellAttempt, ...]:
    """Pair the n-th ``start``/``end`` counter line with the n-th attempt."""
    starts: list[int | None] = []
    ends: dict[int, int | None] = {}
    for line in oom_text.splitlines():
        fields = line.split()
        if len(fields) != 3 or _int(fields[1]) is None:
            continue
        if fields[0] == "start":
            starts.append(_int(fields[2]))
        elif fields[0] == "end" and starts:
            ends[len(starts) - 1] = _int(fields[2])
    out = []
    for i, attempt in enumerate(attempts):
        if i < len(starts):
            attempt = replace(attempt, oom_at_start=starts[i], oom_at_end=ends.get(i))
        out.append(attempt)
    return tuple(out)


def parse_cells_tsv(text: str) -> tuple[DeployedCell, ...]:
    """The deployed cells, in order; stops at the first line that is not complete."""
    cells: list[DeployedCell] = []
    lines = text.split("\n")
    # The last element is "" for a file ending in a newline, or a line still being written.
    for line in lines[:-1]:
        parts = line.split("\t", 2)
        if len(parts) != 3 or _int(parts[0]) != len(cells):
            break
        # The name made printable (module docstring); the command stays as written: it
        # is compared with the local rendering (tabs included) and never shown unfenced.
        cells.append(DeployedCell(len(cells), printable(parts[1], None), parts[2]))
    return tuple(cells)


def cells_tsv_line(index: int, name: str, command: str) -> str:
    """One ``cells.tsv`` line, newline included."""
    if "\t" in name or "\n" in name or "\n" in command:
        raise ValueError(f"cell {name!r}: tabs and newlines cannot go into cells.tsv")
    if printable(name, None) != name:  # the reader would show it escaped (docstring)
        raise ValueError(f"cell {printable(name)}: a cell name cannot hold control characters")
    return f"{index}\t{name}\t{command}\n"


def tmux_session_name(host: str) -> str:
    """``rgt-<host>``: the tmux session a host's queue runs in.

    tmux turns ``.`` and ``:`` in session names into ``_``; doing it here keeps the name
    rgt-tui looks for equal to the one tmux shows.
    """
    return "rgt-" + host.replace(".", "_").replace(":", "_")


def parse_oom_counter(text: str) -> int | None:
    """The ``oom_kill`` count of a cgroup ``memory.events`` (v2) or ``memory.oom_control`` (v1)."""
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[0] == "oom_kill":
            return _int(fields[1])
    return None
