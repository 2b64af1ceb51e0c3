"""Queue control: stop a queue after its current cell, kill the running cell, retry cells,
and skip a cell (what ``queue move`` leaves on the box it moves a cell from).
These are the box runner's forms (``services.queue.box_backend``); the Slurm backend
(``services.queue.slurm.backend``) builds its own on the same results and records.

Every action is a record on the box (docs/queues.md, "Queue control"), written by a verb
of ``scripts/queue_ctl.sh`` under the queue lock and read by the runner, never a signal
to it: ``stop`` in runner.state; ``kill``, ``retry`` and ``skip`` in the cell's state
file. So the Queue tab and ``queue show`` show each action from the box's records.

A kill runs detached on the box (setsid nohup) and returns at once: killing a process
tree can drop the SSH session that asked (U1, U4), so the result is read in separate
calls afterwards, reconnecting if the session went — ``KillResult`` says what that
check saw, not what was hoped.

A retry keeps "index k always names the same cell": nothing in cells.tsv or queue.txt
changes (the launch plan's prefix checks hold). The cell gets a ``retry`` record after
its ``{out}`` folder is renamed aside (``<out>.before-retry-<time>``, never deleted), so
it starts over: the run finds no checkpoint in ``{out}`` to resume from (a relaunch from
the cell, ``launch --start N``, leaves ``{out}`` in place and resumes); a
running runner runs it before its next cell, and a stopped queue is launched past its
last cell (``plan_launch(retry_only=True)``), so only the retried cells run.

Over 450 lines on purpose: stop, kill, retry and skip are four verbs of one protocol
(records written under the queue lock by ``queue_ctl.sh``, read back through one view);
split by verb, each module would carry the same view and answer parsing.
"""

from __future__ import annotations

import asyncio
import difflib
import shlex
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.queue_file import expand_home
from rgt_tui.domain.queue_records import RESUMED, tmux_session_name
from rgt_tui.domain.queue_state import (
    DONE,
    FAILED,
    INTERRUPTED,
    KILLED,
    PENDING,
    Q_RUNNING,
    RETRY,
    RUNNING,
    SKIPPED,
    SLURM_ENDED,
    CellView,
    QueueView,
    queue_is,
)
from rgt_tui.domain.text import is_digits, printable
from rgt_tui.domain.units import plural
from rgt_tui.services.box_ctl import QueueError, refusal, run_ctl
from rgt_tui.services.journal import torn_down_refusal
from rgt_tui.services.queue.box import probe
from rgt_tui.services.queue.records import view_from_facts
from rgt_tui.services.queue.skip import skip_cell  # re-exported: its callers use this name
from rgt_tui.transport import Transport

if TYPE_CHECKING:  # the launch machinery loads only when a retry launches
    from rgt_tui.services.queue.launch import LaunchPlan, LaunchResult

KILL_GRACE_S = 10  # TERM, then KILL what is left after this long
KILL_THEN = ("next", "stop")
# Who stopped a killed cell, as its record says: the user (queue kill, X), or its group
# (rgt-tui's watch stopping a rank because another rank failed: services.queue.group).
KILL_WHO = ("user", "group")
RETRYABLE = (FAILED, KILLED, INTERRUPTED, *SLURM_ENDED)  # Slurm's OOM, TIMEOUT, … (issue 32)

__all__ = [
    "KillResult", "RetryPlan", "RetryResult", "StopResult", "kill_cell", "plan_retry",
    "retry_cells", "skip_cell", "stop_queue",
]  # fmt: skip


async def _view(host: HostConfig, transport: Transport) -> tuple[QueueView, str]:
    """The queue view and the box's HOME, in one probe."""
    await transport.connect()
    facts = await probe(
        transport,
        host.name,
        session=tmux_session_name(host.name),
        workdir=host.workdir,
        durable_dir=host.durable_dir,
    )
    return view_from_facts(host, facts), facts.home


def no_such_cell(view: QueueView, name: str) -> str:
    """``no cell named X in the box's queue; did you mean 'Y'? Its cells: …`` (a typo got
    neither, where `logs` and the host names give both: hour s20b #9)."""
    names = [c.name for c in view.cells]
    close = difflib.get_close_matches(name, names, n=1)
    hint = f" (did you mean '{printable(close[0])}'?)" if close else ""
    shown = ", ".join(printable(n) for n in names[:12]) + (" …" if len(names) > 12 else "")
    return f"no cell named {printable(name)} in the box's queue{hint}; its cells: {shown or 'none'}"


