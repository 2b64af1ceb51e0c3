"""A queue's state, derived from the records on its box — never from the app's memory.

Pure: ``derive_view`` takes the parsed records (``queue_records``), the box's current boot
id and clock, and what the box said is alive, and returns a frozen ``QueueView``. A run
that was alive in an earlier boot is not alive now whatever its pid says: a changed boot
id means every tmux/nohup job died (GEN6), so its cell shows as interrupted with the
index to resume from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rgt_tui.domain.queue_records import CellAttempt, DeployedCell, RunnerLaunch
from rgt_tui.domain.units import fmt_duration

PENDING, RUNNING, DONE, FAILED, INTERRUPTED = (
    "pending", "running", "done", "failed", "interrupted",
)  # fmt: skip
CELL_STATUSES = (PENDING, RUNNING, DONE, FAILED, INTERRUPTED)

# Whole-queue states.
NOT_DEPLOYED = "not deployed"  # nothing on the box yet
NEVER_LAUNCHED = "never launched"  # cells deployed, no runner ever started
Q_RUNNING = "running"
FINISHED = "finished"  # the runner wrote its done record
STOPPED = "stopped"  # the runner is gone without a done record, same boot
REBOOTED = "rebooted"  # the box rebooted while the runner was running


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
    note: str = ""  # why, for interrupted or orphaned cells

    @property
    def label(self) -> str:
        """``failed (exit 3)`` style text for lists."""
        if self.status == FAILED:
            return f"failed (exit {self.exit_code})"
        return self.status


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

    @property
    def total(self) -> int:
        """Number of deployed cells."""
        return len(self.cells)

    def count(self, status: str) -> int:
        """How many cells have ``status``."""
        return sum(1 for c in self.cells if c.status == status)

    @property
    def current(self) -> CellView | None:
        """The running cell started last, if any."""
        running = [c for c in self.cells if c.status == RUNNING]
        return max(running, key=lambda c: c.started_at or 0) if running else None

    @property
    def elapsed_s(self) -> int | None:
        """Seconds since the last launch: until now while running, else until its last record."""
        launch = self.launch
        if launch is None:
            return None
        if launch.done is not None:
            return launch.done.ts - launch.ts
        if self.state == Q_RUNNING:
            return self.now - launch.ts
        last = max(
            (t for c in self.cells for t in (c.started_at, c.ended_at) if t and t >= launch.ts),
            default=launch.ts,
        )
        return last - launch.ts

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
        current = self.current
        if current is not None:
            ran = self.now - current.started_at if current.started_at else None
            parts.append(
                f"cell {current.index + 1}/{self.total} {current.name} for {fmt_duration(ran)}"
            )
        if self.elapsed_s is not None:
            parts.append(f"elapsed {fmt_duration(self.elapsed_s)}")
        if self.resume_index is not None:
            parts.append(f"resume from cell {self.resume_index}")
        return " · ".join(parts)


def _cell_view(
    cell: DeployedCell,
    attempts: tuple[CellAttempt, ...],
    *,
    boot_id: str,
    pid_alive: bool,
    runner_alive: bool,
    is_runner_current: bool,
) -> CellView:
    if not attempts:
        return CellView(cell.index, cell.name, PENDING)
    last = attempts[-1]
    base = {"started_at": last.ts, "attempts": len(attempts)}
    if last.ended:
        status = DONE if last.exit_code == 0 else FAILED
        return CellView(cell.index, cell.name, status, last.exit_code, ended_at=last.end_ts, **base)
    if last.boot_id != boot_id:
        note = "the box rebooted after it started (boot id changed): it died with the boot"
        return CellView(cell.index, cell.name, INTERRUPTED, note=note, **base)
    if pid_alive:
        note = "" if runner_alive else "its runner is gone: the queue will not go on after it"
        return CellView(cell.index, cell.name, RUNNING, note=note, **base)
    if runner_alive and is_runner_current:
        return CellView(cell.index, cell.name, RUNNING, note="ending", **base)
    note = "stopped without an end record (killed or hung up: diagnose it)"
    return CellView(cell.index, cell.name, INTERRUPTED, note=note, **base)


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
        return FINISHED
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
) -> QueueView:
    """Every cell's state and the queue's, from the records and the box's liveness facts.

    ``runner_alive``: the last launch's pid is a live run_queue process in this boot.
    ``alive_cells``: names whose last unfinished attempt's pid is alive in this boot.
    """
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
        )
        for c in deployed
    )
    return QueueView(
        host=host,
        state=state,
        cells=cells,
        launch=launch,
        boot_id=boot_id,
        now=now,
        resume_index=_resume_index(cells, state, launch),
        runner_alive=runner_alive,
        session_present=session_present,
    )


def _resume_index(
    cells: tuple[CellView, ...], state: str, launch: RunnerLaunch | None
) -> int | None:
    """Where a relaunch should start: the first interrupted cell, else the first pending
    cell a stopped runner did not reach; None while the queue runs or has nothing left."""
    if state == Q_RUNNING:
        return None  # a second runner cannot start until this one ends
    interrupted = [c.index for c in cells if c.status == INTERRUPTED]
    if interrupted:
        return min(interrupted)
    if state in (STOPPED, REBOOTED) and launch is not None:
        pending = [c.index for c in cells if c.status == PENDING and c.index >= launch.start_index]
        return min(pending) if pending else None
    return None
