"""What the fleet runtime tells its consumers (the TUI, ``watch``): small frozen records.

Each consumer routes them where it shows or sends things: the App to its screens and
toasts, ``watch`` to its sinks. ``S`` and ``E`` are the deriver's host state and event
types (``watch``'s ``HostState`` and ``WatchEvent``): the runtime carries them without
knowing them, so it imports nothing of the packages that consume it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from rgt_tui.domain.config import ConfigError, Fleet, HostConfig
from rgt_tui.domain.history import HostHistory
from rgt_tui.domain.preemption import Preemption
from rgt_tui.domain.queue_state import QueueView
from rgt_tui.services.runtime.fleet_file import FleetChanges
from rgt_tui.services.telemetry import HostUpdate

S = TypeVar("S")
E = TypeVar("E")


@dataclass(frozen=True)
class HostSampled:
    """A host's sample or connection change, applied: ``update`` as shown (a torn-down
    box's lost connection is the box being gone), with the host's history."""

    update: HostUpdate
    history: HostHistory


@dataclass(frozen=True)
class QueueRead:
    """A queue poll read ``host``'s queue."""

    host: str
    view: QueueView


@dataclass(frozen=True)
class HostObserved(Generic[S]):
    """The host's state after a sample, a queue poll or a tick (what its pane shows)."""

    host: HostConfig
    state: S


@dataclass(frozen=True)
class Told(Generic[E]):
    """An event worth telling a person once, derived (and remembered) just now."""

    event: E


@dataclass(frozen=True)
class ClocksDue:
    """A platform's danger clocks, due once per profile when its first host connects."""

    host: str
    who: str  # the host, or "<profile> (N hosts)"
    lines: tuple[str, ...]


@dataclass(frozen=True)
class TelemetryEnded:
    """A host's monitor stopped by itself: ``error`` says why (a bug, not a lost
    connection: those are retried inside the monitor)."""

    host: str
    error: str


@dataclass(frozen=True)
class HostRetired:
    """A host recorded as torn down is done: its monitor, queue poll and connection
    closed (``r`` gives it one more attempt)."""

    host: str


@dataclass(frozen=True)
class FleetReloaded:
    """The fleet file changed and was applied (``changes``: what it changed);
    ``fixed``: it replaces a reading refused for a mistake."""

    fleet: Fleet
    changes: FleetChanges
    fixed: bool = False


@dataclass(frozen=True)
class FleetFileRejected:
    """The fleet file changed but has a mistake: nothing of it was applied, the fleet
    runs on its last good settings. ``error`` names the file and line."""

    error: ConfigError


@dataclass(frozen=True)
class HostPreempted:
    """An interruptible box is named preempted (issue 40): unreachable past its grace, or
    answering again from a new start; once per preemption per runtime. Its ``line`` is
    ``domain.preemption.preemption_line``; the ``on_preempt`` driver acts on it."""

    host: HostConfig
    preemption: Preemption


RuntimeEvent = (
    HostSampled
    | QueueRead
    | HostObserved
    | Told
    | ClocksDue
    | TelemetryEnded
    | HostRetired
    | FleetReloaded
    | FleetFileRejected
    | HostPreempted
)
