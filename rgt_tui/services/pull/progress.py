"""Progress of a pull, as frozen objects handed to a callback (the CLI and the UI share it).

``ProgressTracker`` is fed by the pull workers and calls the callback at most every
``interval`` seconds, plus at once when a file changes state, so a fast transfer of
thousands of small files does not flood a UI with messages.

Rates and ETAs count the bytes that came from the box in this run (``moved``, as they
arrive: a resumed part's bytes never, a piece waiting in memory for the write as soon as
it came) over the last ``RATE_WINDOW_S`` seconds of the tracker's clock, so a rate
reads what the link carries now, with or without a bandwidth budget.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from rgt_tui.domain.units import fmt_bytes, fmt_duration

RATE_WINDOW_S = 5.0  # rates are averaged over the last few seconds, not the whole run
RATE_SAMPLE_S = 0.05  # bytes within this of the last sample join it (memory stays bounded)
# No rate over less than this: the first bytes divided by the microseconds since they
# came read "43G/s eta 0s" on a pull's first line (hour s17b #13c).
RATE_MIN_SPAN_S = 0.5


@dataclass(frozen=True)
class FileProgress:
    """One file being pulled right now."""

    path: str  # relative to the host's results folder
    size: int
    done: int  # bytes on the local disk, resumed bytes included
    rate: float  # bytes/s over the last few seconds
    eta_s: float | None
    state: str  # pulling | resuming | retrying | checking (a kept part's hash)
    attempt: int = 1
    note: str = ""  # why it is retrying, for instance

    def figures(self) -> str:
        """``1.2G/4.0G 52.3M/s eta 54s``: the one text of a file's figures, the TUI's
        Pulls tab and the command line's block alike."""
        return f"{fmt_bytes(self.done)}/{fmt_bytes(self.size)} {_rate_eta(self.rate, self.eta_s)}"


@dataclass(frozen=True)
class PullProgress:
    """A pull as a whole: phase, counts, bytes, rate and ETA, and the files in flight."""

    host: str
    phase: (
        str  # connecting | manifest | planning | pulling | finishing | done | incomplete | failed
    )
    files_total: int = 0
    files_done: int = 0  # pulled this run, or already there with a matching hash
    files_failed: int = 0
    bytes_total: int = 0  # bytes of every file in the manifest
    bytes_done: int = 0  # of those, bytes on the local disk
    bytes_received: int = 0  # over the wire in this run
    rate: float = 0.0  # bytes/s from the box over the last few seconds of this run
    eta_s: float | None = None
    active: tuple[FileProgress, ...] = ()
    message: str = ""
    # The plan's bytes to move and what they cost (U14): "pull: 12G to move · …".
    plan_line: str = ""

    @property
    def fraction(self) -> float:
        return self.bytes_done / self.bytes_total if self.bytes_total else 0.0

    def figures(self) -> str:
        """``3/12 files 1.2G/45.6G 52.3M/s eta 14m``: the one text of the pull's totals,
        the TUI's Pulls tab and the command line's block and lines alike."""
        files = f"{self.files_done}/{self.files_total} files"
        size = f"{fmt_bytes(self.bytes_done)}/{fmt_bytes(self.bytes_total)}"
        return f"{files} {size} {_rate_eta(self.rate, self.eta_s)}"


def _rate_eta(rate: float, eta_s: float | None) -> str:
    return f"{fmt_bytes(rate)}/s eta {fmt_duration(eta_s) if eta_s is not None else '?'}"


class _Rate:
    """Bytes per second over the last ``RATE_WINDOW_S``: fed a running total as bytes
    come (``add``), read at any time (``at``), so a pause reads as a falling rate."""

    def __init__(self) -> None:
        self._samples: deque[tuple[float, int]] = deque()  # (time, running total)
        self.total = 0

    def add(self, now: float, nbytes: int) -> None:
        if not self._samples:
            self._samples.append((now, 0))  # the first bytes came over the time since
        self.total += nbytes
        if len(self._samples) > 1 and now - self._samples[-1][0] < RATE_SAMPLE_S:
            self._samples[-1] = (self._samples[-1][0], self.total)  # coalesced: bounded
        else:
            self._samples.append((now, self.total))
        self._trim(now)

    def _trim(self, now: float) -> None:
        # Keep one sample at or before the window's start: the total there anchors it.
        while len(self._samples) > 1 and self._samples[1][0] <= now - RATE_WINDOW_S:
            self._samples.popleft()

    def at(self, now: float) -> float:
        if not self._samples:
            return 0.0
        self._trim(now)
        t0, b0 = self._samples[0]
        start = max(t0, now - RATE_WINDOW_S)
        if now - start < RATE_MIN_SPAN_S:
            return 0.0  # too soon to say (read as unknown: no eta)
        if t0 < start:  # the anchor is older than the window: the bytes up to its end
            t1, b1 = self._samples[1] if len(self._samples) > 1 else (now, self.total)
            b0 += (b1 - b0) * (start - t0) / (t1 - t0) if t1 > t0 else 0
        return (self.total - b0) / (now - start)


@dataclass
class _Active:
    size: int
    done: int
    state: str
    attempt: int
    note: str
    rate: _Rate
    last_rate: float = 0.0