def _cell(view: QueueView, name: str) -> CellView | None:
    return next((c for c in view.cells if c.name == name), None)


def _answer(stdout: str, key: str) -> list[str]:
    """The tab-separated fields after ``key`` on the box's answer line; [] when absent."""
    for line in stdout.splitlines():
        if line.startswith(key + "\t"):
            return [printable(f, None) for f in line.split("\t")[1:]]  # the box's text
    return []


# --- stop -----------------------------------------------------------------------------


@dataclass(frozen=True)
class StopResult:
    """A stop request the box recorded (``already``: one was recorded before)."""

    host: str
    already: bool
    current: CellView | None  # the cell the queue ends after (None: between cells)
    # A scheduler that holds pending tasks (Slurm): those held, those it would not hold
    # ("123_4: why"), and the tasks left to finish (their evidence); ``holds`` says so.
    held: tuple[str, ...] = ()
    not_held: tuple[str, ...] = ()
    running: tuple[str, ...] = ()
    holds: bool = False
    # Where a relaunch goes on (``QueueView.start_after_stop``); None: no cell is left.
    start: int | None = None
    # Cells waiting for their retry, which the stop leaves waiting: `queue retry` runs
    # them alone (a launch from ``start`` would run later done cells again: s20b #2).
    waiting: tuple[str, ...] = ()

    def waiting_words(self) -> str:
        """``a waits to run again (a retry or resume asked earlier): rgt-tui queue retry
        box1 a (R on its row in the Queue tab) runs it alone`` ("" when no retry waits): the stop leaves it waiting; the
        app's notice says the same words, so both ways are named (the command alone sent
        a TUI user to a shell: hour s33 TUI #4)."""
        if not self.waiting:
            return ""
        one = len(self.waiting) == 1
        return (
            f"{', '.join(self.waiting)} {'waits' if one else 'wait'} to run again (a retry or "
            f"resume asked earlier): rgt-tui queue retry {self.host} "
            f"{' '.join(self.waiting)} (R on {'its row' if one else 'each row'} in the Queue "
            f"tab) runs {'it' if one else 'them'} alone"
        )

    def moved_on(self, asked: str | None) -> str:
        """Words that lead the summary when the cell the user confirmed the stop for
        (``asked``) ended before the stop reached the box and another had started: the
        stop now ends after that one (a long retried cell ran after the dialog said it
        would not start: hour s20c #5). "" when the stop holds as confirmed."""
        cur = self.current
        if asked is None or cur is None or cur.name == asked or self.holds:
            return ""
        return (
            f"{asked} ended before the stop reached the box, and cell {cur.index} "
            f"({cur.name}) had started: the queue stops after that one instead — to stop "
            f"now, kill it (X in the Queue tab; rgt-tui queue kill {self.host} {cur.name} "
            "--then stop). "
        )

    def summary(self, asked: str | None = None) -> str:
        """What the stop did and how to go on from it, in one message (the Queue tab's
        notice; the command line prints the same words); ``asked``: the cell the user
        confirmed the stop for, when known."""
        moved, rest = self.moved_on(asked), self._summary()
        return moved + rest[:1].upper() + rest[1:] if moved else rest

    def _summary(self) -> str:
        cur = self.current
        what = f"cell {cur.index} ({cur.name})" if cur else "the current cell"
        if self.holds:
            if not self.held:
                return "no pending Slurm task to hold: the running cells finish, nothing follows"
            ids = " ".join(self.held)
            again = " (a stop was recorded before)" if self.already else ""
            return (
                f"held {plural(len(self.held), 'pending Slurm task')}{again}: {ids}; the running "
                f"cells finish. To go on: scontrol release {ids} on the login node (a launch "
                "is refused while they wait in squeue)"
            )
        said = "was already asked to stop" if self.already else "stops"
        retries = f"; {self.waiting_words()}" if self.waiting else ""
        if self.start is None:
            left = "no other cell is left" if self.waiting else "no cell is left"
            return f"the queue {said} after {what}; {left} to start after it{retries}"
        return (
            f"the queue {said} after {what}; later, rgt-tui launch {self.host} --start "
            f"{self.start} (L in the Queue tab) goes on from where it stopped{retries}"
        )


