"""A queue's state, derived from the records on its box — never from the app's memory.

Pure: ``derive_view`` takes the parsed records (``queue_records``), the box's current boot
id and clock, and what the box said is alive, and returns a frozen ``QueueView``. A run
that was alive in an earlier boot is not alive now whatever its pid says: a changed boot
id means every tmux/nohup job died (GEN6), so its cell shows as interrupted with the
index to resume from.

Over 450 lines on purpose: ``CellView``/``QueueView`` and ``derive_view`` are one model
(what the box's records mean); the texts every view shows of them sit beside the fields
they read, so the Queue tab, ``queue show`` and ``watch`` cannot word a state differently.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TypeVar

from rgt_tui.domain.code_identity import CodeIdentity
from rgt_tui.domain.queue_prefix import NotSent
from rgt_tui.domain.queue_records import (
    RESUMED,
    CellAttempt,
    CellMarks,
    DeployedCell,
    RunnerLaunch,
)
from rgt_tui.domain.slurm_jobs import PENDING_STATES, ClusterSide, SlurmCell
from rgt_tui.domain.text import printable
from rgt_tui.domain.units import fmt_duration

T = TypeVar("T")

REASON_CHARS = 200  # a failed cell's reason: one line of the box's text, cut

PENDING, RUNNING, DONE, FAILED, INTERRUPTED = (
    "pending", "running", "done", "failed", "interrupted",
)  # fmt: skip
# Queue control (rgt-tui queue kill|retry|move): killed (by the user, or stopped with its
# group: ``CellView.killed_by``); waiting to run
# again (its earlier outputs set aside); taken off this box's queue (moved, or skipped).
KILLED, RETRY, SKIPPED = "killed", "retry", "skipped"
# A Slurm host (issue 32): the scheduler's terminal states by Slurm's own names, so the
# user reads what `sacct`/`squeue` would say. OOM is a state (SLURM4), not a log line.
OUT_OF_MEMORY, TIMEOUT, PREEMPTED, NODE_FAIL, CANCELLED = (
    "OUT_OF_MEMORY", "TIMEOUT", "PREEMPTED", "NODE_FAIL", "CANCELLED",
)  # fmt: skip
SLURM_ENDED = (OUT_OF_MEMORY, TIMEOUT, PREEMPTED, NODE_FAIL, CANCELLED)
# The cells R can take (the Queue tab's picker, its line and its footer alike): ended
# ones, a done one (with --done on the command line), one already waiting for its retry.
RETRY_PICKABLE = (FAILED, KILLED, INTERRUPTED, DONE, RETRY, *SLURM_ENDED)
CELL_STATUSES = (PENDING, RUNNING, DONE, FAILED, INTERRUPTED, KILLED, RETRY, SKIPPED, *SLURM_ENDED)

# Whole-queue states.
NOT_DEPLOYED = "not deployed"  # nothing on the box yet
NEVER_LAUNCHED = "never launched"  # cells deployed, no runner ever started


def queue_is(state: str) -> str:
    """``the queue is running`` / ``… was never launched`` / ``… is not deployed``: a
    whole-queue state in a sentence ("the queue is never launched" read wrong)."""
    return f"the queue was {state}" if state == NEVER_LAUNCHED else f"the queue is {state}"


Q_RUNNING = "running"
FINISHED = "finished"  # the runner wrote its done record
STOPPED = "stopped"  # the runner is gone without a done record, same boot
USER_STOPPED = "stopped by the user"  # the runner honoured a stop request (queue stop)
# A group (issue 41) whose rank failed on its own, the other ranks stopped with it: their
# kill records say "group" (a box written by an older rgt-tui says "user": read by
# ``group_run.own_stop``), and the job ended because a rank failed.
GROUP_STOPPED = "stopped: a rank failed"
# Who stopped a killed cell, as its kill record says (queue_ctl.sh kill's WHO).
BY_USER, BY_GROUP = "user", "group"
# A rank's runner stopped its own queue at a cell that failed by itself there (its stop
# record's WHO, run_queue.sh): the group's job ends with it.
BY_OWN_FAILURE = "failed"
# A cell rgt-tui stopped because another rank of its group failed or its box went silent
# for LOST_AFTER_S (its record: "group"; the record does not say which).
GROUP_KILL = "stopped with its group"
GROUP_KILL_WHY = f"{GROUP_KILL} (another rank failed or went silent)"
REBOOTED = "rebooted"  # the box rebooted while the runner was running

# A pending cell the running launch does not reach (it started past it). Not "L runs it
# once this one ends": L's default start is past the last done cell, so it never did
# (h493 #1, a cell never run and never named again).
NOT_IN_LAUNCH = "not run by this launch: only a launch that starts at or before it runs it"
# A pending cell of a running launch asked to stop: it ends after its current cell.
STOP_ASKED_WHY = "a stop was asked for, the queue ends after the current cell"
STOP_ASKED = f"not run: {STOP_ASKED_WHY}"
# A cell whose attempt has no ``code`` record (U42): said the same way everywhere.
CODE_UNKNOWN = "code unknown (launched before rgt-tui recorded code, or no `code` configured)"


def code_text(code: CodeIdentity | None) -> str:
    """``code tree 1a2b3c4d5e6f, git 89abcde``, or why the code is not known."""
    return CODE_UNKNOWN if code is None else f"code {code.short()}"


def code_brief(code: CodeIdentity | None) -> str:
    """The short form beside a cell: ``code 1a2b3c4d5e6f · git 89abcde``; ``code unknown``."""
    if code is None:
        return "code unknown"
    text = f"code {code.tree[:12]}"
    if code.commit:
        text += f" · git {code.commit[:7]}" + (" (uncommitted changes)" if code.dirty else "")
    return text


@dataclass(frozen=True)
class CellView:
    """One cell as its records show it."""

    index: int
    name: str
    status: str  # one of CELL_STATUSES
    exit_code: int | None = None
    started_at: int | None = None
    ended_at: int | None = None
    attempts: int = 0
    # Why: for interrupted or orphaned cells, rgt-tui's reading; for a failed one, the
    # last line its command printed (the box's text, made printable and cut).
    note: str = ""
    # An unfinished attempt: when its log was last written (the box's clock), the last
    # sign of life of a run that stopped without an end record.
    last_output_at: int | None = None
    # A running cell: the last line its command printed so far (the box's text, made
    # printable and cut); "" when none was read.
    last_line: str = ""
    # The code the last attempt ran (its ``code`` record); None when none was recorded.
    code: CodeIdentity | None = None
    # Queue control: how many times the user asked for a retry, and where the latest
    # retry moved the cell's earlier outputs ("" when none were there to move); of those
    # retries, how many were resumes (its {out} kept: "resumed", not "retried").
    retries: int = 0
    set_aside: str = ""
    resumes: int = 0
    # A cell waiting for its attempt (RETRY) asked as a resume ({out} kept): "queued to
    # resume", not "to retry" (a cell set to resume read "retry queued": h484).
    resume_pending: bool = False
    # A Slurm host: the cell's array task as Slurm last reported it (None elsewhere).
    slurm: SlurmCell | None = None
    # A kill asked for its last attempt: who asked, as the record says (``user``, or
    # ``group``: stopped because another rank of its group failed); "" when none.
    killed_by: str = ""
    # On Slurm: when the first TERM reached its last attempt (its ``signal`` record).
    signalled_at: int | None = None
    # The host the local queue file moved this cell to, while it runs (or ran) here all
    # the same: it runs twice (``services.queue.records``); "" otherwise.
    moved_to: str = ""

    @property
    def label(self) -> str:
        """``failed (exit 3)`` style text for lists; a skipped cell whose reason says
        it moved reads ``moved``."""
        if self.status == FAILED:
            if self.exit_code is None and self.slurm is not None and self.slurm.signal:
                return f"failed (signal {self.slurm.signal})"
            # No exit code: a group cell whose rank was interrupted ("failed (exit None)").
            return "failed" if self.exit_code is None else f"failed (exit {self.exit_code})"
        if self.status == KILLED:
            if self.killed_by == BY_GROUP:  # not the user's: another rank failed
                exit_text = "" if self.exit_code is None else f" (exit {self.exit_code})"
                return GROUP_KILL + exit_text
            return (
                "killed by the user"
                if self.exit_code is None
                else f"killed (exit {self.exit_code})"
            )
        if self.status == RETRY:
            return "queued to resume" if self.resume_pending else "queued to retry"
        if self.status == SKIPPED and self.note.lower().startswith("moved"):
            return "moved"
        return self.status

    def retry_text(self) -> str:
        """``retried 2×, earlier outputs in <path>`` (queue retry: how often, and where the
        latest one set outputs aside), ``resumed 1×`` for a resume (a resumed cell read
        "retried": s44 note); "" when never retried. The Queue tab and ``queue show``
        alike; the path is the box's text, escaped where it is shown."""
        if not self.retries:
            return ""
        aside = f", earlier outputs in {self.set_aside}" if self.set_aside else ""
        again = self.retries - self.resumes
        counts = [f"retried {again}×"] if again else []
        counts += [f"resumed {self.resumes}×"] if self.resumes else []
        return ", ".join(counts) + aside

    def ran(self, now: int) -> str:
        """How long the last attempt ran: to its end, to ``now`` while it runs, and for an
        interrupted one at least to its last output (``≥5m``: it may have lived on
        silently); '' when unknown."""
        if not self.started_at:
            return ""
        if self.ended_at is not None:
            return fmt_duration(self.ended_at - self.started_at)
        if self.status == RUNNING:
            return fmt_duration(now - self.started_at)
        if self.last_output_at is not None:
            return "≥" + fmt_duration(max(0, self.last_output_at - self.started_at))
        return ""


