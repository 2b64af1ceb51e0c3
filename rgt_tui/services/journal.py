"""The local journal: every gate fact and teardown per host and box, written atomically.

One JSON file per host in its fleet's folder, ``<state dir>/journal/<fleet key>/``
(``paths.journal_dir``: a host name means something only within its fleet file, so two
fleets with a ``gpu1`` never share or flip one another's records; every reader and
writer opens it with ``journal_for(fleet)``). Writes go tmp → fsync → rename →
fsync(dir), so a crash leaves the old journal or the new one, never half of one. A journal
that does not parse raises JournalError naming the file and the fix; the caller then
shows the gate as locked — a damaged journal never opens a gate.

**Concurrent writers.** The TUI and command-line runs write the same journals. Every
load–modify–save (``update`` and everything built on it: ``record``, ``observe_box``,
``add_teardown``) holds an exclusive ``fcntl.flock`` on ``<host>.json.lock`` from the load
to the rename, so no writer saves over an event another one added meanwhile. flock rather
than the ``filelock`` package: the project already relies on it (the pull's lock), it
needs no dependency, and the kernel drops the lock of a process that dies, so a killed
run never leaves a stale lock behind. Each call opens the lock file afresh, so threads
of one process exclude one another as separate processes do. Readers (``load``) take no
lock: a rename replaces the file whole.

**Boxes.** Facts belong to a box (``rgt_tui.domain.box_identity``), not to a host name.
``HostJournal.box`` is the box the current facts are about; ``observe_box`` records the
box that answered just now, and when it is another one the old box's facts move to
``HostJournal.history``: still readable (and shown as history), never counted again. A
journal written before boxes were recorded (version 1) loads with ``box`` None: its
facts are an unknown box's, which no gate ever opens on, and they become history as soon
as a box is observed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rgt_tui import paths
from rgt_tui.domain import teardown_gate as gate
from rgt_tui.domain.box_identity import BoxIdentity, identity_from_json, identity_to_json
from rgt_tui.domain.config import Fleet
from rgt_tui.domain.teardown_gate import GateEvent, GateState
from rgt_tui.fsutil import LockBusy, file_lock
from rgt_tui.services.records import atomic_write_json

JOURNAL_VERSION = 2  # 2: box identities and history; version 1 files still load
LOCK_TIMEOUT_S = 30.0  # a load–modify–save takes milliseconds; this long means stuck
_EVENT_TYPES = {
    cls.__name__: cls
    for cls in (
        gate.ManifestTaken, gate.Rescanned, gate.RescanFailed, gate.FilePulled,
        gate.LocalCopyChecked,
        gate.ArtifactChecked, gate.VerificationRead, gate.RecordsInvalid, gate.RosterChecked,
        gate.MissingCellAcknowledged, gate.CellsRunning, gate.RunningAcknowledged,
        gate.BoxChanged, gate.ConfirmationTyped, gate.SlurmJobsSeen,
        gate.QueueCellsSeen, gate.UnfinishedAcknowledged,
    )
}  # fmt: skip


class JournalError(Exception):
    """The journal file is damaged, unreadable or stuck locked; the gate stays locked."""


@dataclass(frozen=True)
class TeardownRecord:
    """One teardown attempt: what ran, when, whether it succeeded, and on which box.

    ``manual``: no command ran; the user destroyed the box by hand and said so by typing
    its name again after reading what to do.
    """

    at: float
    command: str | None
    exit_status: int | None
    output: str
    ok: bool
    box_id: str | None = None
    manual: bool = False


def _torn_down_at(teardowns: list[TeardownRecord], box_id: str | None) -> float | None:
    ok = [t.at for t in teardowns if t.ok and t.box_id == box_id]
    return ok[-1] if ok else None


@dataclass
class BoxHistory:
    """An earlier box under this host's name: its facts, kept readable, never counted."""

    box: BoxIdentity | None  # None: facts recorded before boxes were identified
    events: list[tuple[float, GateEvent]]
    teardowns: list[TeardownRecord]
    first_seen: float | None
    last_seen: float | None
    retired_at: float  # when another box was found answering under the name
    why: str

    @property
    def torn_down_at(self) -> float | None:
        """When that box was recorded as torn down, if it was."""
        return _torn_down_at(self.teardowns, self.box.box_id if self.box else None)


