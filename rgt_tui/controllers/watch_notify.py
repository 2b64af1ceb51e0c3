"""The TUI sending ``watch``'s notifications, when the fleet asks (``[fleet] tui_notify``).

The same derivation as ``rgt-tui watch`` (``services.watch.store.EventTracker`` over the
same journal memory) runs on the App's own samples and queue views and hands each event
to a ``Notifier`` writing the same sent log, so a user who keeps the TUI open is told,
and one who also runs ``watch`` is still told once: whichever derives an event first
records it, and the other finds it told. Off by default (``watch`` is the sender).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from rgt_tui.controllers.workers import WorkerRunner, run_work
from rgt_tui.domain.config import Fleet
from rgt_tui.domain.queue_state import QueueView
from rgt_tui.paths import journal_dir
from rgt_tui.services.telemetry import HostUpdate
from rgt_tui.services.watch.events import HostState
from rgt_tui.services.watch.state import host_state
from rgt_tui.services.watch.store import (
    EventTracker,
    WatchStore,
    sent_log_path,
    settle_seconds,
    watch_dir,
)


class TuiNotify:
    """Feeds the App's updates and queue views to the tracker; events to ``notifier``."""

    def __init__(
        self,
        runner: WorkerRunner,
        fleet: Fleet,
        notifier: Any,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.runner = runner
        self.notifier = notifier
        self.clock = clock
        self.hosts = {h.name: h for h in fleet.hosts}
        self.tracker = EventTracker(
            WatchStore(watch_dir(journal_dir(fleet.path))),
            reminder_s=fleet.watch.reminder_minutes * 60,
            settle_s=settle_seconds(fleet.thresholds),
        )
        self.latest: dict[str, HostUpdate] = {}
        self.queues: dict[str, QueueView] = {}

    @classmethod
    def for_fleet(
        cls, runner: WorkerRunner, fleet: Fleet, *, clock: Callable[[], float] = time.time
    ) -> TuiNotify | None:
        """One when the fleet sets ``tui_notify``; None otherwise."""
        if not fleet.watch.tui_notify:
            return None
        from rgt_tui.services.notify import Notifier

        return cls(
            runner, fleet, Notifier(fleet, sent_log_path(journal_dir(fleet.path))), clock=clock
        )

    def host_updated(self, update: HostUpdate) -> None:
        """A sample or connection change, as the App shows it."""
        self.latest[update.host] = update
        self._step(update.host)

    def queue_viewed(self, host: str, view: QueueView) -> None:
        """The queue poller's latest view of ``host``."""
        self.queues[host] = view
        self._step(host)

    def _step(self, name: str) -> None:
        host = self.hosts.get(name)
        if host is None:
            return  # added while the app runs: its events start with the next fleet load
        state = host_state(host, self.latest.get(name), self.queues.get(name), self.clock())
        if self.tracker.unchanged(name, state):
            return  # nothing owed: no worker, no disk
        run_work(self.runner, self._tell(name, state), f"notify:{name}", exclusive=False)

    async def _tell(self, name: str, state: HostState) -> None:
        try:
            events = await asyncio.to_thread(self.tracker.observe, name, state)
        except OSError as exc:  # the journal folder: unwritable or full; tried next sample
            self.notifier.failures.append(f"{name}: watch memory not saved ({exc})")
            return
        for event in events:
            await self.notifier.on_event(event)  # never raises; problems in failures

    async def aclose(self, grace: float = 2.0) -> None:
        """The App is leaving: sends under way get ``grace`` seconds; the rest stay owed
        in the sent log and are sent at the next start."""
        await self.notifier.aclose(grace)