async def stop_queue(host: HostConfig, transport: Transport, *, who: str = "user") -> StopResult:
    """Ask the runner to stop before its next cell (a ``stop`` record in runner.state,
    saying ``who``: ``user``, or ``group`` for a group's own stop of a rank).

    QueueError (code ``not-running``) when no queue runs on the box.
    """
    await transport.connect()
    result = await run_ctl(transport, "stop", tmux_session_name(host.name), who)
    error = refusal(host.name, result)
    if error is not None:
        raise error
    state = _answer(result.stdout, "stop")
    # Read after the stop is recorded: the cell running now is the one it ends after.
    # Read before, a cell that started meanwhile (a waiting retry) was not the one named
    # (hour s20c #5).
    view, _ = await _view(host, transport)
    return StopResult(
        host.name, bool(state) and state[0] == "already", view.current,
        start=view.start_after_stop,
        waiting=tuple(c.name for c in view.cells if c.status == RETRY),
    )  # fmt: skip


# --- kill -----------------------------------------------------------------------------


@dataclass(frozen=True)
class KillResult:
    """What the check after a kill saw (a separate call from the kill's own)."""

    host: str
    name: str
    pid: int
    then: str  # next | stop
    dropped: bool  # the kill's SSH session went away (U1: expected, not an error)
    ended: bool  # the cell's attempt has its end record now
    cell: CellView | None  # the cell as the check saw it
    view: QueueView | None  # the whole queue as the check saw it
    task: str = ""  # on a Slurm host: the task scancel'ed (``123_4``), in place of a pid

    def summary(self, *, asked: bool = True) -> str:
        """One line for the CLI and the notification: what the check saw. ``asked``: the
        stop was the user's choice (False: the kill of the last cell, which stops the
        queue so that nothing appended meanwhile starts)."""
        dropped = " (the SSH session dropped with the kill, as it may: U1)" if self.dropped else ""
        what = f"Slurm job {self.task}" if self.task else f"pid {self.pid}"
        if self.cell is None or self.view is None:
            return f"{self.host}: kill sent to cell {self.name} ({what}){dropped}; the check could not read the queue"
        if not self.ended:
            return (
                f"{self.host}: cell {self.name} ({what}) is still {self.cell.label} after "
                f"the kill{dropped} — look again: rgt-tui queue show {self.host}"
            )
        after = self.view.current
        if (self.then == "stop" or self.view.stop_requested) and self.view.state == Q_RUNNING:
            # Read before the runner wrote its stop: "the queue is running" beside "queue
            # stopped by the user" on the screen (a user's hour).
            nxt = f"the queue stops{', as asked' if asked else ''}: no further cell starts"
        elif self.then == "stop":
            # As asked, whatever the state's name: a retry's launch that ends reads
            # "finished", and the end notice said "stopped" (h484 #1).
            nxt = "the queue stopped, as asked" if asked else "the queue ended: no cell followed it"
        elif after is None:
            nxt = queue_is(self.view.state)
        else:
            nxt = f"the queue went on to cell {after.index} ({after.name})"
        # h481 #2: the cells the stop leaves, counted as the queue's end notice counts
        # them; no way on here (a Slurm stop holds them: a launch is refused until they
        # are released, review h483 #1), the end notice and the Queue tab say it.
        left = self.view.count(PENDING) + self.view.count(RETRY) if self.then == "stop" else 0
        if left:
            nxt += f"; {plural(left, 'cell')} not run"
        return f"{self.host}: cell {self.name} {self.cell.label}{dropped}; {nxt}"


