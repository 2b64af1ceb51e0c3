"""The open TUI's side of spot boxes (issue 40): it acts on preemptions as ``watch`` does,
and keeps each running cell's newest pulled-and-verified checkpoint for its pane.

``SpotWatch.route`` takes the fleet runtime's events (the App hands it what it does not
route itself):

- a ``HostPreempted`` goes to every fleet view (the pane's "preempted at ~14:03: cell X
  interrupted; last verified step k, from 13:58"), and to an ``OnPreempt`` driver
  (``services.watch.drivers``) as under ``watch``: its ``preempted`` event is a notices
  entry (key ``n``) and, with ``tui_notify``, a notification through the same sent log as
  ``watch``'s (its key is the preemption's, so whichever sends it first, the other finds
  it sent); ``on_preempt = "move"``/``"relaunch"`` act from the TUI too, claimed in the
  journal first, so once across the TUI and ``watch``;
- after each sample: the runtime's current preemption of the host (a box back from a
  blip, or whose queue runs again, is no longer named) and, for a running cell, its newest
  verified checkpoint (``services.queue.verified_checkpoint``: the records only, read in a
  thread when they or the cell changed), kept in ``found`` for views made later;
- and, as samples come, what ``watch`` did on its own (a move, a relaunch, a stop), listed
  in the notices (``controllers.watch_actions``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from rgt_tui.controllers.fleet_view import FleetView
from rgt_tui.controllers.notices import record
from rgt_tui.controllers.watch_actions import WatchActions
from rgt_tui.controllers.workers import run_work
from rgt_tui.domain.config import Fleet
from rgt_tui.domain.preemption import Checkpoint, Preemption
from rgt_tui.domain.queue_state import QueueView
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.queue.verified_checkpoint import file_stamp, newest_verified, signature
from rgt_tui.services.runtime.events import FleetReloaded, HostPreempted, HostSampled
from rgt_tui.services.watch.drivers.on_preempt import OnPreempt
from rgt_tui.services.watch.events import WatchEvent


class SpotWatch:
    """See the module docstring. ``app``: runs the workers and holds the notices list;
    ``runtime``: the fleet runtime (its fleet, connections, preemptions now, queue views); ``views``: the
    screens showing hosts now; ``notify``: the TUI's notifier (``tui_notify``), if any."""

    def __init__(
        self,
        app: Any,
        runtime: Any,
        views: Callable[[], list[FleetView]],
        notify: Any = None,
    ) -> None:
        self.app = app
        self.fleet: Fleet = runtime.fleet
        self.views = views
        self.preemptions = runtime.preemptions
        self.current: Callable[[str], Preemption | None] = runtime.preemptions.current.get
        self.notify = notify
        queue_view: Callable[[str], QueueView | None] = runtime.queues.views.get
        connections: FleetConnections = runtime.connections
        self.driver = OnPreempt(
            self.fleet, connections, emit=self.told, queue_view=queue_view, actor="the TUI",
            fleet_mistake=runtime.fleet_mistake,
        )  # fmt: skip
        self.shown: dict[str, Preemption | None] = {}  # what the panes were last handed
        self.verified: dict[str, tuple[str, tuple[object, ...]]] = {}  # host: (cell, records)
        # host: (cell, its newest verified checkpoint) as last handed to the views. It is
        # handed only when the records or the cell change, so a view made later (a detail
        # screen opened after the look) starts from this, the panes' own value.
        self.found: dict[str, tuple[str, Checkpoint | None]] = {}
        # host: (preemption key, its records, its queue file) when its named preemption's
        # checkpoint and move were last looked up (``_look_again``).
        self.named_looked: dict[str, tuple[object, ...]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        # What watch did unattended (a move, a stop) for the notices list, looked at
        # as samples come (ux-b #13).
        self.actions = WatchActions(app, self.fleet)

    def route(self, event: object) -> None:
        """One runtime event (the ones this controller does not take are ignored)."""
        if isinstance(event, HostPreempted):
            self._show(event.host.name, event.preemption)
            run_work(self.app, self.driver.on_preempted(event.host, event.preemption),
                     f"on-preempt:{event.host.name}", exclusive=False)  # fmt: skip
        elif isinstance(event, HostSampled):
            self.actions.look()
            host = event.update.host
            now = self.current(host)
            if now != self.shown.get(host):
                self._show(host, now)
            if now is not None and now.named and now.cell is not None:
                self._look_again(host, now)
            snap = event.update.snapshot
            if snap is not None and snap.cell is not None:
                self._look_at_verified(host, snap.cell)
        elif isinstance(event, FleetReloaded):
            self.fleet = self.driver.fleet = event.fleet

    def told(self, event: WatchEvent) -> None:
        """The driver's news: a notices entry, and a notification when the fleet asks."""
        severity = "information" if event.severity == "info" else "warning"
        record(self.app, event.host, event.title, event.body, severity)
        if self.notify is not None:
            task = asyncio.ensure_future(self.notify.on_event(event))
            self._tasks.add(task)  # held: the loop keeps tasks only weakly
            task.add_done_callback(self._tasks.discard)

    def _show(self, host: str, preemption: Preemption | None) -> None:
        self.shown[host] = preemption
        for view in self.views():
            view.host_preempted(host, preemption)

    def _look_again(self, name: str, named: Preemption) -> None:
        """A named preemption's checkpoint and move, looked up again when the host's
        pull or verify records or its queue file changed since: a pull, a verify or a
        move made after it was named (here, by ``watch`` or on the command line) shows on
        the pane, which kept "no pulled and verified checkpoint" after watch had moved
        the cell (hour s21a #3, #7). The first look is the runtime's, when it names it."""
        host = self.fleet.find(name)
        if host is None:
            return
        # Every queue file: a move on from the host it went to (box2 → box3) rewrites
        # box2's file, not this host's, and the pane kept "moved to box2" (h592 #7).
        queues = tuple(file_stamp(h.queue) for h in self.fleet.hosts if h.queue)
        stamp = (named.key, signature(self.fleet, host), queues)
        before = self.named_looked.get(name)
        self.named_looked[name] = stamp
        if before is None or before[0] != named.key or before == stamp:
            return

        async def look() -> None:
            full = await asyncio.to_thread(self.preemptions.with_checkpoint, host, named)
            if self.current(name) == full:  # still the host's preemption: shown as found
                self._show(name, full)

        run_work(self.app, look(), f"preempted-ckpt:{name}")

    def _look_at_verified(self, name: str, cell: str) -> None:
        host = self.fleet.find(name)
        if host is None:
            return
        records = signature(self.fleet, host)  # a few stats: a pull or verify since?
        shown = self.found.get(name)
        origin = shown[1].from_host if shown and shown[0] == cell and shown[1] else None
        other = self.fleet.find(origin) if origin else None
        if other is not None:
            # Shown "(from box1's copy)": a pull or verify of box1 since changes it too
            # (it stayed until this host's own records changed: review s45 #8).
            records = (*records, *signature(self.fleet, other))
        if self.verified.get(name) == (cell, records):
            return
        self.verified[name] = (cell, records)
        fleet = self.fleet

        async def look() -> None:
            found = await asyncio.to_thread(newest_verified, fleet, host, cell)
            self._hand_verified(name, cell, found)

        run_work(self.app, look(), f"verified-ckpt:{name}")

    def _hand_verified(self, host: str, cell: str, checkpoint: Checkpoint | None) -> None:
        self.found[host] = (cell, checkpoint)
        for view in self.views():
            view.checkpoint_verified(host, cell, checkpoint)
