"""The local journal: every gate fact and teardown per host, written atomically.

One JSON file per host under ``<state dir>/journal/``. Writes go tmp → fsync → rename →
fsync(dir), so a crash leaves the old journal or the new one, never half of one. A journal
that does not parse raises JournalError naming the file and the fix; the caller then
shows the gate as locked — a damaged journal never opens a gate.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rgt_tui.domain import teardown_gate as gate
from rgt_tui.domain.teardown_gate import GateEvent, GateState
from rgt_tui.services.records import atomic_write_json

JOURNAL_VERSION = 1
_EVENT_TYPES = {
    cls.__name__: cls
    for cls in (
        gate.ManifestTaken, gate.Rescanned, gate.FilePulled, gate.ArtifactChecked,
        gate.RosterChecked, gate.MissingCellAcknowledged, gate.CellsRunning,
        gate.RunningAcknowledged, gate.BoxChanged, gate.ConfirmationTyped,
    )
}  # fmt: skip


class JournalError(Exception):
    """The journal file is damaged or unreadable; the gate stays locked."""


@dataclass(frozen=True)
class TeardownRecord:
    """One teardown attempt: what ran, when, and whether it succeeded."""

    at: float
    command: str | None
    exit_status: int | None
    output: str
    ok: bool


@dataclass
class HostJournal:
    """The recorded history of one host."""

    host: str
    events: list[tuple[float, GateEvent]] = field(default_factory=list)
    teardowns: list[TeardownRecord] = field(default_factory=list)
    first_seen: float | None = None
    last_seen: float | None = None

    @property
    def torn_down_at(self) -> float | None:
        ok = [t.at for t in self.teardowns if t.ok]
        return ok[-1] if ok else None

    def gate(self) -> GateState:
        """Replay every event into the gate (the only source of its state)."""
        state = GateState(self.host)
        for _, event in self.events:
            state = gate.apply(state, event)
        return state


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


class Journal:
    """Reads and writes host journals under one directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def path(self, host: str) -> Path:
        return self.directory / f"{host}.json"

    def load(self, host: str) -> HostJournal:
        """The host's journal; an empty one when none exists; JournalError when damaged."""
        path = self.path(host)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return HostJournal(host)
        except OSError as exc:
            raise JournalError(f"{path}: cannot read the journal ({exc.strerror})") from exc
        try:
            data = json.loads(text)
            if data.get("version") != JOURNAL_VERSION or data.get("host") != host:
                raise ValueError(
                    f"version/host mismatch (version {data.get('version')!r}, host {data.get('host')!r})"
                )
            events = [(float(t), _decode_event(dict(e))) for t, e in data["events"]]
            teardowns = [TeardownRecord(**r) for r in data.get("teardowns", [])]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise JournalError(
                f"{path}: the journal is damaged ({exc}); the teardown gate stays locked. "
                f"Move the file aside (mv {path} {path}.damaged) to start a fresh journal, "
                "then re-run pull and verify"
            ) from exc
        return HostJournal(host, events, teardowns, data.get("first_seen"), data.get("last_seen"))

    def save(self, journal: HostJournal) -> None:
        """Write atomically: tmp → fsync → rename → fsync the directory."""
        self.directory.mkdir(parents=True, exist_ok=True)
        data = {
            "version": JOURNAL_VERSION,
            "host": journal.host,
            "first_seen": journal.first_seen,
            "last_seen": journal.last_seen,
            "events": [[t, _encode_event(e)] for t, e in journal.events],
            "teardowns": [dataclasses.asdict(r) for r in journal.teardowns],
        }
        atomic_write_json(self.path(journal.host), data)

    def record(self, host: str, t: float, *events: GateEvent) -> HostJournal:
        """Append events and save; returns the updated journal."""
        journal = self.load(host)
        journal.events.extend((t, e) for e in events)
        self.save(journal)
        return journal