@dataclass(frozen=True)
class QueueView:
    """Every cell's state plus the runner's, as of the box clock ``now``."""

    host: str
    state: str
    cells: tuple[CellView, ...]
    launch: RunnerLaunch | None
    boot_id: str
    now: int
    resume_index: int | None
    runner_alive: bool = False
    session_present: bool = False
    # A Slurm host: the login node's view of the cluster (None elsewhere); with it,
    # runner_alive means some array task is pending or running.
    cluster: ClusterSide | None = None
    # A group's own stop (state GROUP_STOPPED): which rank failed first, in which cell,
    # and that the others were stopped with it; said by ``stop_text``. "" elsewhere.
    group_stop: str = ""
    # A box's records of a group's job (its cells source the group's env file: the box
    # ran as a rank): the group tells the job's news, under its own name (``watch``).
    group_job: bool = False
    # Files the box holds in ~/.rgt/sync-kept: its own copies syncs replaced, never
    # pulled; the teardown checklist names them (``GateReport.notes``).
    sync_kept: int = 0
    # The local queue file's lines already sent, where they differ from the box's copy
    # (which the box runs): ``append.against_box``'s words, "" when they agree or
    # were not compared. The Queue tab says it as `queue show` does (hour s20c #7).
    sent_changed: str = ""
    # While its Queue tab is open: the cells still to run run the box's code, which differs
    # from the local tree (``services.queue.box_code``); "" when not, or not looked at.
    code_note: str = ""
    # The local queue file's cells the box's copy does not hold yet (lines added since the
    # last launch or append): the Queue tab lists them as `queue show` does. None when
    # nothing was added, or not compared.
    not_sent: NotSent | None = None
    # The tmux session of the host entry that launched the account's queue (the box's
    # ~/.rgt/queue/owner; "" unknown): a rename's warning names it (h602 #3).
    owner: str = ""

    def told_by_group(self, host_is_group: bool) -> bool:
        """These are a box's records of a group's job: the group's own view tells the
        job's news (its end, its runner gone), once, under its name; not the box."""
        return self.group_job and not host_is_group

    @property
    def total(self) -> int:
        """Number of deployed cells."""
        return len(self.cells)

    def count(self, status: str) -> int:
        """How many cells have ``status``."""
        return sum(1 for c in self.cells if c.status == status)

    def waiting_counts(self) -> list[tuple[int, str]]:
        """The killed cells and those queued to run again, a retry's and a resume's apart
        (``[(1, "killed"), (1, "to resume")]``): the summary and the pane alike."""
        resumes = sum(1 for c in self.cells if c.status == RETRY and c.resume_pending)
        counts = (
            (self.count(KILLED), "killed"),
            (self.count(RETRY) - resumes, "to retry"),
            (resumes, "to resume"),
        )
        return [(n, word) for n, word in counts if n]

    @property
    def retry_pickable(self) -> tuple[CellView, ...]:
        """The cells R can take (``RETRY_PICKABLE``): the picker lists them, and the tab's
        line and footer offer R only when there is one."""
        return tuple(c for c in self.cells if c.status in RETRY_PICKABLE)

    @property
    def current(self) -> CellView | None:
        """The running cell started last, if any."""
        running = [c for c in self.cells if c.status == RUNNING]
        return max(running, key=lambda c: c.started_at or 0) if running else None

    def running_text(self) -> str:
        """``cell 2 (a)``, or ``cells 2 (a) and 5 (b)`` where several run at once (a Slurm
        host's max_parallel: the stop dialog named one of two, a Slurm hour, s39 #11),
        or ``the current cell`` when none is read running."""
        running = [c for c in self.cells if c.status == RUNNING]
        if not running:
            return "the current cell"
        named = [f"{c.index} ({printable(c.name, 60)})" for c in running[:4]]
        if len(running) == 1:
            return f"cell {named[0]}"
        if len(running) <= 4:
            return f"cells {', '.join(named[:-1])} and {named[-1]}"
        return f"cells {', '.join(named)} and {len(running) - 4} more"

    @property
    def next_cell(self) -> CellView | None:
        """The cell the runner starts after the current one: one waiting for its retry
        first (a running queue runs those before its next cell), else the first pending
        cell after the current from the launch's start on (a retry's launch starts past
        the last cell: it runs its retries only); None when the current cell is the last
        to run."""
        retry = next((c for c in self.cells if c.status == RETRY), None)
        if retry is not None:
            return retry
        after = self.current.index if self.current is not None else -1
        if self.launch is not None:
            after = max(after, self.launch.start_index - 1)
        return next((c for c in self.cells if c.index > after and self._runs_when_reached(c)), None)

    def _runs_when_reached(self, cell: CellView) -> bool:
        """Whether the runner starts ``cell`` when it gets to it: a pending one, and under
        a launch any cell it did not start yet — a done or failed cell of an earlier
        launch runs again (run_queue.sh skips only a cell moved away), as the launch plan
        warned; the kill and stop dialogs said "nothing else runs" (hour s34 TUI #2)."""
        if cell.status == PENDING:
            return True
        if self.launch is None or cell.status in (SKIPPED, RUNNING, RETRY):
            return False
        return cell.started_at is None or cell.started_at < self.launch.ts

    @property
    def start_after_stop(self) -> int | None:
        """Where a relaunch goes on once a stop after the current cell took effect: the
        first pending cell after it (from the launch's start on). Not ``current + 1``: a
        retried earlier cell runs as the current one while later cells are done (hour
        s17a #2); nor a cell waiting for its retry, which a launch runs first anyway.
        None when no cell is left to start."""
        after = self.current.index if self.current is not None else -1
        if self.launch is not None:
            after = max(after, self.launch.start_index - 1)
        return next((c.index for c in self.cells if c.index > after and c.status == PENDING), None)

    def stop_effect(self) -> str:
        """What a stop after the current cell keeps from starting (the Queue tab's stop
        dialog and `rgt-tui queue stop` say it alike)."""
        if self.cluster is not None:
            # Slurm: a stop holds every task still waiting, whatever its index — a task
            # requeued before the running one too (h501 #5: "it is the last cell to run"
            # was said while requeued cell a waited, and the stop held it).
            # A cell queued to retry whose task waits in squeue is held too (review
            # h504 #5): its status stays RETRY.
            waiting = [
                c
                for c in self.cells
                if c.status == PENDING
                or (c.status == RETRY and c.slurm is not None and c.slurm.state in PENDING_STATES)
            ]
            if not waiting:
                return (
                    "no task waits, so the queue ends once the running ones do; "
                    "cells appended meanwhile do not start"
                )
            named = ", ".join(f"{c.index} ({printable(c.name)})" for c in waiting[:3])
            more = f" and {len(waiting) - 3} more" if len(waiting) > 3 else ""
            one = len(waiting) == 1
            return (
                f"the waiting {'task' if one else 'tasks'} {named}{more} "
                f"{'is' if one else 'are'} held and {'does' if one else 'do'} not start"
            )
        following = self.next_cell
        if following is None:
            return (
                "it is the last cell to run, so the queue ends after it anyway; "
                "cells appended meanwhile do not start"
            )
        return f"the next cell, {following.index} ({printable(following.name)}), does not start"

    @property
    def elapsed_s(self) -> int | None:
        """Seconds since the last launch (a relaunch from cell k counts from the relaunch):
        until now while running, until the done record once finished, else — a runner
        that died without one — until the run's last sign of life (a record, or a cell's
        log written), a lower bound (``elapsed_is_lower_bound``)."""
        launch = self.launch
        if launch is None:
            return None
        if launch.done is not None:
            return launch.done.ts - launch.ts
        if self.state == Q_RUNNING:
            return self.now - launch.ts
        signs = (
            t
            for c in self.cells
            for t in (c.started_at, c.ended_at, c.last_output_at)
            if t and t >= launch.ts
        )
        return max(signs, default=launch.ts) - launch.ts

    @property
    def elapsed_is_lower_bound(self) -> bool:
        """The runner died without a done record: when it died is not known. Never on a
        Slurm host (``cluster`` set): no runner writes one there, and the scheduler
        reports each cell's end, so the last of them is when the queue ended."""
        return (
            self.launch is not None
            and self.launch.done is None
            and self.state != Q_RUNNING
            and self.cluster is None
        )

    def elapsed_text(self) -> str:
        """``4m02s``, or ``≥4m02s`` when the run stopped at an unknown time; '' when none."""
        elapsed = self.elapsed_s
        if elapsed is None:
            return ""
        return ("≥" if self.elapsed_is_lower_bound else "") + fmt_duration(elapsed)

    @property
    def stop_requested(self) -> bool:
        """A stop was asked for the running launch: it ends after the current cell."""
        return self.state == Q_RUNNING and self.launch is not None and self.launch.stopping

    def stop_text(self) -> str:
        """``stopped by the user after cell 1 (b)`` / ``stop requested: …`` / a group's
        own stop (``rank 1 (b2) failed first in cell 0 (a); …``); '' otherwise."""
        if self.group_stop:
            return self.group_stop
        launch = self.launch
        if self.stop_requested:
            current = self.current
            after = f"cell {current.index} ({current.name})" if current else "the current cell"
            return f"stop requested: the queue ends after {after}"
        if self.state != USER_STOPPED or launch is None or launch.stopped_before is None:
            return ""
        ran = [
            c for c in self.cells
            if c.started_at and c.started_at >= launch.ts and c.index < launch.stopped_before
        ]  # fmt: skip
        # Started in the same second (a cell killed at once, the next begun): the later
        # index is the later start, the runner going in order (a CI run read "after cell
        # 0 (hold)" of a stop after cell 1).
        last = max(ran, key=lambda c: (c.started_at or 0, c.index)) if ran else None
        after = f"cell {last.index} ({last.name})" if last else "its launch (no cell ran)"
        later = [c for c in self.cells if c.index >= launch.stopped_before and c.status == PENDING]
        left = f"cell {later[0].index} and later not started" if later else "no cell left to start"
        # A cell marked for a retry waits through the stop: named, or nothing said of it
        # (the stop read "cell 6 and later" of a queue of 6 while slow_b waited: s20b #2).
        waiting = [c.name for c in self.cells if c.status == RETRY]
        if waiting:
            left += f"; waiting for a retry: {', '.join(printable(n) for n in waiting[:3])}"
        return f"stopped by the user after {after}; {left}"

    @property
    def last_failed(self) -> CellView | None:
        """The failed cell that ended last, if any (its note says why)."""
        failed = [c for c in self.cells if c.status == FAILED]
        return max(failed, key=lambda c: (c.ended_at or 0, c.index)) if failed else None

    def _slurm_parts(self) -> list[str]:
        """``2 running · 3 pending (Resources, Priority)``: a Slurm queue's live tasks."""
        parts = [f"{self.count(RUNNING)} running"] if self.count(RUNNING) else []
        if self.count(PENDING):
            reasons = dict.fromkeys(
                c.slurm.reason for c in self.cells
                if c.status == PENDING and c.slurm is not None and c.slurm.reason
            )  # fmt: skip
            why = f" ({', '.join(list(reasons)[:3])})" if reasons else ""
            parts.append(f"{self.count(PENDING)} pending{why}")
        return parts

    def summary(self, *, with_state: bool = True) -> str:
        """One line: the state, k/N done, failures, the current cell, elapsed, where to
        resume (in neutral words: the CLI names its flag, the TUI its key)."""
        if not self.cells:  # nothing on the box: "0/0 done" would read as an empty queue
            return self.state if with_state else "no cells on the box"
        parts = [self.state] if with_state else []
        parts.append(f"{self.count(DONE)}/{self.total} done")
        if self.count(FAILED):
            parts.append(f"{self.count(FAILED)} failed")
        if self.count(INTERRUPTED):
            parts.append(f"{self.count(INTERRUPTED)} interrupted")
        parts += [f"{n} {word}" for n, word in self.waiting_counts()]
        words = ((SKIPPED, "moved/skipped"), *((s, s) for s in SLURM_ENDED))
        for status, word in words:
            if self.count(status):
                parts.append(f"{self.count(status)} {word}")
        if self.stop_requested:
            parts.append("stop requested")
        if self.state == FINISHED and self.count(PENDING):
            # A launch from a later cell, or a retry's (its cell alone): "finished" must
            # not read as every cell run.
            parts.append(f"{self.count(PENDING)} not run")
        current = self.current
        if self.cluster is not None:  # Slurm: tasks run side by side, others wait
            parts += self._slurm_parts()
        elif current is not None:
            ran = self.now - current.started_at if current.started_at else None
            # Its index, as the cell table and the stop line count (from 0), not "k/N".
            parts.append(f"cell {current.index} ({current.name}) for {fmt_duration(ran)}")
        if self.elapsed_s is not None:
            parts.append(f"elapsed {self.elapsed_text()}")
        if self.resume_index is not None:
            parts.append(f"resume from cell {self.resume_index}")
        return " · ".join(parts)


