"""``rgt-tui watch``'s engine: the TUI's fleet runtime, headless.

One ``FleetConnections`` and one ``FleetRuntime`` (``services.runtime``: the monitors, the
slow queue polls, the events derived with each monitor's health — the very runtime the
TUI runs). After every sample, poll or tick the host's ``HostState`` goes to every sink's
``on_host``; the events it owes (``EventTracker`` over the journal's watch memory) go to
every sink's ``on_event``.
A sink may have either or both, each sync or async, and a ``resume`` called once at the
start (the Notifier's: what a target never got last run goes out now); one that raises
is reported and the others still hear (``sinks.Sink``). The drivers are wired here, by
plain imports: the periodic pull (``drivers.periodic_pull.PullScheduler``) and the
autostop (``drivers.autostop.AutoStop``), both holding hosts by the runtime's one
``HostLocks``; their own events (a stop, a pull) reach the sinks the same way.

Time-based events (a reminder, a silent box) need no new sample: each host is looked at
again every ``tick_s`` as well. ``check_now`` does it at once (tests, with their clock).

Over 450 lines on purpose: the watch's wiring (runtime, drivers, sinks, the fleet file's
changes) is one place to read how `watch` runs; each driver lives in its own module.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any

from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.health import Alert
from rgt_tui.domain.preemption import hhmm
from rgt_tui.domain.queue_state import QueueView
from rgt_tui.domain.units import fmt_duration
from rgt_tui.paths import journal_dir
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.journal import JournalError, journal_for
from rgt_tui.services.runtime.events import (
    FleetFileRejected,
    FleetReloaded,
    HostObserved,
    HostPreempted,
    RuntimeEvent,
    TelemetryEnded,
    Told,
)
from rgt_tui.services.runtime.fleet_file import FLEET_FILE_EVERY_S
from rgt_tui.services.runtime.monitors import MonitorLike
from rgt_tui.services.runtime.runtime import TICK_S, FleetRuntime
from rgt_tui.services.runtime.torn_down import TornDownHosts
from rgt_tui.services.telemetry import HostUpdate
from rgt_tui.services.watch.derivation import HostEvents
from rgt_tui.services.watch.drivers.autostop import AutoStop
from rgt_tui.services.watch.drivers.on_preempt import OnPreempt
from rgt_tui.services.watch.drivers.periodic_pull import PullScheduler
from rgt_tui.services.watch.drivers.still_answers import EVERY_S, StillAnswers
from rgt_tui.services.watch.events import HostState, WatchEvent
from rgt_tui.services.watch.sinks import Sink
from rgt_tui.services.watch.told_log import KINDS as TOLD_KINDS
from rgt_tui.services.watch.told_log import ToldLog, told_log_path
from rgt_tui.services.watch.tracker import NOT_CONNECTED, SILENT_GRACE_S
from rgt_tui.transport import Transport, transport_for
from rgt_tui.transport.backoff import Backoff

QUEUE_POLL_S = 30.0  # a finished queue told within half a minute is soon enough


async def settled(result: object) -> None:
    """A sink's or driver's answer, awaited when it is a coroutine (either may be sync)."""
    if inspect.isawaitable(result):
        await result


def watched_hosts(fleet: Fleet) -> tuple[list[HostConfig], list[str]]:
    """The hosts to watch, and a line for each left out: a box recorded as torn down is
    gone, as it should be, and never told as silent."""
    journal = journal_for(fleet)
    hosts: list[HostConfig] = []
    skipped: list[str] = []
    for host in fleet.hosts:
        try:
            gone = journal.load(host.name).torn_down_at is not None
        except JournalError:
            gone = False  # a damaged journal: watch it; the teardown screen says the rest
        if gone:
            skipped.append(
                f"{host.name}: recorded as torn down: not watched; looked at every "
                f"{EVERY_S / 60:.0f} min in case the same box still answers (GEN1)"
            )
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
        sinks: Sequence[Sink] = (),
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
        monitors: Mapping[str, MonitorLike] | None = None,
        fleet_file_every_s: float = FLEET_FILE_EVERY_S,
        left_out: Sequence[tuple[str, str]] = (),
    ) -> None:
        self.fleet = fleet
        # Entries of the fleet file left out for their mistakes, (name, where) each: told
        # to the targets at start, not only on the console a systemd unit hides.
        self.left_out = tuple(left_out)
        self.sinks = list(sinks)
        self.hosts = list(hosts) if hosts is not None else watched_hosts(fleet)[0]
        self.clock = clock
        self.report = report
        self._key_said: dict[str, str | None] = {}  # each host's refused key, as last said
        self._torn_said: set[str] = set()  # hosts said to be torn down since watch started
        self.fleet_file_every_s = fleet_file_every_s
        self.connections = FleetConnections(
            self.hosts, factory=factory, backoff=backoff or Backoff()
        )
        self.events = HostEvents.for_fleet(fleet, silent_grace_s=silent_grace_s)
        self.silent_grace_s = silent_grace_s
        self.tracker = self.events.tracker
        self.runtime: FleetRuntime[HostState, WatchEvent] = FleetRuntime(
            fleet,
            self.connections,
            on_event=self._route,
            monitors=monitors,
            hosts=self.hosts,
            clock=clock,
            derive=self.events,
            queue_poll_s=queue_poll_s,
            sample_allocations=False,  # a GPU note is drawn, never told
            tick_s=tick_s,
            agent_args=agent_args,
            report=report,
            # A fleet file that changes while watching: its torn-down boxes left out too.
            pick_hosts=lambda fleet: watched_hosts(fleet)[0],
            # One torn down while watching: no GEN1 "forgotten" from then on, nor its
            # queue read (still answering: the StillAnswers driver tells it).
            is_torn_down=TornDownHosts(None if fleet.is_default else lambda: self.runtime.fleet),
        )
        self.monitors = self.runtime.monitors
        self._outbox: asyncio.Queue[WatchEvent] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._side: set[asyncio.Task[None]] = set()  # autostop checks under way
        self._delivering: asyncio.Future[None] | None = None  # the delivery loop (run)
        # The drivers' events told (once across runs; the open TUI lists what watch did).
        self.told_log = (
            None if fleet.is_default else ToldLog(told_log_path(journal_dir(fleet.path)))
        )
        self.pull: PullScheduler | None = None
        self.autostop: AutoStop | None = None
        self.on_preempt: OnPreempt | None = None
        self.still_answers: StillAnswers | None = None
        if drivers:
            self._make_drivers()

    @property
    def latest(self) -> dict[str, HostUpdate]:
        """Each host's latest update (the runtime's)."""
        return self.runtime.latest

    @property
    def queues(self) -> dict[str, QueueView]:
        """Each host's latest queue view (the runtime's polls)."""
        return self.runtime.queues.views

    @property
    def told(self) -> deque[WatchEvent]:
        """The events delivered by this watcher's runtime, latest last (bounded)."""
        return self.runtime.told

    def _make_drivers(self) -> None:
        """The periodic pull and the autostop, on the runtime's one ``HostLocks``: a pull
        and a stop of one host never run together."""
        locks = self.runtime.locks
        # Hosts with pull folders, once their queue view (the runtime's) shows results.
        self.pull = PullScheduler(
            self.fleet,
            self.connections,
            emit=self.emit,
            clock=self.clock,
            locks=locks,
            queue_view=self.runtime.queues.views.get,
            stopped=self.runtime.stopped_at,
            on_skip=lambda host, title, why: self.report(f"{title}: {why}"),
            on_outcome=self._pulled,
        )
        self.autostop = AutoStop(
            self.fleet, self.connections, emit=self.emit, clock=self.clock, locks=locks,
            report=self.report, fleet_mistake=self.runtime.fleet_mistake,
        )  # fmt: skip
        # issue 40: a preemption told, and on_preempt's action
        self.on_preempt = OnPreempt(
            self.fleet, self.connections, emit=self.emit, clock=self.clock,
            queue_view=self.runtime.queues.views.get, fleet_mistake=self.runtime.fleet_mistake,
        )  # fmt: skip
        # GEN1: a box recorded as torn down that still answers (it is not watched).
        self.still_answers = StillAnswers(
            self.fleet, emit=self.emit, clock=self.clock, on_look=self._torn_down_looked
        )

    def _pulled(self, host: str, ok: bool, at: float) -> None:
        """A periodic pull's end, to the sinks (metrics)."""
        for sink in self.sinks:
            self._background(self._call(sink, "on_pull", partial(sink.on_pull, host, ok, at)))

    def _torn_down_looked(self, answering: dict[str, Alert]) -> None:
        """The torn-down boxes that answered the driver's look, to the sinks (metrics)."""
        for sink in self.sinks:
            self._background(
                self._call(sink, "on_torn_down", partial(sink.on_torn_down, answering))
            )

    def emit(self, event: WatchEvent) -> None:
        """An event from a driver (a stop, a pull): delivered to the sinks in turn."""
        self._outbox.put_nowait(event)

    # -- running -------------------------------------------------------------------------

    async def run(self) -> None:
        """Watch until cancelled; connections are closed on the way out (the memory is
        saved as each event is derived, so a stop loses nothing)."""
        try:
            self._say_refusals()
            await self._resume_sinks()
            self.runtime.start()
            # The TUI's own mechanism: hosts.toml is live.
            self.runtime.watch_fleet_file(self.fleet_file_every_s)
            self._delivering = asyncio.ensure_future(self._deliver_loop())
            self._tasks.append(self._delivering)
            if self.pull is not None:
                self._spawn(self._guarded(self.pull.run(), "the periodic pull"))
            if self.still_answers is not None:
                self._spawn(self._guarded(self.still_answers.run(), "the torn-down boxes' check"))
            await asyncio.gather(*self._tasks)
        finally:
            await self.close()

    async def once(self, timeout: float = 30.0) -> list[WatchEvent]:
        """One pass: each host's first sample (or first failure) within ``timeout``, its
        queue read once, the events derived and delivered; then everything closed.
        Returns the events told."""
        if self.on_preempt is not None:
            self.on_preempt.follow_s = 0.0  # a pass looks at a lost claim's outcome once
        try:
            self._say_refusals()
            await self._resume_sinks()
            self.runtime.start(polls=False)
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            while loop.time() < deadline and not all(self._answered(h.name) for h in self.hosts):
                await asyncio.sleep(0.05)
            self._say_unanswered(timeout)
            await asyncio.gather(*(self.runtime.queues.poll_once(h) for h in self.hosts if h.queue))
            if self.still_answers is not None:
                await self._guarded(self.still_answers.check(), "the torn-down boxes' check")
            await self.check_now()
            # The autostop's gate check and stop run beside the samples: a pass waits for
            # them, and delivers what they told (cron's --once cancelled each stop as it
            # closed: hour s23c #1).
            while self._side:
                await asyncio.gather(*list(self._side), return_exceptions=True)
            await self._drain()
            return list(self.told)
        finally:
            await self.close()

    def _say_unanswered(self, timeout: float) -> None:
        """``--once``: each host that did not answer, on the console now, with why when
        known; its ``silent`` event comes only past the grace, in a later pass (cron)."""
        later = f"a silence past {fmt_duration(self.silent_grace_s)} is told as a silent event"
        for host in self.hosts:
            update = self.runtime.latest.get(host.name)
            conn = update.connection if update is not None else None
            if conn is None or conn.status == "connecting":
                why = f"no answer within {timeout:g} s (the connection did not finish)"
            elif conn.key_error is not None:
                continue  # said already (_say_key_refusal), and told as host_key: no silence
            elif conn.status in NOT_CONNECTED:
                # "not reached", not "does not answer": a missing key file never dialled
                # the box (hour s33 CLI #12); the error says which.
                why = f"not reached: {conn.error or 'no sample'}" + (
                    f" (fix: {conn.fix})" if conn.fix else ""
                )
            else:
                continue
            self.report(f"{host.name}: {why} ({self._told_later(host, later)})")

    def _told_later(self, host: HostConfig, silent: str) -> str:
        """How a host's silence is told past this pass: a box named preempted by its
        preemption, not a ``silent`` event (h502 #10: one read as a box to check the port
        of, its silence to come)."""
        named = self.runtime.preemptions.current.get(host.name)
        if named is None or not named.named:
            return silent
        return (
            f"named preempted at ~{hhmm(named.at)}, not silent: `rgt-tui queue show "
            f"{host.name}` says what to move"
        )

    def _answered(self, host: str) -> bool:
        return self.runtime.answered(host)

    async def check_now(self) -> None:
        """Look at every host now (after the clock moved, say) and deliver what is owed."""
        await self.runtime.check_now()
        await self._drain()

    async def close(self) -> None:
        """Stop every task and close every connection; never raises."""
        tasks, self._tasks = [*self._tasks, *self._side], []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.runtime.close()
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

    def _say_refusals(self) -> None:
        """Each host whose autostop can never run as configured, and why: said once; and
        each entry left out for its mistakes, to the notify targets (hour s34 CLI #2: a
        restart under systemd said it on stderr alone, and that box, still billing, went
        unwatched with no autostop)."""
        if self.autostop is not None:
            for name, why in self.autostop.refusals.items():
                if not self.runtime.is_torn_down(name):  # a torn-down box is not stopped
                    self.report(why)
        stamp = "-".join(str(n) for n in self.fleet.read_stamp or ())
        where = self.fleet.path or "the fleet file"
        for name, lines in self.left_out:
            self.emit(
                WatchEvent(
                    "left_out",
                    name,
                    f"left_out:{name}:{stamp}",  # once per reading: a restart loop is no news
                    f"{name} left out of the fleet file for a mistake: not watched",
                    f"{where}{lines} has a mistake, so watch started without {name}: no "
                    "alerts, no autostop and no periodic pulls for it while it may still "
                    "bill. Fix the file (any rgt-tui command on it names the mistake); "
                    "watch applies it when saved.",
                    "warning",
                )  # fmt: skip
            )

    async def _resume_sinks(self) -> None:
        # What a sink owes from before (a notification a target never got: it failed,
        # or the last run stopped first) goes out now, not only when a new event comes.
        for sink in self.sinks:
            await self._call(sink, "resume", sink.resume)

    def _route(self, event: RuntimeEvent) -> Awaitable[None] | None:
        """The runtime's news, to the sinks: a host's state, an event owed, a monitor
        that stopped; the rest (panes' samples, danger clocks) is the TUI's."""
        if isinstance(event, HostObserved):
            return self._observed(event.host, event.state)
        if isinstance(event, Told):
            return self._deliver(event.event)
        if isinstance(event, HostPreempted) and self.on_preempt is not None:
            on_preempt = self.on_preempt
            self._background(
                self._call(
                    on_preempt,
                    "on_preempted",
                    lambda: on_preempt.on_preempted(event.host, event.preemption),
                )
            )
        elif isinstance(event, TelemetryEnded):
            self.report(f"{event.host}: telemetry stopped: {event.error}")
        elif isinstance(event, FleetReloaded):
            self._fleet_reloaded(event)
        elif isinstance(event, FleetFileRejected):
            self.report(f"{event.error} — not applied; watching on the last good settings")
        return None

    def _fleet_reloaded(self, event: FleetReloaded) -> None:
        """The fleet file changed: the runtime runs it; the drivers take it too."""
        self.fleet = event.fleet
        self.hosts = list(self.runtime.hosts.values())
        for driver in (self.pull, self.on_preempt, self.still_answers):
            if driver is not None:
                driver.fleet = event.fleet
        fleet = event.fleet
        for sink in self.sinks:  # the notifier's targets, the metrics' hosts
            # Bound now: the call runs later, when the loop has moved on to the next sink.
            self._background(self._call(sink, "on_fleet", partial(sink.on_fleet, fleet)))
        # notify_reminder_minutes applies at once, as the rest of the file does.
        self.tracker.reminder_s = event.fleet.watch.reminder_minutes * 60
        if summary := event.changes.summary():
            self.report(f"fleet file: {summary}")
        for name, words in event.changes.left:
            # Unattended, "nothing watches it now" is what the notify targets must hear
            # (hour s23a #8: said on the console alone).
            self.emit(
                WatchEvent(
                    "removed",
                    name,
                    f"removed:{name}:{self.clock():.0f}",
                    f"{name} removed from the fleet file",  # why: its words (not "at work")
                    words,
                    "warning",
                )  # fmt: skip
            )
        if self.autostop is not None:
            for name, why in self.autostop.reload(event.fleet).items():
                # A torn-down box is not watched, nor stopped: its refusal was said again at
                # each edit of the file (s37 money hour #11).
                if not self.runtime.is_torn_down(name):
                    self.report(why)
        # Its own line: the console's last word on a mistake must not stay "not applied".
        if event.fixed:
            self.report(f"fleet file: {event.fleet.path} fixed and applied")

    async def _observed(self, host: HostConfig, state: HostState) -> None:
        """Hand the host's state to the sinks and the autostop; a refused host key is
        said on the console at once, with its fix."""
        self._say_key_refusal(host.name)
        self._say_torn_down(host.name)
        for sink in self.sinks:
            await self._call(sink, "on_host", lambda: sink.on_host(host, state))  # noqa: B023
        autostop = self.autostop
        # A host without autostop_minutes is none of its business (its on_host returns at
        # once): no task for it per sample of every host.
        if autostop is not None and host.watch.autostop_minutes is not None:
            # Its gate check may take minutes (a re-scan, a re-hash): not awaited here,
            # and a call while one is going returns at once (AutoStop's own guard).
            self._background(self._call(autostop, "on_host", lambda: autostop.on_host(host, state)))

    def _say_torn_down(self, host: str) -> None:
        """A host recorded as torn down while watch runs (the TUI's teardown, `rgt-tui
        teardown`) is said once on the console: it left only the metrics' figures to
        tell (h491 #6). One torn down before watch started is said at its start."""
        if host in self._torn_said or not self.runtime.is_torn_down(host):
            return
        self._torn_said.add(host)
        self.report(f"{host}: recorded as torn down: its cost stops once the box is gone")

    def _say_key_refusal(self, host: str) -> None:
        """A refused host key needs the user, not a retry: said once when it comes (and
        again if it changes), with the fix, as `status` says it. It used to show only as
        the silent event five minutes later, blaming the network (a user's hour)."""
        update = self.runtime.latest.get(host)
        error = update.connection.key_error if update is not None else None
        said = error.message if error is not None else None
        if said != self._key_said.get(host):
            self._key_said[host] = said
            if error is not None:
                fix = f" — {error.fix}" if error.fix else ""
                self.report(f"{host}: {error.message}{fix}")

    async def _call(self, sink: object, method: str, call: Callable[[], object]) -> None:
        """``call()`` (``sink.method``), awaited when it is a coroutine; what it raises is
        reported, never passed on: one sink's failure must not silence the others."""
        try:
            await settled(call())
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - one sink's failure must not silence others
            self.report(f"{type(sink).__name__}.{method} failed: {type(exc).__name__}: {exc}")

    async def _deliver(self, event: WatchEvent) -> None:
        for sink in self.sinks:
            await self._call(sink, "on_event", lambda: sink.on_event(event))  # noqa: B023

    async def _drain(self) -> None:
        """Every event emitted so far delivered, in the order emitted: by the delivery
        loop while it runs (one consumer: a second one here told a move before the
        preemption it acted on, the first waiting on the told log's thread), else here."""
        if self._delivering is not None and not self._delivering.done():
            await self._outbox.join()
            return
        while not self._outbox.empty():
            try:
                await self._deliver_driver(self._outbox.get_nowait())
            finally:
                self._outbox.task_done()

    async def _deliver_driver(self, event: WatchEvent) -> None:
        log = self.told_log
        if log is not None and event.kind in TOLD_KINDS:
            # A preemption is named again after each restart: told once, ever (--once
            # under cron printed and counted it on every run).
            try:
                if await asyncio.to_thread(log.told, event, self.clock()):
                    return
            except OSError as exc:
                self.report(f"{log.path}: {exc.strerror or exc} — told again if repeated")
        self.told.append(event)
        await self._deliver(event)

    async def _deliver_loop(self) -> None:
        while True:
            event = await self._outbox.get()
            try:
                await self._deliver_driver(event)
            except Exception as exc:  # noqa: BLE001 - the loop must outlive one bad event
                self.report(f"{event.host}: {event.kind} not delivered: {exc!r}")
            finally:
                self._outbox.task_done()
