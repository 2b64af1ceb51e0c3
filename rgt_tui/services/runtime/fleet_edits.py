"""Hosts that come and go while the fleet runs: the fleet file read again (``FleetFileHosts``,
mixed into ``FleetRuntime``).

``watch_fleet_file`` looks at the file every few seconds (``fleet_file.FleetFileWatch``);
``adopt`` runs a new reading (or a host added by ``+``): hosts added get a monitor, a
queue poll and an event loop; hosts removed lose them and their connection; a host whose
settings changed gets its monitor built again (over a new connection when its address,
user, key or host-key policy changed), keeping its health. A reading with a mistake is
refused whole and told (``FleetFileRejected``): the fleet runs on as it was.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from rgt_tui.domain.config import ConfigError, Fleet, HostConfig
from rgt_tui.domain.history import HostHistory
from rgt_tui.domain.shared_account import sharing_account
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.runtime.events import FleetFileRejected, FleetReloaded, RuntimeEvent
from rgt_tui.services.runtime.fleet_file import (
    FLEET_FILE_EVERY_S,
    FleetChanges,
    FleetFileWatch,
    fleet_changes,
    left_words,
    renamed_words,
)
from rgt_tui.services.runtime.monitors import MonitorLike, build_monitors
from rgt_tui.services.runtime.queues import QueuePoller
from rgt_tui.services.telemetry import HostMonitor, HostUpdate
from rgt_tui.transport import Transport

CLOSE_GRACE_S = 3.0


async def settle(tasks: list[asyncio.Task[None]]) -> None:
    """Wait (``CLOSE_GRACE_S`` at most) for cancelled tasks to let go of their channels."""
    pending = [t for t in tasks if not t.done()]
    if pending:
        await asyncio.wait(pending, timeout=CLOSE_GRACE_S)


class FleetFileHosts:
    """``FleetRuntime``'s hosts coming and going (see the module docstring); the
    attributes below are the runtime's own."""

    fleet: Fleet
    connections: FleetConnections
    hosts: dict[str, HostConfig]
    monitors: dict[str, MonitorLike]
    monitor_tasks: dict[str, asyncio.Task[None]]
    histories: dict[str, HostHistory]
    latest: dict[str, HostUpdate]
    stopped: set[str]
    queues: QueuePoller
    clock: Callable[[], float]
    agent_args: tuple[str, ...]
    report: Callable[[str], None]
    start_added: bool
    pick_hosts: Callable[[Fleet], Iterable[HostConfig]] | None
    fleet_file: FleetFileWatch | None
    _polls: dict[str, asyncio.Task[None]]
    _loops: dict[str, asyncio.Task[None]]
    _pending: dict[str, HostUpdate]
    is_torn_down: Callable[[str], bool]

    if TYPE_CHECKING:  # the runtime's own, for the type checker

        def _spawn(self, work: Any) -> None: ...
        def _emit_now(self, event: RuntimeEvent) -> None: ...
        def _ensure_poll(self, name: str) -> None: ...
        def add_host(self, host: HostConfig, *, start: bool = True) -> None: ...
        def start_monitor(self, host: str, *, seed: bool = True) -> asyncio.Task[None]: ...

    def fleet_mistake(self) -> str:
        """The fleet file's mistake that keeps it from being applied ("" when none): the
        commands in force meanwhile (teardown, stop) are the last good file's, not the
        ones saved beside the mistake, so a teardown or an autostop waits (h491 #1). A
        file saved since the last look is not known yet either (review h492 #2: a name
        typed within the 2 s after a broken save ran the old command). One stat."""
        watch = self.fleet_file
        if watch is None:
            return ""
        if watch.rejected is not None:
            return str(watch.rejected)
        if watch.changed_unread():
            return (
                f"{watch.path()} was saved a moment ago and is read every "
                f"{watch.every_s:g} s: not read yet"
            )
        return ""

    def watch_fleet_file(self, every_s: float = FLEET_FILE_EVERY_S) -> FleetFileWatch:
        """Read the fleet file again whenever it changes (``look_at_fleet_file`` every
        ``every_s`` seconds) and run what it says from then on."""
        watch = self.fleet_file = FleetFileWatch(lambda: self.fleet.path, every_s=every_s)
        watch.baseline_now(self.fleet.read_stamp)
        self._spawn(self._fleet_file_loop(watch))
        return watch

    async def _fleet_file_loop(self, watch: FleetFileWatch) -> None:
        while True:
            await asyncio.sleep(watch.every_s)
            try:
                await self.look_at_fleet_file()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the fleet runs on, as it was
                self.report(f"fleet file not applied: {type(exc).__name__}: {exc}")

    async def look_at_fleet_file(self) -> None:
        """One look: a changed file is applied (``FleetReloaded``) or, with a mistake,
        refused whole (``FleetFileRejected``: the fleet keeps its last good settings)."""
        watch = self.fleet_file
        if watch is None:
            return
        refused_before = watch.rejected is not None
        found = await watch.look()
        if isinstance(found, Fleet) and found.is_default and not self.fleet.is_default:
            # An empty file (an editor saving in place, a truncation) read as "this machine
            # alone": every box dropped, "removed … still bills" told for each, to the
            # empty file's targets, i.e. no one (s37 fleet hour #2). Refused, as a file
            # not found is, until it names hosts again.
            found = watch.rejected = ConfigError(
                found.path or "fleet file",
                "names no host now (saved half-way? every [[hosts]] block deleted?); to "
                "stop watching every box, quit rgt-tui instead",
            )
        if isinstance(found, ConfigError):
            self._emit_now(FleetFileRejected(found))
        elif found is not None:
            self.adopt(found, fixed=refused_before)

    def adopt(self, fleet: Fleet, *, fixed: bool = False) -> FleetChanges:
        """Run ``fleet`` from now on (a new reading of the file, a host added by ``+``):
        hosts added, removed and changed are applied, and ``FleetReloaded`` told."""
        wanted = list(fleet.hosts if self.pick_hosts is None else self.pick_hosts(fleet))
        changes = fleet_changes(self.fleet, fleet, self.hosts.values(), wanted)
        # A removed entry whose account another entry still logs in to (the teardown
        # gate's own fix for two entries of one box) leaves nothing unwatched: no warning
        # that "it still bills" (hour s23c #6).
        left = []
        added = {h.name for h in changes.added}
        # The stand-in fleet's "local" was no box of the user's: nothing to warn of.
        for name in () if self.fleet.is_default else changes.removed:
            host = self.fleet.host(name)
            running, torn = self._running_cell(name), self.is_torn_down(name)
            same = sharing_account(fleet, host)
            renamed = [n for n in same if n in added]
            if renamed and running is not None:
                view = self.queues.views.get(name)
                words = renamed_words(name, renamed[0], running, view.owner if view else "")
                if words:
                    left.append((name, words))
                continue
            if same:
                continue
            words = left_words(name, running, torn, group=host.group is not None)
            if words:
                left.append((name, words))
        changes = replace(changes, left=tuple(left))
        self.fleet = fleet
        for name in changes.removed:
            self.remove_host(name)
        for host in changes.added:
            self.add_host(host, start=self.start_added)
        edited = {h.name for h in changes.edited}
        for host in wanted:
            if host.name in edited or (changes.settings and host.name in self.monitors):
                self.replace_host(host, reconnect=host.name in changes.reconnect)
        self._emit_now(FleetReloaded(fleet, changes, fixed))
        return changes

    def _running_cell(self, name: str) -> str | None:
        """The cell the last queue read of ``name`` found running (None: none, or no read)."""
        view = self.queues.views.get(name)
        current = view.current if view is not None else None
        return current.name if current is not None else None

    def remove_host(self, name: str) -> None:
        """A host gone from the fleet file: its monitor, poll and event loop stop, what
        was known of it goes, and its connection closes once its monitor has let go."""
        tasks = [
            t
            for t in (self.monitor_tasks.pop(name, None), self._polls.pop(name, None),
                      self._loops.pop(name, None))
            if t is not None
        ]  # fmt: skip
        for task in tasks:
            task.cancel()
        for table in (self.hosts, self.monitors, self.histories, self.latest, self._pending):
            table.pop(name, None)  # type: ignore[attr-defined]
        self.queues.views.pop(name, None)
        self.stopped.discard(name)
        self._spawn(self._close_after(tasks, self.connections.detach(name)))

    def replace_host(self, host: HostConfig, *, reconnect: bool = False) -> None:
        """``host``'s settings changed: its monitor is built again with them (over a new
        connection when ``reconnect``: its address, user, key or host-key policy
        changed), going on from what the old one saw (its health, last sample and
        sightings: ``HostMonitor.carry_on``), and restarted unless its telemetry was
        stopped."""
        name = host.name
        self.hosts[name] = host
        old = self.connections.detach(name) if reconnect else None
        self.connections.add(host)
        tasks = [t for t in (self.monitor_tasks.pop(name, None), self._polls.pop(name, None)) if t]
        for task in tasks:
            task.cancel()
        before = self.monitors.get(name)
        if before is not None or self.start_added:
            monitor = build_monitors(
                self.fleet, self.connections, self.clock, [host], self.agent_args
            )[name]
            if isinstance(before, HostMonitor) and isinstance(monitor, HostMonitor):
                monitor.carry_on(before)  # its health, last sample and sightings
            elif before is not None:
                monitor.health = before.health  # the OOM baseline and boot carry on
            self.monitors[name] = monitor
            if name not in self.stopped:
                self.start_monitor(name, seed=before is None)
        self._ensure_poll(name)
        self._spawn(self._close_after(tasks, old))

    async def _close_after(self, tasks: list[asyncio.Task[None]], old: Transport | None) -> None:
        await settle(tasks)
        if old is not None:
            with contextlib.suppress(Exception):
                await old.close()
