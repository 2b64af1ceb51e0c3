"""The TUI sending ``watch``'s notifications, when the fleet asks (``[fleet] tui_notify``).

The App's ``FleetRuntime`` derives the events with the same deriver as ``rgt-tui watch``
(``services.watch.derivation.HostEvents``: the tracker over the same journal memory, fed
each monitor's health) and hands each to a ``Notifier`` writing the same sent log, so a
user who keeps the TUI open is told, and one who also runs ``watch`` is still told once:
whichever derives an event first records it, and the other finds it told. Off by default
(``watch`` is the sender).
"""

from __future__ import annotations

from typing import Any

from rgt_tui.domain.config import Fleet
from rgt_tui.paths import journal_dir
from rgt_tui.services.watch.derivation import HostEvents
from rgt_tui.services.watch.events import WatchEvent
from rgt_tui.services.watch.store import sent_log_path


class TuiNotify:
    """The deriver the App's runtime runs (``events``), and where its events go."""

    def __init__(self, fleet: Fleet, notifier: Any) -> None:
        self.events = HostEvents.for_fleet(fleet)
        self.notifier = notifier

    @classmethod
    def for_fleet(cls, fleet: Fleet) -> TuiNotify | None:
        """One when the fleet sets ``tui_notify``; None otherwise."""
        if not fleet.watch.tui_notify:
            return None
        from rgt_tui.services.watch.sinks.notify import Notifier

        return cls(fleet, Notifier(fleet, sent_log_path(journal_dir(fleet.path))))

    def fleet_changed(self, fleet: Fleet) -> None:
        """The fleet file was applied again: a new ``notify_reminder_minutes`` holds at
        once, as it does in ``watch`` (the rest of the deriver reads the host's config)."""
        self.events.tracker.reminder_s = fleet.watch.reminder_minutes * 60

    async def on_event(self, event: WatchEvent) -> None:
        """An event the runtime derived: sent (never raises; problems in ``failures``)."""
        await self.notifier.on_event(event)

    def report(self, line: str) -> None:
        """A problem of the watch memory (unwritable, damaged): kept with the sends'."""
        self.notifier.failures.append(line)

    async def aclose(self, grace: float = 2.0) -> None:
        """The App is leaving: sends under way get ``grace`` seconds; the rest stay owed
        in the sent log and are sent at the next start."""
        await self.notifier.aclose(grace)
