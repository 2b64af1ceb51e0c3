"""Where ``watch`` keeps what it saw and told, and the tracker that reads and writes it.

``WatchStore``: one JSON file per host in ``<fleet journal dir>/watch/`` (the fleet's
journal folder, ``paths.journal_dir``: a host name means something only within its
fleet), written as the journal writes (tmp → fsync → rename → fsync(dir)) under an
exclusive ``flock`` per host, so ``watch`` and a TUI sending notifications never both
tell one event: each derives against the file under the lock, and the second finds it
told. ``EventTracker``: ``tracker.derive`` over that store, with a cache so a sample that
changes nothing costs no disk at all.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from rgt_tui.domain.health import HealthState, Thresholds
from rgt_tui.fsutil import LockBusy, file_lock
from rgt_tui.services.records import atomic_write_json
from rgt_tui.services.watch.events import HostState, WatchEvent
from rgt_tui.services.watch.tracker import (
    SILENT_GRACE_S,
    HostMemory,
    derive,
    memory_from_json,
    memory_to_json,
    note_health,
    seed_health,
)

MAX_MEMORY_BYTES = 1 << 20  # one host's memory is a few hundred bytes; more is not ours
LOCK_TIMEOUT_S = 30.0


def watch_dir(journal: Path) -> Path:
    """The watch memory's folder inside a fleet's journal folder."""
    return journal / "watch"


def sent_log_path(journal: Path) -> Path:
    """The notifications' sent log (``notify.Notifier``) beside the watch memory; its
    suffix is not ``.json``, so no host's memory file is ever it."""
    return watch_dir(journal) / "notify-sent.jsonl"


class WatchStore:
    """One memory file per host (see the module docstring); ``problems`` lists the
    files found damaged (each then started afresh, its events possibly told again)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.problems: list[str] = []

    def path(self, host: str) -> Path:
        """The host's memory file."""
        return self.directory / f"{host}.json"

    @contextlib.contextmanager
    def _locked(self, host: str) -> Iterator[None]:
        self.directory.mkdir(parents=True, exist_ok=True)
        held = contextlib.ExitStack()
        try:
            held.enter_context(file_lock(self.directory / f"{host}.json.lock", LOCK_TIMEOUT_S))
        except LockBusy:
            raise OSError(
                f"{self.directory}: another rgt-tui has held {host}'s watch "
                f"lock for {LOCK_TIMEOUT_S:g} s"
            ) from None
        with held:
            yield

    def load(self, host: str) -> HostMemory:
        """The host's memory; an empty one when none (or a damaged one) is there."""
        path = self.path(host)
        try:
            with path.open("rb") as f:
                raw = f.read(MAX_MEMORY_BYTES + 1)
        except FileNotFoundError:
            return HostMemory()
        try:
            if len(raw) > MAX_MEMORY_BYTES:
                raise ValueError(f"larger than {MAX_MEMORY_BYTES} bytes")
            return memory_from_json(host, json.loads(raw))
        except (ValueError, RecursionError) as exc:
            self.problems.append(
                f"{path}: damaged watch memory ({exc}); started afresh: an alert still "
                "open may be told once more"
            )
            return HostMemory()

    def update(self, host: str, change: Callable[[HostMemory], HostMemory]) -> HostMemory:
        """Load, ``change`` and save the host's memory under its lock; the memory saved."""
        with self._locked(host):
            before = self.load(host)
            after = change(before)
            if after != before:
                atomic_write_json(self.path(host), memory_to_json(host, after))
            return after


def settle_seconds(thresholds: Thresholds) -> float:
    """How long a host must be sampled before a missing alert counts as closed: the
    longest rule that needs minutes of samples to fire (idle, a silent log, no tracker
    line), plus a minute."""
    longest = max(thresholds.idle_minutes, thresholds.log_silent_minutes)
    return (max(longest, thresholds.tracker_minutes) + 1) * 60


class EventTracker:
    """``derive`` per host against the store (thread-safe; ``observe`` blocks on disk
    only when something changed, so run it in a thread then)."""

    def __init__(
        self,
        store: WatchStore,
        *,
        reminder_s: float,
        silent_grace_s: float = SILENT_GRACE_S,
        settle_s: float = 0.0,
    ) -> None:
        self.store = store
        self.reminder_s = reminder_s
        self.silent_grace_s = silent_grace_s
        self.settle_s = settle_s
        self._cache: dict[str, HostMemory] = {}
        self._sampled_since: dict[str, float] = {}  # first fresh sample of this run
        # One lock per host: a host's save (observe, in a thread: its file lock, fsync)
        # never holds up another host's check (unchanged, on the event loop, per sample).
        self._locks: dict[str, threading.Lock] = {}
        self._locks_lock = threading.Lock()

    def _lock(self, host: str) -> threading.Lock:
        lock = self._locks.get(host)
        if lock is None:
            with self._locks_lock:
                lock = self._locks.setdefault(host, threading.Lock())
        return lock

    def memory(self, host: str) -> HostMemory:
        """The host's memory (loaded once, then cached; blocking the first time)."""
        with self._lock(host):
            if host not in self._cache:
                self._cache[host] = self.store.load(host)
            return self._cache[host]

    def lost_since(self, host: str) -> float | None:
        """Since when the memory says ``host`` has not answered (kept across restarts);
        None when it answers or its memory is not loaded yet (never blocks)."""
        memory = self._cache.get(host)
        return memory.lost_since if memory is not None else None

    def seed_health(self, host: str) -> HealthState:
        """The health state a new monitor of ``host`` starts from (``tracker.seed_health``)."""
        return seed_health(self.memory(host))

    def _derive(
        self, host: str, memory: HostMemory, state: HostState, health: HealthState | None
    ) -> tuple[HostMemory, list[WatchEvent]]:
        since = self._sampled_since.get(host)
        may_close = since is not None and state.now - since >= self.settle_s
        new, events = derive(
            host, memory, state,
            reminder_s=self.reminder_s, silent_grace_s=self.silent_grace_s, may_close=may_close,
        )  # fmt: skip
        return note_health(new, health), events

    def _note_sampled(self, host: str, state: HostState) -> None:
        if state.connection == "connected" and state.snapshot is not None:
            self._sampled_since.setdefault(host, state.now)

    def unchanged(self, host: str, state: HostState, health: HealthState | None = None) -> bool:
        """True when ``state`` changes nothing the memory holds (no disk, no events);
        False when it may (or the memory is not loaded yet, or being saved): call
        ``observe``. Never waits: the event loop calls it for every sample."""
        lock = self._lock(host)
        if not lock.acquire(blocking=False):
            return False  # the host's memory is being saved (observe): ask observe
        try:
            self._note_sampled(host, state)
            memory = self._cache.get(host)
            if memory is None:
                return False
            return self._derive(host, memory, state, health)[0] == memory
        finally:
            lock.release()

    def observe(
        self, host: str, state: HostState, health: HealthState | None = None
    ) -> list[WatchEvent]:
        """The events ``state`` owes, derived against the stored memory under its lock and
        saved before they are returned: each is returned once, to one caller, ever."""
        with self._lock(host):
            self._note_sampled(host, state)
            memory = self._cache.get(host)
            if memory is None:
                memory = self._cache[host] = self.store.load(host)
            if self._derive(host, memory, state, health)[0] == memory:
                return []
            owed: list[WatchEvent] = []

            def change(stored: HostMemory) -> HostMemory:
                new, events = self._derive(host, stored, state, health)
                owed[:] = events
                return new

            self._cache[host] = self.store.update(host, change)
            return owed