def nothing_left_to_run(view: QueueView) -> bool:
    """No resume point and every cell done or passed over (moved away, skipped): a
    relaunch here would run nothing, or done work again (h541 #6)."""
    return view.resume_index is None and all(c.status in (DONE, SKIPPED) for c in view.cells)


def relaunch_start(
    resume_index: int | None, cells: Iterable[CellView], passed: tuple[str, ...] = (SKIPPED,)
) -> int:
    """Where a launch starts when no index is given (the TUI's launch dialog): the resume
    index of an interrupted or stopped queue, else the first cell after the last done one
    that is neither done nor ``passed`` over (moved away: it runs elsewhere), else the
    first such cell anywhere, else 0 (every cell done: the plan then warns that they all
    run again). A launch runs every cell from its start, so a start before a done cell
    runs it again: paid work. Cells that never ran before the last done one (a launch
    from a later start) stay for the user to choose: the plan names them."""
    if resume_index is not None:
        return resume_index
    cells = list(cells)
    last_done = max((c.index for c in cells if c.status == DONE), default=-1)
    runnable = [c.index for c in cells if c.status not in (DONE, *passed)]
    return next((i for i in runnable if i > last_done), runnable[0] if runnable else 0)


def _cell_view(
    cell: DeployedCell,
    attempts: tuple[CellAttempt, ...],
    *,
    boot_id: str,
    pid_alive: bool,
    runner_alive: bool,
    is_runner_current: bool,
    reason: str = "",
    last_output_at: int | None = None,
    marks: CellMarks | None = None,
) -> CellView:
    marks = marks or CellMarks()
    control = {
        "retries": len(marks.retries),
        "set_aside": next((a for _, a in reversed(marks.retries) if a not in ("-", RESUMED)), ""),
        "resumes": sum(a == RESUMED for _, a in marks.retries),
    }
    if marks.skipped is not None:  # its last say: whatever ran before, it runs elsewhere
        note = printable(marks.skipped, REASON_CHARS) or "skipped by the user"
        last = attempts[-1] if attempts else None
        # An attempt cut off before it moved (a preempted box) keeps its last sign of
        # life: the queue's elapsed time runs to it, not to the attempt's start (ux-h #15).
        lived = last_output_at if last is not None and not last.ended else None
        return CellView(
            cell.index, cell.name, SKIPPED, attempts=len(attempts), note=note,
            started_at=last.ts if last else None, ended_at=last.end_ts if last else None,
            code=last.code if last else None, last_output_at=lived, **control,
        )  # fmt: skip
    if marks.retry_pending:
        aside = marks.retry_aside or "-"
        # Where they went is said once, by retry_text ("retried 1×, earlier outputs in
        # …"): the row printed the path twice, and "code unknown" for a cell whose
        # attempts recorded their code (hour s17a #13).
        note = {"-": "no earlier outputs to set aside", RESUMED: "its {out} kept as it is"}.get(
            aside, ""
        )
        last = attempts[-1] if attempts else None
        return CellView(
            cell.index, cell.name, RETRY, attempts=len(attempts), note=note,
            code=last.code if last else None, resume_pending=aside == RESUMED, **control,
        )  # fmt: skip
    if not attempts:
        if marks.unreadable:  # not "never ran": its stale {out} must not pass as results
            note = (
                "its state record on the box cannot be read (bytes but no record): it may "
                "have run; retry it, or accept it at teardown"
            )
            return CellView(cell.index, cell.name, INTERRUPTED, note=note, **control)
        return CellView(cell.index, cell.name, PENDING, **control)
    last = attempts[-1]
    if last.ended:
        status = DONE if last.exit_code == 0 else FAILED
        note = printable(reason, REASON_CHARS) if status == FAILED and reason else ""
        if status == DONE and (rose := _oom_rose(last)):
            note = rose
        if last.killed_by and status == FAILED:
            status = KILLED
            # Not "(rgt-tui queue kill)": the TUI's X kills too, and says so no differently.
            note = _killed_note(last.killed_by)
        elif status == FAILED and last.signalled_at is not None and last.end_ts is not None:
            # A TERM reached it and it ended (143 when its handler re-raised it): "failed
            # (exit 143)" alone hid the walltime's warning it acted on (s35 Slurm #6).
            before = fmt_duration(max(0, last.end_ts - last.signalled_at))
            note = (
                f"a SIGTERM reached it {before} before its end (the walltime's warning, a "
                "scancel or a preemption)" + (f": {note}" if note else "")
            )
        return CellView(
            cell.index, cell.name, status, last.exit_code, started_at=last.ts,
            ended_at=last.end_ts, attempts=len(attempts), note=note, code=last.code,
            killed_by=last.killed_by if status == KILLED else "",
            signalled_at=last.signalled_at, **control,
        )  # fmt: skip
    base = {
        "started_at": last.ts, "attempts": len(attempts), "last_output_at": last_output_at,
        "code": last.code, "killed_by": last.killed_by, "signalled_at": last.signalled_at,
        **control,
    }  # fmt: skip
    if last.boot_id != boot_id:
        note = "the box rebooted after it started (boot id changed): it died with the boot"
        return CellView(cell.index, cell.name, INTERRUPTED, note=note, **base)
    if pid_alive:
        note = "" if runner_alive else "its runner is gone: the queue will not go on after it"
        if last.killed_by == BY_GROUP:
            note = f"{GROUP_KILL_WHY}: ending"
        elif last.killed_by:
            note = f"kill asked by the {printable(last.killed_by, 20)}: ending"
        return CellView(cell.index, cell.name, RUNNING, note=note, **base)
    if runner_alive and is_runner_current:
        note = f"{_killed_note(last.killed_by)}: ending" if last.killed_by else "ending"
        return CellView(cell.index, cell.name, RUNNING, note=note, **base)
    if last.killed_by:  # killed, and no end record came (its runner died too)
        note = f"{_killed_note(last.killed_by)}; no end record"
        return CellView(cell.index, cell.name, KILLED, note=note, **base)
    note = "stopped without an end record (killed or hung up: diagnose it)"
    return CellView(cell.index, cell.name, INTERRUPTED, note=note, **base)


