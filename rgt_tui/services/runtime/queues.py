"""The fleet's slow queue polls: each connected host's queue view, now and then.

One loop per host with a queue reads the view over the host's shared connection every
``poll_s`` seconds (``WATCHED_POLL_S`` while the user watches that host's Queue tab) and
hands it to ``on_view``. The next poll is armed only after the last one finished, so
polls never overlap. A host is read only while ``is_live`` says its telemetry is
connected: the polls never open, reconnect or close a connection, and a torn-down box
whose telemetry stopped is left alone.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import cast

from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.group_run import RankView
from rgt_tui.domain.queue_state import NOT_DEPLOYED, QueueView
from rgt_tui.domain.queue_waiting import still_to_run
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.queue.append import AgainstBox, against_box, with_stale_configs
from rgt_tui.services.queue.backends import backend_for
from rgt_tui.services.queue.box_code import code_differs, code_note
from rgt_tui.services.queue.group.supervise import GroupSupervisor
from rgt_tui.services.queue.scheduler import AllocationSampler, Supervised, Watch
from rgt_tui.services.queue.view import read_queue_view
from rgt_tui.transport import Transport

POLL_S = 10.0
WATCHED_POLL_S = 3.0  # while the host's Queue tab is on screen
TICK_S = 0.5
CODE_NOTE_S = 30.0  # the Queue tab's look at the box's code against the local tree


class QueuePoller:
    """Reads hosts' queues, slowly; the latest views are in ``views``."""

    def __init__(
        self,
        connections: FleetConnections,
        *,
        on_view: Callable[[str, QueueView], None],
        is_live: Callable[[str], bool],
        is_watched: Callable[[str], bool] = lambda host: False,
        is_wanted: Callable[[HostConfig], bool] = lambda host: True,
        poll_s: float = POLL_S,
        inside: AllocationSampler | None = None,
        fleet: Callable[[], Fleet] | None = None,
    ) -> None:
        self.connections = connections
        # The fleet as it is now (its file can change under a running app): a cell not
        # sent whose name another queue line uses is said as at fault (``against_box``).
        self.fleet = fleet
        self.on_view = on_view
        self.is_live = is_live
        self.is_watched = is_watched
        # Whether the host's queue is worth a read now: one with no queue file of its own
        # only while the box says a cell runs or its Queue tab is open (runtime's rule).
        self.is_wanted = is_wanted
        self.poll_s = poll_s
        self.views: dict[str, QueueView] = {}
        # Each supervised host's watch, kept between polls (a group's quiet ranks).
        self.watches: dict[str, Watch] = {}
        # A group's ranks as its last poll read them (issue 41), each rank's own view: the
        # group's pane shows each rank's last line, its Queue tab one rank's cells.
        self.ranks: dict[str, tuple[RankView, ...]] = {}
        # A Slurm host's running cells' GPUs, sampled inside their allocations (srun
        # --overlap), on its own slower cadence and with a backoff after a refusal. None:
        # not sampled (``watch`` tells events, it draws no GPU note).
        self.inside = inside
        # Each host's last comparison of its queue file with the box's copy: what it was
        # made for (the local file's mtime and size, the box's cells and launch) and what
        # it found. Made again only when one of those changed, so a poll costs no extra
        # read of the box's queue.txt.
        self.sent_notes: dict[str, tuple[object, AgainstBox]] = {}
        # Each host's last look at whether the cells still to run run other code than
        # the local tree (``_with_code_note``): when it was made (monotonic), where the
        # code differs (``code_differs``; "" when it does not), and the launch it was
        # made under: the box's code changes only by a sync between launches, so a look
        # of an earlier launch says nothing of this one (h481 #6: a look from before a
        # sync named a file the sync had sent, after the retry's launch).
        self.code_notes: dict[str, tuple[float, str, object]] = {}
        self._code_looks: dict[str, asyncio.Task[None]] = {}  # a look under way, per host

    async def poll_once(self, host: HostConfig) -> QueueView | None:
        """Read ``host``'s queue now (when its telemetry is connected); the view, or None
        when it was not read (not connected, unreachable, unreadable: the next round
        tries again)."""
        if not self._live(host):
            return None
        try:
            # Not connected after all: a TransportError, and the next round tries again.
            transport = self.connections.transport(host.name)
            # A group (the one Supervised backend) read from the fleet entry, as in _live:
            # an isinstance against a runtime-checkable Protocol walks its members.
            if host.group is not None:
                watch = self.watches.get(host.name)
                if watch is None:  # made once: a watch's memory lasts between polls
                    backend = cast(Supervised, backend_for(host, self.connections))
                    watch = self.watches[host.name] = backend.watch()
                view = await watch.check(transport)
                if isinstance(watch, GroupSupervisor):
                    self.ranks[host.name] = watch.ranks
            else:
                view = await read_queue_view(host, transport)
                view = await self._with_sent_note(host, transport, view)
                view = await self._with_code_note(host, transport, view)
            if self.inside is not None and backend_for(host).allocations:
                view = await self.inside.annotate(host, transport, view)
        except Exception:  # noqa: BLE001 - the telemetry link reports connection trouble
            return None
        self.views[host.name] = view
        self.on_view(host.name, view)
        return view

    async def _with_sent_note(
        self, host: HostConfig, transport: Transport, view: QueueView
    ) -> QueueView:
        """``view`` with what `queue show` prints of the local file against the box's copy:
        lines already sent edited locally (the box runs its copy, not the edit), else the
        cells added and not sent yet; compared again only when the local file, the fleet
        or the box's queue changed since the last comparison."""
        if host.queue is None:
            return view
        if not view.cells and view.state != NOT_DEPLOYED:
            # A scheduler's host, or records of another kind: the view says what they
            # are (against_box says nothing of a scheduler's host, reading nothing).
            return view
        try:
            # Off the loop: every poll of every host asks, and a queue file may sit on a
            # network mount.
            st = await asyncio.to_thread(os.stat, host.queue)
            stamp: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
        except OSError:
            # Compared all the same: against_box says the file cannot be read (a typo in
            # the queue path), or the tab's "not sent" lines vanished unsaid (s37 #7).
            stamp = None
        fleet = self.fleet() if self.fleet is not None else None
        made_for = (stamp, view.total, view.launch, fleet)
        kept = self.sent_notes.get(host.name)
        # Lines at fault among those not sent: compared on every poll while said, as
        # their fix may be in another file (a name used twice, renamed in the other); so
        # are configs not on the box as here while nothing runs, as a sync (y, or the
        # command line's) fixes them (review h494 #1: "y (Sync) first" stayed after it).
        said = kept[1].not_sent if kept is not None else None
        faulty = said is not None and (said.problems or (said.stale and not view.runner_alive))
        if kept is None or kept[0] != made_for or faulty:
            try:
                compared = await against_box(host, transport, view, fleet)
                if fleet is not None:  # what an append would refuse, said before it (h471 #6)
                    compared = await with_stale_configs(fleet, host, transport, view, compared)
            except Exception:  # noqa: BLE001 - an unreadable copy: the next change tries again
                compared = AgainstBox()
            kept = (made_for, compared)
            self.sent_notes[host.name] = kept
        compared = kept[1]
        if compared.changed is None and compared.not_sent is None:
            return view
        return replace(view, sent_changed=compared.changed or "", not_sent=compared.not_sent)

    async def _with_code_note(
        self, host: HostConfig, transport: Transport, view: QueueView
    ) -> QueueView:
        """``view`` with ``code_note`` while the user watches the host's Queue tab and its
        queue runs with cells still to start (``box_code``): hashing the tree here and on
        the box is too much for every poll of every host, so only then, and at most every
        ``CODE_NOTE_S``. ``watch`` watches no tab: it never pays for it."""
        if host.ready.code is None or not self.is_watched(host.name) or not still_to_run(view):
            return view
        now = time.monotonic()
        kept = self.code_notes.get(host.name)
        if kept is not None and kept[2] != _launch_key(view):
            kept = None
        busy = self._code_looks.get(host.name)
        fleet = self.fleet() if self.fleet is not None else None
        if fleet is not None and (kept is None or now - kept[0] >= CODE_NOTE_S) and not busy:
            # Beside the poll, never in it: the view goes on being read while the trees
            # are hashed; a later poll carries the note.
            look = asyncio.create_task(self._look_at_code(fleet, host, transport, view))
            self._code_looks[host.name] = look
            look.add_done_callback(partial(self._look_done, host.name))
        note = code_note(host, view, kept[1]) if kept is not None else ""
        return replace(view, code_note=note) if note else view

    def _look_done(self, host: str, look: asyncio.Task[None]) -> None:
        """Forget ``look`` once it ended, unless another has taken its place (review s38)."""
        if self._code_looks.get(host) is look:
            del self._code_looks[host]

    async def _look_at_code(
        self, fleet: Fleet, host: HostConfig, transport: Transport, view: QueueView
    ) -> None:
        try:
            differs = await code_differs(fleet, host, transport)
        except Exception:  # noqa: BLE001 - a look that failed says nothing; the next tries
            differs = ""
        # Where the code differs, not the note: each poll words it for its own view.
        self.code_notes[host.name] = (time.monotonic(), differs, _launch_key(view))

    def _live(self, host: HostConfig) -> bool:
        """``host``'s telemetry is connected; a group (issue 41) is watched while any of
        its boxes is: a rank 0 that is gone is exactly when the others must be stopped."""
        # Read from the fleet entry, not a backend: every host asks every few seconds,
        # and an isinstance against a runtime-checkable Protocol walks its members
        # (3 % of `watch`'s CPU at 250 hosts, issue 44).
        boxes = host.group.hosts if host.group is not None else ()
        return self.is_live(host.name) or any(self.is_live(b) for b in boxes)

    async def poll(self, host: HostConfig) -> None:
        """Poll ``host`` until cancelled (its code look, if one is under way, with it)."""
        try:
            await self._poll(host)
        finally:
            look = self._code_looks.pop(host.name, None)
            if look is not None:
                look.cancel()

    async def _poll(self, host: HostConfig) -> None:
        while True:
            if not self._live(host):
                await asyncio.sleep(TICK_S)
                continue
            if not self.is_wanted(host):
                # A host with no queue file whose box runs nothing: looked at again on the
                # watched cadence, not every tick (a fleet of such hosts woke the loop
                # twice a second each for nothing).
                await asyncio.sleep(WATCHED_POLL_S)
                continue
            await self.poll_once(host)
            waited = 0.0
            while waited < self.poll_s and not (
                waited >= WATCHED_POLL_S and self.is_watched(host.name)
            ):
                await asyncio.sleep(TICK_S)
                waited += TICK_S


def _launch_key(view: QueueView) -> tuple[int, str] | None:
    """Which launch ``view`` is of (its time and boot): a stop asked or the done record
    changes the launch's record, not the code it runs (review h483 #11)."""
    launch = view.launch
    return (launch.ts, launch.boot_id) if launch is not None else None