async def kill_cell(
    host: HostConfig,
    transport: Transport,
    name: str | None = None,
    *,
    then: str = "next",
    grace_s: int = KILL_GRACE_S,
    check_timeout_s: float | None = None,
    who: str = "user",
) -> KillResult:
    """Kill cell ``name`` (None: the running one) now; the queue goes on (``then="next"``)
    or stops (``"stop"``). ``who`` stopped it: ``"user"``, or ``"group"`` when rgt-tui
    stops a rank because another rank of its group failed (the views then read
    "stopped with its group", not "killed by the user").

    The box records ``kill <ts> <who> <then>`` in the cell's state, then TERMs its process
    tree and KILLs what is left after ``grace_s``, from a detached process. A dropped
    session is expected (U1); the result is read in new calls until the attempt's end
    record is there or ``check_timeout_s`` (default: the grace plus 20 s) passes.
    QueueError (code ``not-running``) when that cell does not run now.
    """
    if then not in KILL_THEN:
        raise ValueError(f"then must be next or stop, not {then!r}")
    if who not in KILL_WHO:
        raise ValueError(f"who must be user or group, not {who!r}")
    view, _ = await _view(host, transport)
    current = view.current
    if name is None:
        if current is None:
            raise QueueError(
                host.name, "no cell is running: there is nothing to kill", code="not-running"
            )
        name = current.name
    cell = _cell(view, name)
    if cell is None:
        raise QueueError(host.name, no_such_cell(view, name), code="unknown")
    if cell.status != RUNNING:
        raise QueueError(
            host.name, f"cell {name} is {cell.label}, not running: there is nothing to kill",
            code="not-running",
        )  # fmt: skip
    pid, dropped = 0, False
    try:
        result = await run_ctl(
            transport, "kill", tmux_session_name(host.name), name, then, max(0, int(grace_s)),
            who,
        )  # fmt: skip
        error = refusal(host.name, result)
        if error is not None:
            raise error
        fields = _answer(result.stdout, "killing")
        pid = int(fields[0]) if fields and is_digits(fields[0]) else 0
    except TransportError:
        dropped = True  # U1: the kill may take the asking session with it; check anew
    timeout = check_timeout_s if check_timeout_s is not None else grace_s + 20.0
    return await _check_kill(host, transport, name, pid, then, dropped, timeout)


async def _check_kill(
    host: HostConfig, transport: Transport, name: str, pid: int, then: str, dropped: bool,
    timeout: float,
) -> KillResult:  # fmt: skip
    """Read the queue in new calls until the killed attempt ended (or ``timeout``)."""
    deadline = time.monotonic() + timeout
    view: QueueView | None = None
    while True:
        try:  # a dropped connection is opened again here (connect() when not connected)
            view, _ = await _view(host, transport)
        except TransportError:
            dropped, view = True, None
        cell = _cell(view, name) if view is not None else None
        ended = cell is not None and cell.status != RUNNING
        # With "go on", the runner starts the next cell a moment after the end record:
        # look until it has (or the queue ended), so the report says where it went.
        settled = then == "stop" or view is None or not _between_cells(view)
        if (ended and settled) or time.monotonic() >= deadline:
            return KillResult(host.name, name, pid, then, dropped, ended, cell, view)
        await asyncio.sleep(0.3)  # polling a box: the next look, not a wait for a result


def _between_cells(view: QueueView) -> bool:
    """The runner is alive but runs no cell yet: it is about to start the next one."""
    return view.current is None and view.runner_alive and view.state == Q_RUNNING