def _oom_rose(attempt: CellAttempt) -> str:
    """Why a cell that exited 0 may still have lost a process: the cgroup's oom_kill
    counter rose while it ran (a DataLoader worker or a child the script outlived was
    OOM-killed, and "done" said nothing: h583 #5); "" when it did not, or is unknown."""
    before, after = attempt.oom_at_start, attempt.oom_at_end
    if before is None or after is None or after <= before:
        return ""
    return (
        f"the box's oom_kill counter rose while it ran ({before} → {after}): if the process "
        "the kernel killed was one of this cell's (a worker, a child), its outputs may be "
        "incomplete"
    )


def _killed_note(who: str) -> str:
    """``killed by the user``, or ``stopped with its group (another rank failed or went
    silent)`` for a kill the group asked for (its record says ``group``); an unknown word, as written."""
    return GROUP_KILL_WHY if who == BY_GROUP else f"killed by the {printable(who, 20)}"


def queue_state(
    deployed: tuple[DeployedCell, ...],
    launches: tuple[RunnerLaunch, ...],
    *,
    boot_id: str,
    runner_alive: bool,
) -> str:
    """The whole queue's state from its launch records."""
    if not launches:
        return NOT_DEPLOYED if not deployed else NEVER_LAUNCHED
    last = launches[-1]
    if last.done is not None:
        return USER_STOPPED if last.stopped_by_user else FINISHED
    if last.boot_id != boot_id:
        return REBOOTED
    return Q_RUNNING if runner_alive else STOPPED