class ProgressTracker:
    """Collects what the workers report and emits ``PullProgress`` snapshots."""

    def __init__(
        self,
        host: str,
        emit: Callable[[PullProgress], None] | None,
        *,
        interval: float = 0.2,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.host = host
        self._emit = emit
        self.interval = interval
        self.clock = clock
        self.phase = "connecting"
        self.message = ""
        self.plan_line = ""
        self.files_total = self.files_done = self.files_failed = 0
        self.bytes_total = self.bytes_done = self.bytes_received = 0
        # The plan's bytes to move (``PullRun.announce_move``): the ETA is theirs. Files
        # already here count as done only once their hash is checked, so an ETA on the
        # whole manifest read minutes where the copy took seconds (a user's hour).
        self.to_move: int | None = None
        self._active: dict[str, _Active] = {}
        self._rate = _Rate()
        self._last_emit = -1e9

    def set_phase(self, phase: str, message: str = "") -> None:
        """Enter a phase (always reported)."""
        self.phase, self.message = phase, message
        self.emit(force=True)

    def plan(self, files_total: int, bytes_total: int, files_done: int, bytes_done: int) -> None:
        """Totals for the run (everything in the manifest) and what is already here."""
        self.files_total, self.bytes_total = files_total, bytes_total
        self.files_done += files_done
        self.bytes_done += bytes_done

    def start_file(
        self, path: str, size: int, done: int, attempt: int = 1, *, state: str = "", note: str = ""
    ) -> None:
        """A file starts (or restarts) with ``done`` bytes already on disk (``state``: what
        it does first, when not simply pulling or resuming)."""
        prev = self._active.get(path)
        if prev is not None:
            self.bytes_done -= prev.done
        self.bytes_done += done
        state = state or ("resuming" if done else "pulling")
        self._active[path] = _Active(size, done, state, attempt, note, _Rate())
        self.emit()

    def advance(self, path: str, nbytes: int) -> None:
        """``nbytes`` more of ``path`` were written locally (``moved`` counted them as
        they came)."""
        active = self._active.get(path)
        if active is None:
            return
        active.done += nbytes
        if active.state == "resuming":
            active.state = "pulling"
        self.bytes_done += nbytes
        self.bytes_received += nbytes
        self.emit()

    def moved(self, path: str | None, nbytes: int) -> None:
        """``nbytes`` came from the box for ``path`` (None: a stream of many files), in
        this run: what rates and ETAs are measured on."""
        now = self.clock()
        self._rate.add(now, nbytes)
        active = self._active.get(path) if path is not None else None
        if active is not None:
            active.rate.add(now, nbytes)

    def file_state(self, path: str, state: str, note: str = "", attempt: int | None = None) -> None:
        """A file waits to retry, is being hashed, ..."""
        active = self._active.get(path)
        if active is not None:
            active.state, active.note = state, note
            if attempt is not None:
                active.attempt = attempt
        self.emit(force=True)

    def all_files_state(self, state: str, note: str = "") -> None:
        """Every file in flight waits (a lost connection: they resume once it is back)."""
        for active in self._active.values():
            active.state, active.note = state, note
        self.emit(force=True)

    def drop_file(self, path: str) -> None:
        """A file's copy is set aside to start again later (neither pulled nor failed)."""
        active = self._active.pop(path, None)
        if active is not None:
            self.bytes_done -= active.done
        self.emit()

    def finish_file(self, path: str, ok: bool) -> None:
        """A file is pulled (``ok``) or given up on."""
        active = self._active.pop(path, None)
        if ok:
            self.files_done += 1
            if active is not None:
                self.bytes_done += active.size - active.done  # a zero-byte tail, say
        else:
            self.files_failed += 1
            if active is not None:
                self.bytes_done -= active.done
        self.emit(force=not ok)

    def add_done(self, nbytes: int) -> None:
        """A whole file arrived at once (a batched small file)."""
        self.files_done += 1
        self.bytes_done += nbytes
        self.bytes_received += nbytes
        self.emit()

    def snapshot(self) -> PullProgress:
        """The current state as a frozen object."""
        now = self.clock()
        files = []
        for path, a in self._active.items():
            a.last_rate = a.rate.at(now)
            eta = (a.size - a.done) / a.last_rate if a.last_rate > 0 else None
            files.append(
                FileProgress(path, a.size, a.done, a.last_rate, eta, a.state, a.attempt, a.note)
            )
        rate = self._rate.at(now)
        if self.to_move is not None:
            remaining = max(0, self.to_move - self.bytes_received)
        else:
            remaining = max(0, self.bytes_total - self.bytes_done)
        eta = remaining / rate if rate > 0 else (0.0 if remaining == 0 else None)
        return PullProgress(
            host=self.host,
            phase=self.phase,
            files_total=self.files_total,
            files_done=self.files_done,
            files_failed=self.files_failed,
            bytes_total=self.bytes_total,
            bytes_done=self.bytes_done,
            bytes_received=self.bytes_received,
            rate=rate,
            eta_s=eta,
            active=tuple(sorted(files, key=lambda f: f.path)),
            message=self.message,
            plan_line=self.plan_line,
        )

    def emit(self, force: bool = False) -> None:
        """Call the callback, unless one went out less than ``interval`` ago."""
        if self._emit is None:
            return
        now = self.clock()
        if not force and now - self._last_emit < self.interval:
            return
        self._last_emit = now
        self._emit(self.snapshot())