# --- retry ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RetryPlan:
    """What a retry would do, or why it must not; shown before ``retry_cells``."""

    host: str
    cells: tuple[CellView, ...]
    outs: tuple[str, ...]  # each cell's {out} on the box ("-": its template has none)
    running: bool  # the runner is alive: it runs them before its next cell
    allow_done: bool = False
    launch: LaunchPlan | None = None  # the launch that runs them when no queue runs
    problems: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    # The scheduler that runs the cells again as a new job array of them where no runner
    # takes them (its name, "Slurm", for the CLI and the dialog); "" on the box runner.
    submits: str = ""
    # What the queue's launch acknowledged (services.queue.launch_acks), as (check, its failure
    # then): applied to the retry's launch, or (``launch_acks=False``) revoked for it.
    launch_acks: tuple[tuple[str, str], ...] = ()
    revoked: bool = False
    # The checkpoints the retry sets aside, as (cell, its newest one relative to {out}),
    # looked for by whoever shows the plan (``controllers.launch_plan``); () when none
    # was found or nobody looked. A relaunch from the cell would resume from it.
    checkpoints: tuple[tuple[str, str], ...] = ()
    # The box was asked for them and answered: ``checkpoints`` () then means none there
    # (a Resume would start the run over, its {out} kept), not "not looked for".
    checkpoints_looked: bool = False
    # Those of ``checkpoints`` the last verify here did not pass, as (cell, its status,
    # the cell's newest checkpoint that did pass, relative to {out}, or ""): a relaunch
    # would resume from a file that does not load (hour s23b #6).
    failed_verify: tuple[tuple[str, str, str], ...] = ()
    # The names asked for that are no cell of the box's queue (a typo: bad input, not a
    # refusal of a real cell); each is one of ``problems`` too.
    unknown: tuple[str, ...] = ()
    # Cells already waiting for their retry on a stopped queue: nothing to mark, the
    # launch runs them (a stop left them stranded: hour s20b #2).
    waiting: tuple[CellView, ...] = ()
    # A resume: each cell runs again with its {out} as it is, nothing set aside, so a run
    # that loads its latest checkpoint goes on from it. Without it, a killed cell with done
    # cells after it could resume only by a relaunch from it, which ran them all again.
    resume: bool = False
    # Other cells of the queue set to run again earlier (a retry or resume asked before):
    # the runner that runs these runs them too (h481 #3: "launched for this cell only"
    # while a cell set to resume before the stop ran after it, two more paid minutes).
    others_waiting: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when nothing stops the retry."""
        return not self.problems and (self.launch is None or self.launch.ok)

    def with_others(self) -> str:
        """`` (with b, also set to run again)``, or "" when no other cell waits."""
        names = self.others_named()
        return f" (with {names}, also set to run again)" if names else ""

    def others_named(self) -> str:
        """``b, c and 2 more``: the other cells set to run again ("" when none)."""
        others = self.others_waiting
        names = ", ".join(printable(n, 60) for n in others[:MAX_OTHERS])
        return names + (f" and {len(others) - MAX_OTHERS} more" if len(others) > MAX_OTHERS else "")


MAX_OTHERS = 5  # other waiting cells named in a retry's words


@dataclass(frozen=True)
class RetryResult:
    """The cells the box marked for a retry, where their outputs went, and how they run."""

    host: str
    aside: tuple[tuple[str, str], ...]  # (name, where its outputs went, "-": none)
    running: bool  # the running runner takes them
    launched: LaunchResult | None = None
    job_id: str = ""  # on a Slurm host: the array job the retry submitted
    unrecorded: str = ""  # why the launch's acknowledgements were not recorded ("": they were)


def cell_out(host: HostConfig, home: str, name: str, command: str) -> str:
    """The cell's ``{out}`` (``<durable_dir>/<name>``) when its deployed command uses it,
    else "-" (a template without ``{out}`` leaves nothing of the cell's own to set aside)."""
    out = expand_home(host.durable_dir, home).rstrip("/") + "/" + name
    return out if shlex.quote(out) in command else "-"


async def plan_retry(
    fleet: Fleet,
    host: HostConfig,
    transport: Transport,
    names: Iterable[str],
    *,
    allow_done: bool = False,
    acks: Iterable[str] = (),
    launch_acks: bool = True,
    refused: dict[str, str] | None = None,
    with_launch: bool = True,
    resume: bool = False,
) -> RetryPlan:
    """Check each named cell can be retried; plan the launch that runs them if no queue runs.
    ``resume``: the cells keep their ``{out}`` and resume (``RetryPlan.resume``).

    That launch runs preflight: a failed check refuses it unless acknowledged in ``acks``,
    by the host's ``preflight_ack``, or by the launch of the queue on the box (recorded
    by ``services.queue.launch_acks``; ``launch_acks=False`` revokes those for this retry).

    ``refused``: cells a scheduler refuses now, with why (a task it still holds);
    ``with_launch=False``: no launch is planned (a scheduler submits the cells itself).

    Retryable: failed, killed or interrupted; done only with ``allow_done`` (its verified
    results would be set aside and made again). Refused: running (kill it first), never
    run, already waiting for a retry, moved/skipped, unknown.
    """
    wanted = list(dict.fromkeys(n.strip() for n in names if n.strip()))
    if not wanted:
        raise ValueError("name at least one cell to retry")
    await transport.connect()
    facts = await probe(
        transport, host.name, session=tmux_session_name(host.name),
        workdir=host.workdir, durable_dir=host.durable_dir,
    )  # fmt: skip
    view = view_from_facts(host, facts)
    commands = {c.name: c.command for c in facts.deployed}
    problems: list[str] = []
    torn_down = await asyncio.to_thread(torn_down_refusal, fleet, host.name)
    if torn_down is not None:  # a live runner would run the retry where nothing pulls it
        problems.append(torn_down)
    warnings: list[str] = []
    cells: list[CellView] = []
    outs: list[str] = []
    live = refused or {}
    unknown: list[str] = []
    waiting: list[CellView] = []
    for name in wanted:
        cell = _cell(view, name)
        if (
            with_launch and cell is not None and cell.status == RETRY
            and not view.runner_alive and name not in live
        ):  # fmt: skip
            waiting.append(cell)  # marked already: the retry's launch runs it
            continue
        why = live.get(name) or _not_retryable(cell, name, allow_done or resume, view, host.name)
        if not why and resume and cell is not None and cell.status == DONE:
            # Said first, not "needs --done" and then this (the review of s43 #4).
            why = (
                f"cell {name} is done (exit 0): it has nothing to resume — to run it over, "
                "retry it without --resume (with --done)"
            )
        if why:
            problems.append(why)
            if cell is None and name not in live:
                unknown.append(name)
            continue
        assert cell is not None
        cells.append(cell)
        out = cell_out(host, facts.home, name, commands.get(name, ""))
        outs.append(out)
        if out == "-" and not resume:
            warnings.append(
                f"{name}: its command has no {{out}} under durable_dir: nothing of its own to set aside"
            )
        if cell.status == DONE:
            warnings.append(
                f"{name} finished with exit 0: its outputs are set aside and made again"
            )
    if with_launch and view.runner_alive and view.stop_requested and cells:
        # The runner reads the stop before a retry: the outputs were set aside at once and
        # the cell then never ran, while the retry said "the running queue runs it" (s36
        # acts hour #4). Once the queue has stopped, a retry launches for it alone.
        problems.append(
            f"a stop was asked: {host.name}'s queue ends after its current cell, before any "
            "retry — retry once it has stopped (then it runs alone); nothing was set aside"
        )
    if with_launch and view.runner_alive and cells and not problems:
        warnings += await _running_code_note(fleet, host, transport)
    if with_launch and view.runner_alive and cells and not problems:
        # (An idle queue's retry launches it, and that launch refuses the edit itself.)
        warnings += await _edited_line_note(fleet, host, transport, view)
    launch_plan = None
    if not with_launch:
        return RetryPlan(
            host.name, tuple(cells), tuple(outs), view.runner_alive, allow_done, None,
            tuple(problems), tuple(warnings), unknown=tuple(unknown), resume=resume,
        )  # fmt: skip
    inherited: tuple[tuple[str, str], ...] = ()
    if not problems and not view.runner_alive:
        from rgt_tui.services.queue.launch import plan_launch
        from rgt_tui.services.queue.launch_acks import load_launch_acks

        record = await asyncio.to_thread(load_launch_acks, fleet, host.name)
        inherited = record.acks if record is not None and record.belongs_to(view) else ()
        applied = tuple(name for name, _ in inherited) if launch_acks else ()
        launch_plan = await plan_launch(
            fleet, host, transport, acks=(*acks, *applied), retry_only=True
        )
    others = tuple(c.name for c in view.cells if c.status == RETRY and c.name not in wanted)
    return RetryPlan(
        host.name, tuple(cells), tuple(outs), view.runner_alive, allow_done, launch_plan,
        tuple(problems), tuple(warnings), launch_acks=inherited, revoked=not launch_acks,
        unknown=tuple(unknown), waiting=tuple(waiting), resume=resume, others_waiting=others,
    )  # fmt: skip


async def _edited_line_note(
    fleet: Fleet, host: HostConfig, transport: Transport, view: QueueView
) -> list[str]:
    """A retry runs the box's copy of a cell's line: a typo fixed here since it was sent
    ran again as it was, unsaid (both s43 hours), then the fix's own advice led to a name
    used twice. Said with the lines and what runs an edited one."""
    from rgt_tui.services.queue.append import against_box

    against = await against_box(host, transport, view, fleet)
    if not against.changed:
        return []
    return [against.changed]


async def _running_code_note(fleet: Fleet, host: HostConfig, transport: Transport) -> list[str]:
    """A retry the running queue runs runs the box's code, not the local tree
    (``box_code``; s37 dev-loop hour #1: the retry ran the old code, unsaid)."""
    from rgt_tui.services.queue.box_code import code_differs

    differs = await code_differs(fleet, host, transport)
    if not differs:
        return []
    return [
        f"the running queue runs it with the code on {host.name}, which differs from the "
        f"local tree in {differs}: a fix made here since is not in it — sync is refused "
        "while the queue runs; stop it (S), sync, then retry, to run the local code"
    ]


def _not_retryable(
    cell: CellView | None, name: str, allow_done: bool, view: QueueView, host: str
) -> str:
    """Why ``cell`` cannot be retried now; '' when it can."""
    if cell is None:
        return no_such_cell(view, name)
    if cell.status in RETRYABLE or (cell.status == DONE and allow_done):
        return ""
    # A pending cell of a queue that no longer runs waits for nobody: say how it runs.
    pending = (
        f"cell {name} never ran: the queue runs it when it gets there"
        if view.runner_alive
        else f"cell {name} never ran, and no queue runs on {host}: "
        f"rgt-tui launch {host} --start {cell.index} runs it"
    )
    return {
        RUNNING: f"cell {name} is running now: kill it first (queue kill), then retry",
        PENDING: pending,
        RETRY: f"cell {name} is already {cell.label}",  # queued to retry, or to resume
        SKIPPED: f"cell {name} is {cell.label} ({cell.note}): it does not run on this box",
        DONE: f"cell {name} is done (exit 0): retrying a done cell needs --done",
    }.get(cell.status, f"cell {name} is {cell.label}")


async def retry_cells(
    plan: RetryPlan, transport: Transport, *, fleet: Fleet | None = None
) -> RetryResult:
    """Mark the planned cells for a retry (outputs set aside on the box) and, when no
    queue runs, launch the runner that runs only them; with ``fleet``, what that launch
    acknowledged is recorded with it (``services.queue.launch_acks``), for the next retry.

    The box re-checks every cell under its lock (QueueError with its code: ``running``,
    ``done``, ``queued``, …) before it touches any. A queue that ended between plan and
    retry leaves them waiting: the result says so (``running`` False, nothing launched).
    """
    # Cells only waiting (marked before a stop) need no mark: the launch runs them.
    aside, running = await mark_retry(plan, transport, fleet=fleet) if plan.cells else ((), False)
    launched = None
    if not running and plan.launch is not None:
        from rgt_tui.services.queue.launch import launch
        from rgt_tui.services.queue.launch_acks import record_launch

        launched = await launch(plan.launch, transport)
        if fleet is not None:
            # Shielded: the box runs it now; a cancel must not drop the record.
            unrecorded = await asyncio.shield(
                asyncio.to_thread(record_launch, fleet, plan.launch, launched)
            )
            return RetryResult(plan.host, aside, running, launched, unrecorded=unrecorded)
    return RetryResult(plan.host, aside, running, launched)


async def mark_retry(
    plan: RetryPlan, transport: Transport, *, fleet: Fleet | None = None
) -> tuple[tuple[tuple[str, str], ...], bool]:
    """The box's ``retry`` records for the planned cells (their outputs set aside first,
    unless ``plan.resume``): (each cell's name and where its outputs went, whether a
    running runner takes them). With ``fleet``, when each was set aside is kept here too
    (``retried``): a copy pulled before it is then no checkpoint to resume the cell from."""
    if not plan.ok:
        raise QueueError(plan.host, "the retry has problems:\n" + "\n".join(plan.problems))
    args: list[str | int] = [tmux_session_name(plan.host), int(plan.allow_done)]
    for cell, out in zip(plan.cells, plan.outs, strict=True):
        args += [cell.name, RESUMED if plan.resume else out]  # nothing set aside
    await transport.connect()
    result = await run_ctl(transport, "retry", *args)
    error = refusal(plan.host, result)
    if error is not None:
        raise error
    aside = tuple(  # the box's answer: made printable as it enters
        (printable(fields[1], None), printable(fields[2], None))
        for line in result.stdout.splitlines()
        if (fields := line.split("\t"))[0] == "retry" and len(fields) >= 3
    )
    # Not for a resume: its pulled checkpoint is still the one it goes on from. A plain
    # retry is recorded even when the box had no {out} to set aside ("-"): the cell
    # starts over, and a copy pulled before it is an earlier attempt's (retried.py).
    times = {
        fields[1]: int(fields[3])
        for line in result.stdout.splitlines()
        if (fields := line.split("\t"))[0] == "retry" and len(fields) >= 4
        and is_digits(fields[3]) and not plan.resume
    }  # fmt: skip
    if fleet is not None and times:
        from rgt_tui.services.queue.retried import record_retries

        # Not fatal: the retry stands on the box (a full disk here is said elsewhere).
        await asyncio.to_thread(record_retries, fleet, plan.host, times)
    queue = _answer(result.stdout, "queue")
    return aside, bool(queue) and queue[0] == "running"