def derive_view(
    host: str,
    deployed: tuple[DeployedCell, ...],
    launches: tuple[RunnerLaunch, ...],
    attempts: Mapping[str, tuple[CellAttempt, ...]],
    *,
    boot_id: str,
    now: int,
    runner_alive: bool,
    alive_cells: frozenset[str] = frozenset(),
    session_present: bool = False,
    reasons: Mapping[str, str] | None = None,
    log_mtimes: Mapping[str, int] | None = None,
    marks: Mapping[str, CellMarks] | None = None,
    last_lines: Mapping[str, str] | None = None,
) -> QueueView:
    """Every cell's state and the queue's, from the records and the box's liveness facts.

    ``runner_alive``: the last launch's pid is a live run_queue process in this boot.
    ``alive_cells``: names whose last unfinished attempt's pid is alive in this boot.
    ``reasons``: failed cells' last printed line (the box's text: made printable here).
    ``log_mtimes``: unfinished attempts' last log write, the box's clock.
    ``marks``: each cell's retry/skip records (queue control), by name.
    ``last_lines``: running cells' last printed line (the box's text: made printable here).
    """
    # The deployed names are printable (queue_records); the box's other records name
    # cells as the box wrote them: the same rule makes them meet (identity on any name
    # rgt-tui wrote).
    attempts = _by_shown_name(attempts)
    marks = _by_shown_name(marks or {})
    reasons = _by_shown_name(reasons or {})
    log_mtimes = _by_shown_name(log_mtimes or {})
    last_lines = _by_shown_name(last_lines or {})
    alive_cells = frozenset(printable(n, None) for n in alive_cells)
    launch = launches[-1] if launches else None
    runner_alive = runner_alive and launch is not None and launch.boot_id == boot_id
    state = queue_state(deployed, launches, boot_id=boot_id, runner_alive=runner_alive)
    open_starts = {
        c.name: attempts[c.name][-1].ts
        for c in deployed
        if attempts.get(c.name) and not attempts[c.name][-1].ended
    }
    newest = max(open_starts, key=lambda n: open_starts[n]) if open_starts else None
    cells = tuple(
        _cell_view(
            c,
            tuple(attempts.get(c.name, ())),
            boot_id=boot_id,
            pid_alive=c.name in alive_cells,
            runner_alive=runner_alive,
            is_runner_current=c.name == newest,
            reason=reasons.get(c.name, ""),
            last_output_at=log_mtimes.get(c.name),
            marks=marks.get(c.name),
        )
        for c in deployed
    )
    # Only a cell this view calls running keeps its last line: the probe reads it for a
    # live pid, and a line from a run that has since ended would read as current.
    cells = tuple(
        replace(c, last_line=printable(last_lines[c.name], REASON_CHARS))
        if c.status == RUNNING and c.name in last_lines
        else c
        for c in cells
    )
    resume = _resume_index(cells, state, launch)
    group_stop = ""
    stopped = _stopped_with_group(cells, state, launch)
    if stopped is not None and launch is not None:
        # A rank of a group that rgt-tui stopped because another rank failed (its kill
        # record says "group"): the job's end, not the user's stop. A relaunch runs the
        # stopped cell again, as the group's view resumes (group_run).
        state = GROUP_STOPPED
        group_stop = (
            f"{GROUP_KILL_WHY} in cell {stopped.index} ({stopped.name}); "
            f"cell {launch.stopped_before} and later not started"
        )
        resume = min(i for i in (stopped.index, resume) if i is not None)
    elif state == USER_STOPPED and launch is not None and launch.stop_by == BY_OWN_FAILURE:
        # This rank's own cell failed and its runner stopped there: not "another rank
        # failed", and a relaunch runs that cell again, not the one after it (the review
        # of s39).
        failed = [
            c for c in cells
            if c.status == FAILED and (c.started_at or 0) >= launch.ts
            and (launch.stopped_before is None or c.index < launch.stopped_before)
        ]  # fmt: skip
        state = GROUP_STOPPED
        if failed:
            cell = max(failed, key=lambda c: (c.started_at or 0, c.index))
            group_stop = (
                f"its own cell {cell.index} ({cell.name}) failed here, so its group's job "
                f"stopped; cell {launch.stopped_before} and later not started"
            )
            resume = min(i for i in (cell.index, resume) if i is not None)
        else:
            group_stop = "a cell failed here, so its group's job stopped"
    elif state == USER_STOPPED and launch is not None and launch.stop_by == BY_GROUP:
        # Stopped by its group between cells (its stop record says "group"): no cell
        # was cut, the rest did not start.
        state = GROUP_STOPPED
        group_stop = f"{GROUP_KILL_WHY}; cell {launch.stopped_before} and later not started"
    if state == FINISHED and launch is not None:
        # Ended, a cell before its start still pending: said on its row, not only as the
        # header's "1 not run" (h493 #1: read plain "pending", then forgotten).
        cells = tuple(
            replace(c, note=NOT_IN_LAUNCH)
            if c.status == PENDING and c.index < launch.start_index and not c.note
            else c
            for c in cells
        )
    if state == Q_RUNNING and launch is not None:
        # A pending cell before the running launch's start is not run by it (a retry's
        # launch starts past the last cell): it read "pending" like the cells about to
        # run, and a user left expecting them (a user's second hour, s41).
        # After a stop was asked for, none of them is: they read "pending" while the
        # header said "stop requested" (a user's hour, s42).
        cells = tuple(
            replace(c, note=NOT_IN_LAUNCH)
            if c.status == PENDING and c.index < launch.start_index and not c.note
            else replace(c, note=STOP_ASKED)
            if c.status in (PENDING, RETRY) and launch.stopping and not c.note
            else c
            for c in cells
        )
    return QueueView(
        host=host,
        state=state,
        cells=cells,
        launch=launch,
        boot_id=boot_id,
        now=now,
        resume_index=resume,
        runner_alive=runner_alive,
        session_present=session_present,
        group_stop=group_stop,
    )


