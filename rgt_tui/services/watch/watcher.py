"""``rgt-tui watch``'s engine: the TUI's telemetry and queue polling, headless.

One ``FleetConnections`` and one ``HostMonitor`` per host (as the TUI builds them), a slow
queue poll per host with a queue (``read_queue_view`` over the shared connection, only
while telemetry is connected: it never opens a connection of its own). After every
sample or poll the host's ``HostState`` goes to every sink's ``on_host``; the events it
owes (``EventTracker`` over the journal's watch memory) go to every sink's ``on_event``.
A sink may have either or both, each sync or async, and a ``resume`` called once at the
start (the Notifier's: what a target never got last run goes out now); one that raises
is reported and the others still hear. The periodic pull (``PullScheduler``) and the
autostop (``AutoStop``) are driven from here too, where their modules are installed;
their own events (a stop, a pull) reach the sinks the same way.

Time-based events (a reminder, a silent box) need no new sample: each host is looked at
again every ``tick_s`` as well. ``check_now`` does it at once (tests, with their clock).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.queue_state import QueueView
from rgt_tui.paths import journal_dir
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.journal import Journal, JournalError
from rgt_tui.services.queue_view import read_queue_view
from rgt_tui.services.telemetry import HostMonitor, HostUpdate, default_last_seen
from rgt_tui.services.watch.events import WatchEvent
from rgt_tui.services.watch.state import host_state
from rgt_tui.services.watch.store import EventTracker, WatchStore, settle_seconds, watch_dir
from rgt_tui.services.watch.tracker import NOT_CONNECTED, SILENT_GRACE_S
from rgt_tui.transport import Transport, transport_for
from rgt_tui.transport.backoff import Backoff

QUEUE_POLL_S = 30.0  # a finished queue told within half a minute is soon enough
TOLD_KEPT = 1000
TICK_S = 15.0  # reminders and silence are minutes apart: a look every 15 s is plenty


def optional_driver(module: str, name: str) -> Any:
    """``module.name`` when that module is installed (the pull and autostop drivers),
    else None."""
    try:
        return getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None


async def call_sink(sink: object, method: str, *args: object) -> None:
    """``sink.method(*args)``, awaited when it is a coroutine; nothing when it has none."""
    fn = getattr(sink, method, None)
    if fn is None:
        return
    result = fn(*args)
    if inspect.isawaitable(result):
        await result


def watched_hosts(fleet: Fleet) -> tuple[list[HostConfig], list[str]]:
    """The hosts to watch, and a line for each left out: a box recorded as torn down is
    gone, as it should be, and never told as silent."""
    journal = Journal(journal_dir(fleet.path))
    hosts: list[HostConfig] = []
    skipped: list[str] = []
    for host in fleet.hosts:
        try:
            gone = journal.load(host.name).torn_down_at is not None
        except JournalError:
            gone = False  # a damaged journal: watch it; the teardown screen says the rest
        if gone:
            skipped.append(f"{host.name}: recorded as torn down: not watched")
        else:
            hosts.append(host)
    return hosts, skipped


class Watcher:
    """Watches ``hosts`` (default: ``watched_hosts(fleet)``) until cancelled (``run``)
    or for one pass (``once``), telling ``sinks`` (see the module docstring)."""

    def __init__(
        self,
        fleet: Fleet,
        *,
        sinks: Sequence[object] = (),
        hosts: Iterable[HostConfig] | None = None,
        clock: Callable[[], float] = time.time,
        factory: Callable[[HostConfig], Transport] = transport_for,
        backoff: Backoff | None = None,
        agent_args: Sequence[str] = (),
        queue_poll_s: float = QUEUE_POLL_S,
        tick_s: float = TICK_S,
        silent_grace_s: float = SILENT_GRACE_S,
        drivers: bool = True,
        report: Callable[[str], None] = lambda line: None,
    ) -> None:
        self.fleet = fleet
        self.sinks = list(sinks)
        self.hosts = list(hosts) if hosts is not None else watched_hosts(fleet)[0]
        self.clock = clock
        self.queue_poll_s = queue_poll_s
        self.tick_s = tick_s
        self.report = report
        self.connections = FleetConnections(
            self.hosts, factory=factory, backoff=backoff or Backoff()
        )
        self.tracker = EventTracker(
            WatchStore(watch_dir(journal_dir(fleet.path))),
            reminder_s=fleet.watch.reminder_minutes * 60,
            silent_grace_s=silent_grace_s,
            settle_s=settle_seconds(fleet.thresholds),
        )
        last_seen = default_last_seen(fleet)
        self.monitors = {
            h.name: HostMonitor(
                h,
                self.connections.transport(h.name),
                interval=fleet.poll_seconds,
                thresholds=fleet.thresholds,
                clock=clock,
                backoff=self.connections.backoff,
                connections=self.connections,
                last_seen=last_seen,
                agent_args=agent_args,
            )
            for h in self.hosts
        }
        self.latest: dict[str, HostUpdate] = {}
        self.queues: dict[str, QueueView] = {}
        # The events delivered by this watcher, latest last (bounded: it runs for months).
        self.told: deque[WatchEvent] = deque(maxlen=TOLD_KEPT)
        self._wake = {h.name: asyncio.Event() for h in self.hosts}
        self._outbox: asyncio.Queue[WatchEvent] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._side: set[asyncio.Task[None]] = set()  # autostop checks under way
        self._process_locks = {h.name: asyncio.Lock() for h in self.hosts}
        self.pull: Any = None
        self.autostop: Any = None
        if drivers:
            self._make_drivers()

    def _make_drivers(self) -> None:
        scheduler = optional_driver("rgt_tui.services.pull_schedule", "PullScheduler")
        if scheduler is not None:
            self.pull = scheduler(self.fleet, self.connections, emit=self.emit, clock=self.clock)
        autostop = optional_driver("rgt_tui.services.autostop", "AutoStop")
        if autostop is not None:
            self.autostop = autostop(self.fleet, self.connections, emit=self.emit, clock=self.clock)

    def emit(self, event: WatchEvent) -> None:
        """An event from a driver (a stop, a pull): delivered to the sinks in turn."""
        self._outbox.put_nowait(event)

    # -- running -------------------------------------------------------------------------

    async def run(self) -> None:
        """Watch until cancelled; connections are closed on the way out (the memory is
        saved as each event is derived, so a stop loses nothing)."""
        try:
            await self._resume_sinks()
            await self._start_monitors()
            for h in self.hosts:
                self._spawn(self._process_loop(h))
                if h.queue:
                    self._spawn(self._poll_queue_loop(h))
            self._spawn(self._deliver_loop())
            if self.pull is not None:
                self._spawn(self._guarded(self.pull.run(), "the periodic pull"))
            await asyncio.gather(*self._tasks)
        finally:
            await self.close()

    async def once(self, timeout: float = 30.0) -> list[WatchEvent]:
        """One pass: each host's first sample (or first failure) within ``timeout``, its
        queue read once, the events derived and delivered; then everything closed.
        Returns the events told."""
        try:
            await self._resume_sinks()
            await self._start_monitors()
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            while loop.time() < deadline and not all(self._answered(h.name) for h in self.hosts):
                await asyncio.sleep(0.05)
            await asyncio.gather(*(self._poll_queue(h) for h in self.hosts if h.queue))
            await self.check_now()
            return list(self.told)
        finally:
            await self.close()

    def _answered(self, host: str) -> bool:
        update = self.latest.get(host)
        if update is None:
            return False
        status = update.connection.status
        return (status == "connected" and update.snapshot is not None) or status in NOT_CONNECTED

    async def check_now(self) -> None:
        """Look at every host now (after the clock moved, say) and deliver what is owed."""
        for h in self.hosts:
            await self._process(h)
        await self._drain()

    async def close(self) -> None:
        """Stop every task and close every connection; never raises."""
        tasks, self._tasks = [*self._tasks, *self._side], []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        with contextlib.suppress(Exception):
            await self._drain()
        await self.connections.close_all()

    def _spawn(self, work: Any) -> None:
        self._tasks.append(asyncio.ensure_future(work))

    def _background(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._side.add(task)  # held: the loop keeps tasks only weakly
        task.add_done_callback(self._side.discard)

    async def _guarded(self, work: Any, what: str) -> None:
        try:
            await work
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - one driver's bug must not stop the watch
            self.report(f"{what} stopped: {type(exc).__name__}: {exc}")

    async def _resume_sinks(self) -> None:
        # What a sink owes from before (a notification a target never got: it failed,
        # or the last run stopped first) goes out now, not only when a new event comes.
        for sink in self.sinks:
            await self._call(sink, "resume")

    async def _start_monitors(self) -> None:
        for h in self.hosts:
            monitor = self.monitors[h.name]
            # The OOM baseline (and boot) from before: a kill while nothing watched counts.
            monitor.health = await asyncio.to_thread(self.tracker.seed_health, h.name)
            self._spawn(monitor.run(self._updated))

    def _updated(self, update: HostUpdate) -> None:
        self.latest[update.host] = update
        self._wake[update.host].set()

    async def _process_loop(self, host: HostConfig) -> None:
        wake = self._wake[host.name]
        while True:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(wake.wait(), self.tick_s)
            wake.clear()
            await self._process(host)

    async def _process(self, host: HostConfig) -> None:
        """Hand the host's state to the sinks and the autostop; deliver what it owes."""
        async with self._process_locks[host.name]:
            update = self.latest.get(host.name)
            state = host_state(host, update, self.queues.get(host.name), self.clock())
            health = self.monitors[host.name].health if update is not None else None
            events: list[WatchEvent] = []
            if not self.tracker.unchanged(host.name, state, health):
                try:
                    events = await asyncio.to_thread(self.tracker.observe, host.name, state, health)
                except OSError as exc:  # the journal folder: unwritable, full, locked
                    self.report(f"{host.name}: watch memory not saved ({exc}); tried again")
            for problem in self.tracker.store.problems:
                self.report(problem)
            self.tracker.store.problems.clear()
            for sink in self.sinks:
                await self._call(sink, "on_host", host, state)
            if self.autostop is not None:
                # Its gate check may take minutes (a re-scan, a re-hash): not awaited here,
                # and a call while one is going returns at once (AutoStop's own guard).
                self._background(self._call(self.autostop, "on_host", host, state))
            for event in events:
                await self._deliver(event)

    async def _call(self, sink: object, method: str, *args: object) -> None:
        try:
            await call_sink(sink, method, *args)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - one sink's failure must not silence others
            self.report(f"{type(sink).__name__}.{method} failed: {type(exc).__name__}: {exc}")

    async def _deliver(self, event: WatchEvent) -> None:
        self.told.append(event)
        for sink in self.sinks:
            await self._call(sink, "on_event", event)

    async def _drain(self) -> None:
        while not self._outbox.empty():
            await self._deliver(self._outbox.get_nowait())

    async def _deliver_loop(self) -> None:
        while True:
            await self._deliver(await self._outbox.get())

    async def _poll_queue(self, host: HostConfig) -> None:
        update = self.latest.get(host.name)
        if update is None or update.connection.status != "connected":
            return  # never a connection of its own: telemetry's says when it is up
        try:
            view = await read_queue_view(host, self.connections.transport(host.name))
        except Exception:  # noqa: BLE001 - unreachable or unreadable: the next round tries
            return
        self.queues[host.name] = view
        self._wake[host.name].set()

    async def _poll_queue_loop(self, host: HostConfig) -> None:
        while True:
            if self.latest.get(host.name) is None or not self._answered(host.name):
                await asyncio.sleep(0.5)  # first sample not in yet
                continue
            await self._poll_queue(host)
            await asyncio.sleep(self.queue_poll_s)