@dataclass
class HostJournal:
    """The recorded history of one host: the current box's facts, and earlier boxes'."""

    host: str
    events: list[tuple[float, GateEvent]] = field(default_factory=list)
    teardowns: list[TeardownRecord] = field(default_factory=list)
    first_seen: float | None = None
    last_seen: float | None = None
    box: BoxIdentity | None = None
    history: list[BoxHistory] = field(default_factory=list)

    @property
    def torn_down_at(self) -> float | None:
        """When the current box was torn down (a record of another box never counts)."""
        return _torn_down_at(self.teardowns, self.box.box_id if self.box else None)

    def gate(self) -> GateState:
        """Replay the current box's events into the gate (the only source of its state)."""
        state = GateState(self.host, box_id=self.box.box_id if self.box else None)
        for _, event in self.events:
            state = gate.apply(state, event)
        return state

    def observe(self, identity: BoxIdentity, now: float) -> bool:
        """Take ``identity`` as the box answering now; True when the journal changed.

        The same box: only a host key learnt for the first time is added. Another box, or
        facts of a box never identified: those facts move to ``history`` and the new box
        starts with none (its gate closed, never torn down).
        """
        if self.box is not None and self.box.same_box(identity):
            if self.box.host_key is None and identity.host_key is not None:
                self.box = identity
                return True
            return False
        if self.box is None and not self.events and not self.teardowns:
            self.box = identity
            return True
        self.history.append(
            BoxHistory(
                self.box,
                self.events,
                self.teardowns,
                self.first_seen,
                self.last_seen,
                now,
                _why_new(self.host, self.box, identity),
            )
        )
        self.box, self.events, self.teardowns = identity, [], []
        self.first_seen = self.last_seen = now
        return True


def _why_new(host: str, old: BoxIdentity | None, new: BoxIdentity) -> str:
    if old is None:
        return (
            "recorded while no box was identified (by an rgt-tui from before box identities, "
            "or a confirmation typed before any box answered): which box is unknown"
        )
    if old.box_id != new.box_id and old.host_key and old.host_key == new.host_key:
        # The id lives in the login account's ~/.rgt: the same machine's key under another
        # id is most often another account there (a changed login user), not another box
        # (hour s19b #5).
        return (
            f"another id answers as {host} ({old.short()} → {new.short()}) with the same "
            "host key: another login account on the same machine (each account keeps its own "
            "~/.rgt, so its queue and records start anew), or the box re-created with its "
            "host key kept"
        )
    if old.box_id != new.box_id:
        return f"another box answers as {host}: id {old.short()} → {new.short()}"
    return (
        f"the host key changed ({old.host_key} → {new.host_key}) under the same id: "
        "a copy of the old box's disk, or a re-created box"
    )


def _encode_event(event: GateEvent) -> dict[str, Any]:
    data = dataclasses.asdict(event)
    if isinstance(event, gate.ManifestTaken):
        data["files"] = [[path, dataclasses.asdict(facts)] for path, facts in event.files]
    return {"type": type(event).__name__, **data}


def _decode_event(data: dict[str, Any]) -> GateEvent:
    kind = data.pop("type")
    cls = _EVENT_TYPES[kind]
    if cls is gate.ManifestTaken:
        data["files"] = tuple((p, gate.FileFacts(**f)) for p, f in data["files"])
    for key, value in list(data.items()):
        if isinstance(value, list):
            data[key] = tuple(tuple(v) if isinstance(v, list) else v for v in value)
    return cls(**data)


def _events(raw: Any) -> list[tuple[float, GateEvent]]:
    return [(float(t), _decode_event(dict(e))) for t, e in raw]


def _teardowns(raw: Any) -> list[TeardownRecord]:
    return [TeardownRecord(**r) for r in raw]


