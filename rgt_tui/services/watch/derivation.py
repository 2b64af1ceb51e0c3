"""The events a fleet's hosts owe, for the fleet runtime: ``EventTracker`` over the
fleet's journal memory, and ``host_state`` to say what a host is at a moment.

The TUI (``[fleet] tui_notify``) and ``watch`` each hand one to their ``FleetRuntime``
(``services.runtime``), which calls it with the monitor's health, so both derive alike.
"""

from __future__ import annotations

from dataclasses import replace

from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.health import HealthState
from rgt_tui.domain.queue_state import QueueView
from rgt_tui.paths import journal_dir
from rgt_tui.services.telemetry import HostUpdate
from rgt_tui.services.watch.events import HostState, WatchEvent
from rgt_tui.services.watch.state import host_state
from rgt_tui.services.watch.store import EventTracker, WatchStore, settle_seconds, watch_dir
from rgt_tui.services.watch.tracker import SILENT_GRACE_S


class HostEvents:
    """The runtime's ``Deriver`` for ``HostState`` and ``WatchEvent``."""

    def __init__(self, tracker: EventTracker) -> None:
        self.tracker = tracker

    @classmethod
    def for_fleet(cls, fleet: Fleet, *, silent_grace_s: float = SILENT_GRACE_S) -> HostEvents:
        """Over ``fleet``'s own watch memory, with its reminder period and settle time."""
        return cls(
            EventTracker(
                WatchStore(watch_dir(journal_dir(fleet.path))),
                reminder_s=fleet.watch.reminder_minutes * 60,
                silent_grace_s=silent_grace_s,
                settle_s=settle_seconds(fleet.thresholds),
            )
        )

    def seed_health(self, host: str) -> HealthState:
        """The health a new monitor of ``host`` starts from (blocking)."""
        return self.tracker.seed_health(host)

    def state(
        self, host: HostConfig, update: HostUpdate | None, queue: QueueView | None, now: float
    ) -> HostState:
        """``host`` as its pane would show it at ``now``; not answering since when the
        watch memory says (a restart does not restart the outage: hour s23a #7, the
        metrics' lost-since timestamp moved to each restart)."""
        state = host_state(host, update, queue, now)
        kept = self.tracker.lost_since(host.name) if state.lost_since is not None else None
        if kept is not None and kept < state.lost_since:  # type: ignore[operator]
            state = replace(state, lost_since=kept)
        return state

    def unchanged(self, host: str, state: HostState, health: HealthState | None) -> bool:
        """True when ``state`` owes nothing and changes no memory."""
        return self.tracker.unchanged(host, state, health)

    def observe(self, host: str, state: HostState, health: HealthState | None) -> list[WatchEvent]:
        """The events ``state`` owes, saved before returned (blocking)."""
        return self.tracker.observe(host, state, health)

    def take_problems(self) -> list[str]:
        """Damaged memory files found since the last call."""
        problems = list(self.tracker.store.problems)
        self.tracker.store.problems.clear()
        return problems