def _stopped_with_group(
    cells: tuple[CellView, ...], state: str, launch: RunnerLaunch | None
) -> CellView | None:
    """The cell whose kill by its group (``kill … group stop``) stopped this launch, when
    that is why the runner stopped; None otherwise (a user's stop or kill, or a record
    from an older rgt-tui, which says "user" either way)."""
    if state != USER_STOPPED or launch is None or launch.stop_by != "kill":
        return None
    stopped = [
        c for c in cells
        if c.status == KILLED and c.killed_by == BY_GROUP and (c.started_at or 0) >= launch.ts
    ]  # fmt: skip
    return min(stopped, key=lambda c: c.index) if stopped else None


def _by_shown_name(records: Mapping[str, T]) -> dict[str, T]:
    """``records`` keyed by each cell name as ``parse_cells_tsv`` shows it."""
    return {printable(name, None): value for name, value in records.items()}


def _resume_index(
    cells: tuple[CellView, ...], state: str, launch: RunnerLaunch | None
) -> int | None:
    """Where a relaunch should start: the first interrupted cell after the last done one,
    else the first pending cell a stopped runner did not reach; None while the queue runs
    or has nothing left. An interrupted cell before a done one (an earlier launch's, the
    queue relaunched past it) is not where to go on: a start there runs the done cells
    after it again, paid work (hour s17a #3); the plan names it, for a retry."""
    if state == Q_RUNNING:
        return None  # a second runner cannot start until this one ends
    last_done = max((c.index for c in cells if c.status == DONE), default=-1)
    interrupted = [c.index for c in cells if c.status == INTERRUPTED and c.index > last_done]
    if interrupted:
        return min(interrupted)
    if state in (STOPPED, REBOOTED, USER_STOPPED) and launch is not None:
        pending = [c.index for c in cells if c.status == PENDING and c.index >= launch.start_index]
        return min(pending) if pending else None
    return None


def cell_span(indices: list[int], one: str, many: str) -> str:
    """``cell 3 is`` / ``cells 0, 1, 2, 3 are`` / ``cells 0–9 (10 in all) are`` /
    ``cells 0, 2, 5, … 9 (6 in all) are``: four or fewer listed, a run as a range (a
    user's hour read "cells 0, 1, 2, … 3", the "…" standing for nothing)."""
    if len(indices) == 1:
        return f"cell {indices[0]} {one}"
    if len(indices) <= 4:
        return f"cells {', '.join(map(str, indices))} {many}"
    first, last, count = indices[0], indices[-1], len(indices)
    if indices == list(range(first, last + 1)):
        return f"cells {first}–{last} ({count} in all) {many}"
    return f"cells {', '.join(map(str, indices[:3]))}, … {last} ({count} in all) {many}"