def _history_to_json(h: BoxHistory) -> dict[str, Any]:
    return {
        "box": identity_to_json(h.box),
        "first_seen": h.first_seen,
        "last_seen": h.last_seen,
        "retired_at": h.retired_at,
        "why": h.why,
        "events": [[t, _encode_event(e)] for t, e in h.events],
        "teardowns": [dataclasses.asdict(r) for r in h.teardowns],
    }


def _history_from_json(data: dict[str, Any]) -> BoxHistory:
    return BoxHistory(
        identity_from_json(data.get("box")),
        _events(data.get("events", [])),
        _teardowns(data.get("teardowns", [])),
        data.get("first_seen"),
        data.get("last_seen"),
        float(data["retired_at"]),
        str(data.get("why", "")),
    )


class Journal:
    """Reads and writes host journals under one directory (see the module docstring)."""

    def __init__(self, directory: Path, *, lock_timeout: float = LOCK_TIMEOUT_S) -> None:
        self.directory = directory
        self.lock_timeout = lock_timeout

    def path(self, host: str) -> Path:
        """The host's journal file."""
        return self.directory / f"{host}.json"

    def lock_path(self, host: str) -> Path:
        """The file every writer of the host's journal locks."""
        return self.directory / f"{host}.json.lock"

    @contextlib.contextmanager
    def locked(self, host: str) -> Iterator[None]:
        """Hold the host's journal lock (exclusive, between processes and threads)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.lock_path(host)
        held = contextlib.ExitStack()
        try:
            held.enter_context(file_lock(path, self.lock_timeout))
        except LockBusy:
            raise JournalError(
                f"{path}: another rgt-tui process has held the journal lock for "
                f"{self.lock_timeout:g} s; the gate stays locked. Close the other "
                "rgt-tui (or wait for it), then try again"
            ) from None
        except OSError as exc:
            raise JournalError(f"{path}: cannot open the journal lock ({exc.strerror})") from exc
        with held:  # taken above: an error of the body is its own, not the lock's
            yield

    def load(self, host: str) -> HostJournal:
        """The host's journal; an empty one when none exists; JournalError when damaged."""
        path = self.path(host)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return HostJournal(host)
        except OSError as exc:
            raise JournalError(f"{path}: cannot read the journal ({exc.strerror})") from exc
        try:
            # Decoded here, so bytes that are not UTF-8 are a damaged journal like bad
            # JSON, said with the file and its fix: read_text raised a traceback in
            # status and watch, and stopped the TUI's telemetry of the host (s36 faults #1).
            data = json.loads(raw.decode("utf-8"))
            version = data.get("version")
            if version not in (1, JOURNAL_VERSION) or data.get("host") != host:
                raise ValueError(
                    f"version/host mismatch (version {version!r}, host {data.get('host')!r})"
                )
            return HostJournal(
                host,
                _events(data["events"]),
                _teardowns(data.get("teardowns", [])),
                data.get("first_seen"),
                data.get("last_seen"),
                identity_from_json(data.get("box")),  # version 1: none, an unknown box
                [_history_from_json(h) for h in data.get("history", [])],
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise JournalError(
                f"{path}: the journal is damaged ({exc}); the teardown gate stays locked. "
                f"Move the file aside (mv {path} {path}.damaged) to start a fresh journal, "
                "then re-run pull and verify"
            ) from exc

    def save(self, journal: HostJournal) -> None:
        """Write the whole journal atomically, under the lock.

        A caller that loaded the journal itself may save over events another writer added
        since: to change a journal, use ``update`` (or what is built on it).
        """
        with self.locked(journal.host):
            self._write(journal)

    def _write(self, journal: HostJournal) -> None:
        """tmp → fsync → rename → fsync the directory (the caller holds the lock).
        JournalError when it cannot be saved: the old file stands, the gate stays as it
        was, and the caller says why (a full disk was a traceback, hour s17b #3)."""
        data = {
            "version": JOURNAL_VERSION,
            "host": journal.host,
            "box": identity_to_json(journal.box),
            "first_seen": journal.first_seen,
            "last_seen": journal.last_seen,
            "events": [[t, _encode_event(e)] for t, e in journal.events],
            "teardowns": [dataclasses.asdict(r) for r in journal.teardowns],
            "history": [_history_to_json(h) for h in journal.history],
        }
        path = self.path(journal.host)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            atomic_write_json(path, data)
        except OSError as exc:
            why = exc.strerror or str(exc)
            if exc.errno == errno.ENOSPC:
                why += f": free space there (df -h {self.directory})"
            raise JournalError(f"cannot save the teardown journal {path}: {why}") from exc

    def update(self, host: str, change: Callable[[HostJournal], bool]) -> HostJournal:
        """Load, ``change`` (in place; it returns whether anything changed), and save when
        it did, all under the host's lock. Returns the journal as saved."""
        with self.locked(host):
            journal = self.load(host)
            if change(journal):
                self._write(journal)
            return journal

    def record(self, host: str, t: float, *events: GateEvent) -> HostJournal:
        """Append events to the current box's facts and save; returns the updated journal."""

        def append(journal: HostJournal) -> bool:
            journal.events.extend((t, e) for e in events)
            return bool(events)

        return self.update(host, append)

    def observe_box(self, host: str, identity: BoxIdentity, now: float) -> HostJournal:
        """Record which box answers under ``host`` (``HostJournal.observe``): another box
        than the journal's moves the old one's facts to history and starts closed."""
        return self.update(host, lambda journal: journal.observe(identity, now))

    def add_teardown(self, host: str, record: TeardownRecord) -> HostJournal:
        """Append one teardown record (its ``box_id`` says which box it was about)."""

        def append(journal: HostJournal) -> bool:
            journal.teardowns.append(record)
            return True

        return self.update(host, append)


def journal_for(fleet: Fleet) -> Journal:
    """The fleet's journal (``paths.journal_dir`` of its file): the one way every reader
    and writer opens it, so two fleets with a ``gpu1`` never share records."""
    return Journal(paths.journal_dir(fleet.path))


def recorded_torn_down_at(fleet: Fleet, host: str) -> float | None:
    """When the fleet's journal records ``host``'s box torn down, or None: not torn down,
    or a journal that cannot be read (the gate reports that; the one read of this fact
    for a launch's refusal and a move's warning)."""
    try:
        return journal_for(fleet).load(host).torn_down_at
    except (JournalError, OSError, ValueError):
        return None


def torn_down_refusal(fleet: Fleet, host: str) -> str | None:
    """Why work must not be sent to a host the journal records as torn down (a launch, a
    retry, an append), whether or not its box answers (asked before any connection: "yet
    it answers" was said of a box that did not, h462 #2): rgt-tui no longer pulls from it
    (``pull --all``, ``watch``, the TUI's pane), so results made there now would be left
    behind on a box that may still be billing (GEN1; a launch there only warned, hour
    s17b #1). None: not torn down (or an unreadable journal, which the gate reports)."""
    try:
        jh = journal_for(fleet).load(host)
    except (JournalError, OSError, ValueError):
        return None
    if jh.torn_down_at is None:
        return None
    box = f" ({jh.box.describe()})" if jh.box is not None else ""
    return (
        f"{host}{box} is recorded as torn down ({local_minute(jh.torn_down_at)}): "
        "rgt-tui no longer pulls from it, so results made there now would "
        "be left behind. If it still answers and was meant to be gone, destroy it in the "
        "provider's console: it may still be billing (GEN1). To work on this box again, "
        "rename its [[hosts]] "
        "entry in place, and rgt-tui takes it as a new host (a second entry beside it for "
        "the same login is refused, as any two are)"
    )


def gone_as_recorded(host: str, at: float) -> str:
    """``box1 is recorded as torn down (2026-12-06 03:17) and did not answer just now``:
    a torn-down box that was asked and did not answer, said as the teardown it is (the
    pull, the disk dialog, the shell: not "check the port", h471 #3 #5)."""
    return f"{host} is recorded as torn down ({local_minute(at)}) and did not answer just now"


def local_minute(at: float) -> str:
    """A journal time as people read it in a refusal: local, to the minute."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(at))
