"""``FleetRuntime``: what a running fleet is, once, for the TUI and ``watch`` alike.

It owns one monitor per host (``build_monitors``, or the ones a test hands in), the
queue polls, the latest update and the history of each host, the torn-down override
(``as_torn_down``, and telemetry stopped for a box that is gone), the stopped one
(``stopped.as_stopped``: a box ``watch``'s autostop stopped), the health each monitor
starts from, and the events derived from all of it. It never holds the App: it
reports by ``on_event`` with the records of ``runtime.events`` (sync, or a coroutine it
awaits in order), and its consumers route them: the App to its screens, ``watch`` to its
sinks (nvitop's shape: one UI-free data runtime under a TUI and its exporters).

A monitor's update goes through ``defer`` when one is given (the TUI posts it as a
replaceable message, so a slow screen drops stale samples, and hands it back through
``apply`` when handled); otherwise it is applied at once (``watch``).

The events are derived by ``derive`` (``watch``'s tracker over the fleet's journal
memory), each host after every applied update or queue view, and every ``tick_s`` as
well (a reminder, a silent box need no new sample), with the monitor's health: the same
calls, the same events, whichever consumer runs.

Hosts come and go while it runs (``fleet_edits``: the fleet file read again when it
changes, a host added by ``+``), and a torn-down host is done (``retire``: its monitor,
queue poll and connection close).

It owns the one ``HostLocks`` (``locks``) that whatever must not overlap on a host
holds: the TUI's jobs, the periodic pull and the autostop.

Over 450 lines on purpose: it is the one place where an update becomes state and events,
and the order of those steps (sample first, then preemption, then events) is the
contract both consumers rely on. What can stand alone already does (``monitors``,
``queues``, ``preemption``, ``fleet_edits``, ``events``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Generic, Protocol, TypeVar

from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.cost import Span
from rgt_tui.domain.health import Alert, HealthState
from rgt_tui.domain.history import HostHistory
from rgt_tui.domain.preemption import Preemption
from rgt_tui.domain.queue_state import QueueView
from rgt_tui.domain.slurm_lead import median_write_s
from rgt_tui.domain.snapshot import HostSnapshot
from rgt_tui.paths import journal_dir
from rgt_tui.profiles import profile as load_profile
from rgt_tui.services.ckpt_record import ckpt_dir, record_write
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.journal import Journal, JournalError, journal_for
from rgt_tui.services.queue.backends import allocation_sampler
from rgt_tui.services.runtime.events import (
    ClocksDue,
    HostObserved,
    HostPreempted,
    HostRetired,
    HostSampled,
    QueueRead,
    RuntimeEvent,
    TelemetryEnded,
    Told,
)
from rgt_tui.services.runtime.fleet_edits import CLOSE_GRACE_S, FleetFileHosts, settle
from rgt_tui.services.runtime.fleet_file import FleetFileWatch
from rgt_tui.services.runtime.locks import HostLocks
from rgt_tui.services.runtime.monitors import (
    MonitorLike,
    as_torn_down,
    build_monitors,
    has_forgotten,
    not_forgotten,
)
from rgt_tui.services.runtime.preemption import PreemptionWatch, as_preempted, preempt_dir
from rgt_tui.services.runtime.queues import POLL_S, QueuePoller
from rgt_tui.services.runtime.stopped import (
    DOWN_AFTER_STOP_S,
    STOP_SETTLE_S,
    STOPPED,
    StoppedHosts,
    as_stopped,
    box_started,
    record_back,
)
from rgt_tui.services.telemetry import ConnectionState, HostUpdate

S = TypeVar("S")
E = TypeVar("E")
TICK_S = 15.0  # reminders and silence are minutes apart: a look every 15 s is plenty
TOLD_KEPT = 1000
NOT_CONNECTED = ("reconnecting", "lost", "unreached")


class Deriver(Protocol[S, E]):
    """What turns a host's latest update and queue view into the events it owes
    (``services.watch.derivation.HostEvents``: the tracker over the journal memory)."""

    def seed_health(self, host: str) -> HealthState:
        """The health a new monitor of ``host`` starts from (blocking: run in a thread)."""
        ...

    def state(
        self, host: HostConfig, update: HostUpdate | None, queue: QueueView | None, now: float
    ) -> S:
        """``host`` as its pane would show it at ``now``."""
        ...

    def unchanged(self, host: str, state: S, health: HealthState | None) -> bool:
        """True when ``state`` owes nothing and changes no memory (no disk)."""
        ...

    def observe(self, host: str, state: S, health: HealthState | None) -> list[E]:
        """The events ``state`` owes, remembered before returned (blocking)."""
        ...

    def take_problems(self) -> list[str]:
        """Damaged memory files found since the last call, one line each."""
        ...


OnEvent = Callable[[RuntimeEvent], Awaitable[None] | None]


class FleetRuntime(FleetFileHosts, Generic[S, E]):
    """The running fleet (see the module docstring)."""

    def __init__(
        self,
        fleet: Fleet,
        connections: FleetConnections,
        *,
        on_event: OnEvent = lambda event: None,
        monitors: Mapping[str, MonitorLike] | None = None,
        hosts: Iterable[HostConfig] | None = None,
        clock: Callable[[], float] = time.time,
        derive: Deriver[S, E] | None = None,
        defer: Callable[[HostUpdate], None] | None = None,
        is_torn_down: Callable[[str], bool] = lambda host: False,
        still_answers: Callable[[str], Alert | None] = lambda host: None,
        queue_poll_s: float = POLL_S,
        is_watched: Callable[[str], bool] = lambda host: False,
        sample_allocations: bool = True,
        tick_s: float = TICK_S,
        agent_args: Sequence[str] = (),
        report: Callable[[str], None] = lambda line: None,
        start_added: bool = True,
        pick_hosts: Callable[[Fleet], Iterable[HostConfig]] | None = None,
        preemptions: PreemptionWatch | None = None,
    ) -> None:
        self.fleet = fleet
        self.connections = connections
        self.on_event = on_event
        self.hosts = {h.name: h for h in (fleet.hosts if hosts is None else hosts)}
        self.clock = clock
        self.derive = derive
        self.defer = defer
        self.is_torn_down = is_torn_down
        # A box recorded as torn down that answers again: its alert (GEN1) on each sample.
        self.still_answers = still_answers
        self.tick_s = tick_s
        self.agent_args = tuple(agent_args)
        self.report = report
        # Hosts the fleet file gains get a monitor of their own (False: a test that
        # feeds updates itself); ``pick_hosts``: which of a fleet's hosts run (watch
        # leaves torn-down boxes out), all of them by default.
        self.start_added = start_added
        self.pick_hosts = pick_hosts
        self.fleet_file: FleetFileWatch | None = None  # set by ``watch_fleet_file``
        # The one HostLocks of this process: the TUI's jobs, the periodic pull and the
        # autostop are handed it, so no two of them run on one host together.
        self.locks = HostLocks()
        # Interruptible boxes: "preempted?" and named preemptions (issue 40), the last
        # answers kept beside the fleet's journal (none for the stand-in local fleet).
        self.preemptions = preemptions or PreemptionWatch(
            fleet, memory_dir=None if fleet.is_default else preempt_dir(journal_dir(fleet.path))
        )
        # Boxes watch's autostop stopped: shown stopped until they answer again.
        # Read through self.fleet: a stand-in fleet gives way to a file's at the first +.
        self.stops = StoppedHosts(
            lambda: None if self.fleet.is_default else journal_for(self.fleet)
        )
        self._seen_stopped: dict[str, float] = {}  # host → the stop it was seen gone after
        # host → (that stop, not answering since): a box gone long enough went down
        self._gone: dict[str, tuple[float, float]] = {}
        self._backs: dict[str, Span] = {}  # host → (stop, answered again), recorded here
        self.monitors: dict[str, MonitorLike] = (
            dict(monitors)
            if monitors is not None
            else build_monitors(fleet, connections, clock, self.hosts.values(), agent_args)
        )
        self.latest: dict[str, HostUpdate] = {}
        self.histories: dict[str, HostHistory] = {name: HostHistory() for name in self.hosts}
        # Hosts whose telemetry is stopped (a torn-down box): their last sample says
        # nothing about now, and their queue is left alone.
        self.stopped: set[str] = set()
        # The events told by this runtime, latest last (bounded: watch runs for months).
        self.told: deque[E] = deque(maxlen=TOLD_KEPT)
        self.queues = QueuePoller(
            connections,
            on_view=self.queue_viewed,
            is_live=self.is_live,
            is_watched=is_watched,
            is_wanted=self._queue_wanted,
            poll_s=queue_poll_s,
            inside=allocation_sampler() if sample_allocations else None,
            fleet=lambda: self.fleet,
        )
        self.monitor_tasks: dict[str, asyncio.Task[None]] = {}
        self._polls: dict[str, asyncio.Task[None]] = {}  # each host's queue poll
        self._loops: dict[str, asyncio.Task[None]] = {}  # each host's event loop
        self._polls_on = False
        self._pending: dict[str, HostUpdate] = {}  # the newest update handed to defer
        self._tasks: list[asyncio.Task[None]] = []
        self._wake: dict[str, asyncio.Event] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._connected_once: set[str] = set()  # danger clocks: once per host per run
        self._clocks_told: set[str] = set()  # ... and once per profile
        self._ckpt_folder = ckpt_dir(fleet)  # observed checkpoint write times (SLURM2)
        self._ckpt_recorded: dict[str, float] = {}

    # -- starting and stopping -----------------------------------------------------------

    def start(self, *, polls: bool = True) -> None:
        """Start every monitor, each host's queue poll (``polls``) and, with a deriver,
        each host's event loop. Needs a running event loop."""
        self._polls_on = polls
        for name in list(self.monitors):
            self.start_monitor(name)
        for host in list(self.hosts.values()):
            self._start_host_loops(host)

    def _start_host_loops(self, host: HostConfig) -> None:
        self._ensure_poll(host.name)
        if self.derive is not None and host.name not in self._loops:
            self._loops[host.name] = asyncio.ensure_future(self._process_loop(host.name))

    def _queue_wanted(self, host: HostConfig) -> bool:
        """A host whose entry names no queue file is read only while its box says a cell
        runs or its Queue tab is open: a queue launched from another checkout (or a
        `queue` line removed) ran unseen, its tab saying "has no queue" (hour s19b #3)."""
        if host.queue:
            return True
        latest = self.latest.get(host.name)
        cell = latest.snapshot.cell if latest is not None and latest.snapshot else None
        return cell is not None or self.queues.is_watched(host.name)

    def _ensure_poll(self, name: str) -> None:
        """Poll ``name``'s queue unless it is stopped or already polled (one with no queue
        file only when ``_queue_wanted``)."""
        host = self.hosts.get(name)
        if not self._polls_on or host is None or name in self.stopped:
            return
        task = self._polls.get(name)
        if task is None or task.done():
            self._polls[name] = asyncio.ensure_future(self.queues.poll(host))

    def add_host(self, host: HostConfig, *, start: bool = True) -> None:
        """A host added while running: its connection and history now; with ``start``,
        a monitor built for it and started, and its queue poll."""
        self.connections.add(host)
        self.hosts[host.name] = host
        self.histories[host.name] = HostHistory()
        if not start:
            return
        self._polls_on = True
        self.monitors.update(
            build_monitors(self.fleet, self.connections, self.clock, [host], self.agent_args)
        )
        self.start_monitor(host.name)
        self._start_host_loops(host)

    def start_monitor(self, host: str, *, seed: bool = True) -> asyncio.Task[None]:
        """Run ``host``'s monitor (replacing a running one); its telemetry is live again,
        and its queue poll with it. ``seed``: its health from the watch memory."""
        old = self.monitor_tasks.get(host)
        if old is not None:
            old.cancel()
        task = asyncio.ensure_future(self._run_monitor(host, self.monitors[host], seed))
        self.monitor_tasks[host] = task
        self.stopped.discard(host)
        self._ensure_poll(host)
        return task

    async def _run_monitor(self, host: str, monitor: MonitorLike, seed: bool = True) -> None:
        if self.derive is not None and seed:
            # The OOM baseline (and boot) from before: a kill while nothing watched counts.
            monitor.health = await asyncio.to_thread(self.derive.seed_health, host)
        try:
            # The monitor borrows the host's shared connection: it stays open for the
            # other borrowers when telemetry stops; ``close`` closes it on the way out.
            await monitor.run(self.received)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - one host's bug must not stop the fleet
            error = f"{type(exc).__name__}: {exc}"
            self._emit_now(TelemetryEnded(host, error))
            latest = self.latest.get(host)
            if latest is not None and latest.connection.status == "connected":
                # Nothing watches it now: never "connected" over its last figures, in the
                # panes or in watch's metrics (ux-i 1).
                stopped = ConnectionState(
                    "lost",
                    self.clock(),
                    error=f"telemetry stopped: {error}",
                    fix="press r on the host to start it again; this is a bug in rgt-tui: "
                    "please report it with this message",
                )
                self.received(replace(latest, connection=stopped))

    def running(self, host: str) -> bool:
        """Whether ``host``'s monitor runs now. A stopped host's monitor is not running
        though its task may still be closing its channel: ``r`` in that window must start
        a new one, not ask the dying one to reconnect."""
        task = self.monitor_tasks.get(host)
        return task is not None and not task.done() and host not in self.stopped

    def stop_telemetry(self, host: str) -> bool:
        """Stop ``host``'s telemetry (a torn-down box is gone); True when it was running."""
        self.stopped.add(host)
        task = self.monitor_tasks.get(host)
        if task is None or task.done():
            return False
        task.cancel()
        return True

    def retire(self, host: str) -> bool:
        """``host`` was recorded as torn down and its one attempt decided it is the same
        box (or none answers): it is done. Its monitor and queue poll stop, and its
        connection (with its SFTP sessions) closes once the monitor has let go; ``r``
        (``reconnect``) opens it again for one more attempt. True when it was running."""
        was_running = self.stop_telemetry(host)
        tasks = [t for t in (self.monitor_tasks.get(host), self._polls.pop(host, None)) if t]
        for task in tasks:
            task.cancel()
        self._spawn(self._close_retired(host, tasks))
        self._emit_now(HostRetired(host))
        return was_running

    async def _close_retired(self, host: str, tasks: list[asyncio.Task[None]]) -> None:
        await settle(tasks)
        if host in self.stopped:  # no r meanwhile (r starts a monitor: not stopped)
            await self.connections.close(host)

    def reconnect(self, host: str) -> bool:
        """Drop and retry ``host``'s connection now, or start its monitor again when it
        stopped; False when the host has no monitor."""
        monitor = self.monitors.get(host)
        if monitor is None:
            return False
        if self.running(host):
            monitor.request_reconnect()  # drops the connection
        else:
            self.start_monitor(host)
        # The one wake: telemetry, a pull and a log follower in backoff all try at once.
        self.connections.wake(host)
        return True

    def host_key_of(self, host: str) -> str | None:
        """The host key ``host``'s monitor connection saw (None: none, or local)."""
        monitor = self.monitors.get(host)
        return monitor.host_key_fingerprint if monitor is not None else None

    async def close(self, grace: float = CLOSE_GRACE_S) -> None:
        """Stop every task (monitors get ``grace`` seconds to close their channels, and
        the agents go with them); never raises. Connections stay: their owner closes them."""
        held = [*self.monitor_tasks.values(), *self._polls.values(), *self._loops.values()]
        tasks = [t for t in [*held, *self._tasks] if not t.done()]
        self._tasks = []
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=grace)
            await asyncio.sleep(0.1)  # let cancelled streams' finalizers run

    def _spawn(self, work: Any) -> None:
        self._tasks.append(asyncio.ensure_future(work))

    # -- updates -------------------------------------------------------------------------

    def received(self, update: HostUpdate) -> None:
        """A monitor's update: deferred (``defer``) or applied now."""
        if self.defer is None:
            self.apply(update)
            return
        self._pending[update.host] = update
        self.defer(update)

    def apply(self, update: HostUpdate) -> HostSampled | None:
        """Make ``update`` the host's latest (as shown), add it to the history, and tell
        ``on_event``; None (nothing done) when a newer one of the host is on its way."""
        if self._pending.get(update.host, update) is not update:
            return None
        if self.is_torn_down(update.host):
            update = as_torn_down(update)  # gone, as it should be: never GEN8
        elif update.connection.status == "connected":
            leak = self.still_answers(update.host)
            if leak is not None:  # recorded torn down, still answering: not "forgotten"
                update = not_forgotten(update)
                update = replace(update, alerts=(leak, *update.alerts))
            elif has_forgotten(update) and self.stopped_at(update.host) is not None:
                # Stopped by autostop, answering within the providers' settle time: the
                # stop is under way, not a forgotten box (s37 money hour #3: "pull,
                # verify and tear it down" a minute after "stopped"). Past it, an answer
                # is the stop's failure, told by autostop (still_answers), and GEN1's.
                update = not_forgotten(update)
        else:
            stopped_at = self.stops.stopped_at(update.host)
            if stopped_at is not None:
                update = as_stopped(update, stopped_at)  # stopped by watch: never GEN8
                self._seen_stopped[update.host] = stopped_at
                gone = self._gone.get(update.host)
                if gone is None or gone[0] != stopped_at:
                    self._gone[update.host] = (stopped_at, self.clock())
            else:  # named preempted: its alert no longer asks "preempted?"
                update = as_preempted(update, self.preemptions.current.get(update.host))
        update = self._with_unbilled(update)
        history = self.histories.setdefault(update.host, HostHistory())
        history.add(update.snapshot)
        self.latest[update.host] = update
        sampled = HostSampled(update, history)
        self._emit_now(sampled)
        self._preempted(update)
        self._first_connection(update)
        self._record_ckpt(update)
        self._poke(update.host)
        return sampled

    def _record_ckpt(self, update: HostUpdate) -> None:
        # SLURM2: the observed checkpoint write time sizes the signal-lead check; kept
        # beside the journal when it changes (not every sample: each write fsyncs).
        write_s = median_write_s(update.snapshot.checkpoints if update.snapshot else None)
        if write_s is None or self._ckpt_folder is None or update.host not in self.hosts:
            return
        if self._ckpt_recorded.get(update.host) == write_s:
            return
        self._ckpt_recorded[update.host] = write_s
        with contextlib.suppress(OSError):  # unwritable: the configured value stands
            record_write(self._ckpt_folder, update.host, write_s, self.clock())

    def refresh_torn_down(self, host: str) -> None:
        """``host`` was just recorded torn down: its latest update is shown again as the
        box being gone (a lost connection already shown is not GEN8 any more)."""
        latest = self.latest.get(host)
        if latest is None:
            return
        shown = as_torn_down(latest)
        if shown is not latest:
            self.latest[host] = shown
            self._emit_now(HostSampled(shown, self.histories.setdefault(host, HostHistory())))

    def queue_viewed(self, host: str, view: QueueView) -> None:
        """A queue poll's view of ``host`` (the polls call it; a test may too)."""
        self.queues.views[host] = view
        self._emit_now(QueueRead(host, view))
        self._poke(host)

    def stopped_at(self, host: str) -> float | None:
        """When watch's autostop stopped ``host``, while it has not answered since; None
        otherwise. A box seen stopped here (gone after the stop) that is connected again
        was started again, whatever the journal's last_seen (written every 5 minutes)
        says yet: periodic pulls stayed off for up to 10 minutes after a box was started
        again (h582 #2). One still answering, never seen gone, is the stop under way
        (``StoppedHosts``' settle)."""
        at = self.stops.stopped_at(host)
        update = self.latest.get(host)
        if (
            at is not None
            and self._seen_stopped.get(host) == at
            and update is not None
            and update.connection.status == "connected"
        ):
            return None
        return at

    def _with_unbilled(self, update: HostUpdate) -> HostUpdate:
        """``update`` with the spans its box billed nothing (``HostUpdate.unbilled``, what
        the cost figures leave out): read at the host's first update and whenever its
        connection's status changes (two ``stat`` calls), not at every sample."""
        host, before = update.host, self.latest.get(update.host)
        if before is not None and before.connection.status == update.connection.status:
            spans = before.unbilled
        else:
            spans = self.stops.unbilled(host)
            if update.connection.status == "connected":
                self._answered_again(host, update.snapshot)
            back = self._backs.get(host)
            if back is not None and all(a != back[0] for a, _ in spans):
                spans = tuple(sorted((*spans, back)))  # its record is on its way
        return update if spans == update.unbilled else replace(update, unbilled=spans)

    def _answered_again(self, host: str, snap: HostSnapshot | None) -> None:
        """A box watch's autostop stopped answers again: when seen not answering here
        for ``DOWN_AFTER_STOP_S`` since the stop, past the providers' settle time, and
        started since the stop by its own word (its PID 1, else its boot), it billed
        nothing from the stop until it started. Recorded beside the stop, for the other
        processes and the next run: the metric ``rgt_cost_so_far`` charged the whole stop
        back once the box answered again (h582 #3). Never past the box's own start: the
        time it ran while nothing here could reach it bills (review h594 #4), and a box
        whose start is before the stop never stopped (a stop that exited 0 and stopped
        nothing) — nothing is recorded, as for a blip of a reconnect, an answer within
        the settle time, or a box started again while nothing here watched it go (its
        stop then counts as billed: the figure errs high, never low)."""
        gone, now = self._gone.pop(host, None), self.clock()
        if gone is None or snap is None or self._backs.get(host, (None,))[0] == gone[0]:
            return
        at, since = gone
        if now < at + STOP_SETTLE_S or now - since < DOWN_AFTER_STOP_S:
            return
        started = box_started(snap)
        if started is None:
            return
        back = min(now, started + (now - snap.t))  # the box's clock, read as this one's
        if back <= at:
            return
        self._backs[host] = (at, back)
        journal = self.stops.journal()
        if journal is not None:
            self._spawn(self._record_back(journal, host, at, back))

    async def _record_back(self, journal: Journal, host: str, at: float, now: float) -> None:
        try:
            await asyncio.to_thread(record_back, journal, host, at, now)
        except (OSError, JournalError) as exc:
            self.report(f"{host}: when the stopped box answered again is not saved ({exc})")

    def is_live(self, host: str) -> bool:
        """Connected at the last sample, still sampled, and not recorded torn down (a
        torn-down box's one attempt reads no queue: a new box there is live once the
        journal says so): only such hosts' queues are read."""
        update = self.latest.get(host)
        return (
            host not in self.stopped
            and not self.is_torn_down(host)
            and update is not None
            and update.connection.status == "connected"
        )

    def answered(self, host: str) -> bool:
        """The host's first sample came in, or it is known not to answer."""
        update = self.latest.get(host)
        if update is None:
            return False
        status = update.connection.status
        known = (*NOT_CONNECTED, STOPPED)
        return (status == "connected" and update.snapshot is not None) or status in known

    def _preempted(self, update: HostUpdate) -> None:
        """Tell a preemption ``update`` names (an interruptible box past its grace, or
        back from a new start), once; after the sample, so panes show it first."""
        host = self.hosts.get(update.host)
        if host is None or self.is_torn_down(update.host):
            return
        named = self.preemptions.observe(host, update, self.clock())
        if named is not None:
            shown = as_preempted(update, named)  # its alert says so from now, not next time
            if shown is not update and self.latest.get(update.host) is update:
                self.latest[update.host] = shown
                self._emit_now(
                    HostSampled(shown, self.histories.setdefault(update.host, HostHistory()))
                )
            self._spawn(self._tell_preempted(host, named))

    async def _tell_preempted(self, host: HostConfig, named: Preemption) -> None:
        # Its cell's verified checkpoint is looked up in a thread (it re-hashes the copy).
        full = await asyncio.to_thread(self.preemptions.with_checkpoint, host, named)
        await self._emit(HostPreempted(host, full))

    def _first_connection(self, update: HostUpdate) -> None:
        # Principle 10: a host's danger clocks are told once, when it first connects.
        host = self.hosts.get(update.host)
        if host is None or update.connection.status != "connected":
            return
        if update.host in self._connected_once:
            return
        self._connected_once.add(update.host)
        # This machine is no rented box: no platform clock runs on it, and nothing bills.
        if host.is_local or self.fleet.is_default:
            return
        # The clocks are the profile's: one note per profile, not one per host, so a
        # fleet of 30 identical boxes does not hear the same clocks 30 times.
        if host.profile in self._clocks_told:
            return
        self._clocks_told.add(host.profile)
        clocks = load_profile(host.profile).clock_lines
        if clocks:
            same = [h.name for h in self.hosts.values() if h.profile == host.profile]
            who = update.host if len(same) == 1 else f"{host.profile} ({len(same)} hosts)"
            self._emit_now(ClocksDue(update.host, who, tuple(clocks)))

    # -- events --------------------------------------------------------------------------

    def _emit_now(self, event: RuntimeEvent) -> None:
        """Tell ``on_event`` from a plain call: a coroutine it returns runs on its own."""
        result = self.on_event(event)
        if result is not None:
            self._spawn(result)

    async def _emit(self, event: RuntimeEvent) -> None:
        try:
            result = self.on_event(event)
            if result is not None:
                await result
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a consumer's bug must not stop the fleet
            self.report(f"{type(event).__name__} not handled: {type(exc).__name__}: {exc}")

    def _poke(self, host: str) -> None:
        wake = self._wake.get(host)
        if wake is not None:
            wake.set()

    async def _process_loop(self, host: str) -> None:
        wake = self._wake.setdefault(host, asyncio.Event())
        while True:
            # asyncio.timeout, not wait_for: no Task of its own per sample of every host.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.tick_s):
                    await wake.wait()
            wake.clear()
            await self.process(host)

    async def check_now(self) -> None:
        """Look at every host now (after the clock moved, say) and tell what is owed."""
        for name in list(self.hosts):
            await self.process(name)

    async def process(self, name: str) -> None:
        """Derive what ``name``'s latest update and queue view owe, with its monitor's
        health; tell its state, then each event (in order, one host at a time)."""
        derive, host = self.derive, self.hosts.get(name)
        latest = self.latest.get(name)
        if latest is not None and latest.connection.status != "connected":
            self._preempted(latest)  # past the grace with no new sample: the tick says it
        if derive is None or host is None:
            return
        async with self._locks.setdefault(name, asyncio.Lock()):
            update = self.latest.get(name)
            state = derive.state(host, update, self.queues.views.get(name), self.clock())
            health = update.health if update is not None else None
            events: list[E] = []
            if not derive.unchanged(name, state, health):
                try:
                    events = await asyncio.to_thread(derive.observe, name, state, health)
                except OSError as exc:  # the journal folder: unwritable, full, locked
                    self.report(f"{name}: watch memory not saved ({exc}); tried again")
            for problem in derive.take_problems():
                self.report(problem)
            await self._emit(HostObserved(host, state))
            for event in events:
                self.told.append(event)
                await self._emit(Told(event))
