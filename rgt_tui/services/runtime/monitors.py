"""One telemetry monitor per host, and how a torn-down host's updates are shown.

``build_monitors`` is the one place a fleet's ``HostMonitor``s are made (the TUI's and
``watch``'s alike); ``MonitorLike`` is what the runtime needs of one, so tests hand in
fakes that replay recorded samples.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, replace
from typing import Protocol

from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.cost import FORGOTTEN_ALERT
from rgt_tui.domain.health import HealthState, Thresholds
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.telemetry import HostMonitor, HostUpdate, default_last_seen


class MonitorLike(Protocol):
    """What the runtime needs from a host's telemetry source (``HostMonitor`` or a fake).

    ``health`` is set before ``run`` where the fleet's watch memory knows the box (its
    OOM baseline, its boot), so a kill while nothing watched is still alerted."""

    health: HealthState

    async def run(self, emit: Callable[[HostUpdate], None]) -> None: ...

    def request_reconnect(self) -> None: ...

    @property
    def host_key_fingerprint(self) -> str | None:
        """``SHA256:...`` of the host key its connection saw last; None before one, or
        where there is none (this machine, a fake)."""
        ...


def health_thresholds(fleet: Fleet) -> Thresholds:
    """The health rules' thresholds with the fleet file's overrides applied."""
    return Thresholds(**asdict(fleet.thresholds))


def build_monitors(
    fleet: Fleet,
    connections: FleetConnections,
    clock: Callable[[], float] = time.time,
    hosts: Iterable[HostConfig] | None = None,
    agent_args: Sequence[str] = (),
) -> dict[str, MonitorLike]:
    """One live ``HostMonitor`` per host of the fleet (or of ``hosts``), over the host's
    shared connection."""
    thresholds = health_thresholds(fleet)
    last_seen = default_last_seen(fleet)  # the fleet's own journal
    return {
        h.name: HostMonitor(
            h,
            connections.transport(h.name),
            interval=fleet.poll_seconds,
            thresholds=thresholds,
            clock=clock,
            backoff=connections.backoff,
            connections=connections,  # its waits end on connections.wake (the user's r)
            last_seen=last_seen,  # the release clock counts across restarts (journal)
            agent_args=agent_args,
        )
        for h in (fleet.hosts if hosts is None else hosts)
    }


ENDED = "ended"  # ConnectionState.status of a torn-down box that no longer answers
GEN8_ALERT = "connection.lost"  # health.evaluate's id for "the run may still be alive"


def as_torn_down(update: HostUpdate) -> HostUpdate:
    """``update`` of a box recorded as torn down, as shown: a lost connection is the box
    being gone (status ``ended``, no GEN8 alert), not a run that may still be alive.
    Its error stays (the pane says why it did not answer; the box watch decides on it).
    Never GEN1's "forgotten … pull, verify and tear it down" either: it was torn down,
    and one that answers has the still-answers alert, whose fix is the provider's
    console (s37 money hour #1: both, the first paging as RgtForgottenBox)."""
    update = not_forgotten(update)
    if update.connection.status not in ("reconnecting", "lost"):
        return update  # connected: it answers; unreached: no GEN8 was raised
    return replace(
        update,
        connection=replace(update.connection, status=ENDED, fix=None),
        alerts=tuple(a for a in update.alerts if a.id != GEN8_ALERT),
    )


def has_forgotten(update: HostUpdate) -> bool:
    """Whether ``update`` carries GEN1's forgotten-box alert (a finished queue, billing)."""
    return any(a.id == FORGOTTEN_ALERT for a in update.alerts)


def not_forgotten(update: HostUpdate) -> HostUpdate:
    """``update`` without GEN1's forgotten-box alert (a box torn down, or stopped)."""
    if not has_forgotten(update):
        return update
    return replace(update, alerts=tuple(a for a in update.alerts if a.id != FORGOTTEN_ALERT))
