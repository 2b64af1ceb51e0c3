"""Live telemetry: one long-lived agent channel per host, kept up across drops.

``HostMonitor.run`` connects (by the fleet connections' one reconnect loop, with capped,
jittered backoff, woken by ``FleetConnections.wake``), starts the agent over the
connection (``python3 -u -``, source on stdin), and turns every JSON line into a
``HostUpdate`` — the snapshot, the connection state and the active alerts — handed to a
callback. A dropped connection is reported as "reconnecting", never as a dead run (GEN8);
when samples resume, the first update says how long the gap was. An agent that stalls (no
sample within ``stall_s``), prints a line over the cap or anything this side cannot read
ends its stream the same way, with the reason: the monitor backs off and starts it again,
and nothing a box sends ends the monitor.

Past 450 lines on purpose: the monitor's loop, its stream and its connection states are one
state machine, read top to bottom.

Alerts come from ``domain.cost.host_alerts`` (the health rules and the cost rules) here
and in `rgt-tui status` alike. The platform's release clock counts from the last time the
box answered, across app restarts: a ``LastSeen`` store (the teardown journal) keeps
that time, written when samples start, at most every few minutes while they flow, and
when the connection is lost — never per sample. The same store keeps when rgt-tui first
saw the box answer (``HostUpdate.first_seen``): a host with no ``started_at`` is billed
from then, never from the box's uptime.

One module, though long: ``HostMonitor`` is one state machine (connect, stream, stall,
back off) and the helpers here are its parts; the one-shot sample of `rgt-tui status`
lives beside its command (``services/box/status.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from rgt_tui.agent import agent_command, agent_source
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.cost import CostContext, host_alerts
from rgt_tui.domain.errors import CommandFailed, HostKeyError, TransportError
from rgt_tui.domain.health import Alert, HealthContext, HealthState, Thresholds
from rgt_tui.domain.preemption import mtbf_s
from rgt_tui.domain.profiles import Profile
from rgt_tui.domain.snapshot import (
    HostSnapshot,
    carry_processes,
    decode_agent_line,
    snapshot_from_agent,
)
from rgt_tui.domain.text import printable
from rgt_tui.profiles import profile as load_profile
from rgt_tui.services.connections import FleetConnections, connect_with_backoff
from rgt_tui.services.journal import HostJournal, Journal, JournalError, journal_for
from rgt_tui.timeouts import within
from rgt_tui.transport.backoff import Backoff
from rgt_tui.transport.base import Transport


@dataclass(frozen=True)
class ConnectionState:
    """Where a host's connection stands, for the pane's status line."""

    # connecting | connected | reconnecting | lost, or unreached: no sample ever came, in
    # this run or (by the journal's last sighting) an earlier one (a closed port, a bad
    # name), so nothing says a run is alive there (not GEN8). A box the journal saw that
    # does not answer when the run starts reads reconnecting (or lost): its run may still
    # be alive (GEN8), and its HostUpdate has no snapshot and the journal's last_seen.
    status: str
    since: float  # when this status began
    attempt: int = 0
    next_try_at: float | None = None
    error: str | None = None
    fix: str | None = None
    gap_s: float | None = None  # after a reconnect: seconds without samples
    # The refusal itself when the host key was refused: the UI's trust prompt needs its
    # fingerprint, line and file, not only its text.
    key_error: HostKeyError | None = None


@dataclass(frozen=True)
class HostUpdate:
    """One message from a host's worker to the UI (or a CLI)."""

    host: str
    connection: ConnectionState
    snapshot: HostSnapshot | None
    alerts: tuple[Alert, ...]
    health: HealthState
    # When rgt-tui first saw this box answer (this run or an earlier one, from the
    # fleet's journal); a host without started_at is billed from then. None: not yet.
    first_seen: float | None = None
    # When the box last answered: this run's last sample, else the journal's record (an
    # earlier run's, written at most every SEEN_WRITE_EVERY_S while samples flowed, so
    # up to that much older than its real last sample). None: never known.
    last_seen: float | None = None
    # The times the box billed no compute since (stopped by watch's autostop until it
    # answered again: ``services.runtime.stopped``), set by the fleet runtime.
    unbilled: tuple[tuple[float, float], ...] = ()


SEEN_WRITE_EVERY_S = 300.0  # the release clock counts days: minutes of slack cost nothing
# A channel that stays open with no sample for this long (at least, or STALL_POLLS poll
# intervals) is a stalled agent (statvfs on a hung mount, a box too loaded to run it):
# the monitor says so and starts it again. `rgt-tui status` waits as long for its one.
STALL_MIN_S = 30.0
STALL_POLLS = 5
# A stream that gave samples this long was healthy: the next drop counts from attempt 1.
# One that ends sooner (a box that prints a bad line after each sample) keeps counting,
# so its reconnects back off as failed connects do.
STEADY_S = 60.0


class LastSeen(Protocol):
    """Where the last time each host's box answered is kept between app runs."""

    def last_seen(self, host: str) -> float | None:
        """When the host's box last answered (this machine's clock); None: never known."""
        ...

    def saw(self, host: str, t: float) -> None:
        """Record that the host's box answered at ``t`` (blocking: call it in a thread)."""
        ...

    def first_seen(self, host: str) -> float | None:
        """When the host's current box first answered; None: never recorded."""
        ...


class JournalLastSeen:
    """``LastSeen`` in the teardown journal's ``last_seen`` (one file per host, written
    atomically under its lock, so the TUI and command-line runs never lose a write). A
    damaged or locked journal is left alone: the clock then counts from this run only."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal

    def last_seen(self, host: str) -> float | None:
        try:
            return self.journal.load(host).last_seen
        except JournalError:
            return None

    def first_seen(self, host: str) -> float | None:
        # Reset by the journal when another box answers under the name (HostJournal.observe).
        try:
            return self.journal.load(host).first_seen
        except JournalError:
            return None

    def saw(self, host: str, t: float) -> None:
        def change(jh: HostJournal) -> bool:
            if jh.last_seen is not None and jh.last_seen >= t:
                return False
            jh.last_seen = t
            if jh.first_seen is None:
                jh.first_seen = t
            return True

        try:
            self.journal.update(host, change)
        except (JournalError, OSError):
            pass  # the teardown screen reports a damaged journal; telemetry goes on


def default_last_seen(fleet: Fleet) -> JournalLastSeen:
    """The fleet's journal (``paths.journal_dir``), as the app and
    `rgt-tui status` keep the last-seen times in it."""
    return JournalLastSeen(journal_for(fleet))


def connection_alerts(
    host: HostConfig,
    profile: Profile,
    snap: HostSnapshot | None,
    health: HealthState,
    connection: ConnectionState,
    *,
    thresholds: Thresholds,
    now: float,
    last_seen: float | None = None,
    received_at: float | None = None,
) -> tuple[Alert, ...]:
    """A host's alerts given where its connection stands (``domain.cost.host_alerts``).

    The box counts as unreachable once an attempt to reach it failed; from then on the
    platform's clocks count from ``last_seen`` (the last time it answered, this run or an
    earlier one), else from when this run's attempts began to fail.
    """
    failed = connection.status in ("reconnecting", "lost", "unreached")
    unreachable = (last_seen if last_seen is not None else connection.since) if failed else None
    hctx = HealthContext(
        thresholds=thresholds,
        connection=connection.status,
        lost_since=connection.since if connection.status != "connected" else None,
        cost_per_hour=host.alert_rate,
        tracker=host.ready.tracker if host.ready.tracker_patterns else "",
        mtbf_s=mtbf_s(host, profile),  # ckpt.cadence (issue 40)
        spare=host.watch.spare,  # a dead GPU's fix names the move to a spare (U22)
        interruptible=host.watch.interruptible,  # a lost connection: "preempted?"
        mounts_named=host.mounts if host.mounts_given else (),  # disk.unread: typos only
    )
    cctx = CostContext(
        profile,
        host.alert_rate,
        now,
        unreachable,
        received_at,
        forgotten_minutes=thresholds.forgotten_minutes,
    )
    return host_alerts(snap, health, hctx, cctx)


def tracker_patterns(host: HostConfig) -> tuple[str, ...]:
    """The run-line patterns the agent matches in the running cell's log (U35); none when
    the host checks no tracker (``tracker = "none"``, or unset)."""
    return host.ready.tracker_patterns if host.ready.tracker else ()


def parse_agent_line(host: str, line: str) -> HostSnapshot | None:
    """A snapshot from one agent line, or None for a line that is not a JSON object.

    A bad field (a ``NaN``, an ``Infinity``, a number past 2^63, a wrong type) is None
    in the snapshot and a problem naming it (``snapshot_from_agent``). Should the parser
    still fail on something a box sent, that is a TransportError naming the host, never
    another exception: whatever a box prints cannot end a monitor or a `status` run."""
    data = decode_agent_line(line)
    if data is None:
        return None
    try:
        return snapshot_from_agent(host, data)
    except Exception as exc:  # noqa: BLE001 - box output must not end what reads it
        raise TransportError(
            host,
            f"a telemetry sample could not be read: {type(exc).__name__}: "
            f"{printable(str(exc), 200)}",
            "this is a bug in rgt-tui: please report it with this message",
        ) from exc


class HostMonitor:
    """Keeps one host's telemetry flowing; one instance per host, one task each.

    ``connections``: the fleet's connections, whose ``wait`` the monitor's waits use so
    that ``connections.wake(host)`` (the user's ``r``) ends them; without it the monitor
    keeps a ``FleetConnections`` of its own over ``transport``.
    """

    def __init__(
        self,
        host: HostConfig,
        transport: Transport,
        *,
        interval: float = 2.0,
        thresholds: Thresholds = Thresholds(),
        backoff: Backoff = Backoff(),
        clock: Callable[[], float] = time.time,
        last_seen: LastSeen | None = None,
        agent_args: Sequence[str] = (),
        connections: FleetConnections | None = None,
        stall_s: float | None = None,
    ) -> None:
        self.host = host
        self.agent_args = tuple(agent_args)
        self.profile = load_profile(host.profile)
        self.seen_store = last_seen
        self.seen_at: float | None = None  # the box last answered (store or this run)
        self.first_seen: float | None = None  # the box first answered (store or this run)
        self._seen_written: float | None = None
        self.transport = transport
        self.interval = interval
        self.stall_s = stall_s if stall_s is not None else max(STALL_MIN_S, STALL_POLLS * interval)
        self.thresholds = thresholds
        self.backoff = backoff
        self.clock = clock
        self.health = HealthState()
        self.last: HostSnapshot | None = None
        self.last_sample_at: float | None = None
        self.connection = ConnectionState("connecting", clock())
        self.connections = connections or FleetConnections(
            [host], factory=lambda _: transport, backoff=backoff
        )
        self._wait = self.connections.waiter(host.name)
        self._closing: asyncio.Future[None] | None = None
        self._retry_now = False  # the user's r: the next connect waits for no backoff
        self._sampled_mono = 0.0  # the event loop's time of the last sample (STEADY_S)

    @property
    def host_key_fingerprint(self) -> str | None:
        """The host key the monitor's connection saw last (None: none yet, or local)."""
        return self.transport.host_key_fingerprint

    def request_reconnect(self) -> None:
        """Drop the current connection (if any) and retry now, skipping the backoff wait
        (``connections.wake``: every other borrower of the host waiting in backoff too)."""
        self.connections.wake(self.host.name)
        self._retry_now = True
        # Keep a reference: the event loop holds tasks only weakly.
        self._closing = asyncio.ensure_future(self.transport.close())

    def _update(self, emit: Callable[[HostUpdate], None]) -> None:
        alerts = connection_alerts(
            self.host,
            self.profile,
            self.last,
            self.health,
            self.connection,
            thresholds=self.thresholds,
            now=self.clock(),
            last_seen=self.seen_at,
            received_at=self.last_sample_at,
        )
        emit(
            HostUpdate(
                self.host.name,
                self.connection,
                self.last,
                alerts,
                self.health,
                self.first_seen,
                self.seen_at,
            )
        )

    async def _load_seen(self) -> None:
        if self.seen_store is None:
            return
        stored = await asyncio.to_thread(self.seen_store.last_seen, self.host.name)
        if stored is not None and (self.seen_at is None or stored > self.seen_at):
            self.seen_at = stored
        first = await asyncio.to_thread(self.seen_store.first_seen, self.host.name)
        if first is not None:
            self.first_seen = first

    async def _write_seen(self, *, force: bool = False) -> None:
        """Keep the last-seen time: on ``force`` (samples started, connection lost), else
        at most every SEEN_WRITE_EVERY_S — never per sample."""
        t = self.last_sample_at
        if self.seen_store is None or t is None or t == self._seen_written:
            return
        if (
            not force
            and self._seen_written is not None
            and t - self._seen_written < SEEN_WRITE_EVERY_S
        ):
            return
        self._seen_written = t
        # Shielded: a monitor stopped right after a sample (the app quits, watch stops)
        # would otherwise cancel the write while it still waits for a worker thread,
        # and the sighting — where the bill starts — would be lost.
        await asyncio.shield(asyncio.to_thread(self.seen_store.saw, self.host.name, t))
        # Read back: another box answering under the name restarts the journal's first
        # sighting (HostJournal.observe), and so this box's bill.
        first = await asyncio.to_thread(self.seen_store.first_seen, self.host.name)
        if first is not None:
            self.first_seen = first

    def carry_on(self, before: HostMonitor) -> None:
        """Go on from ``before``, the same host's monitor built again for new settings (a
        fleet-file edit): its last sample, its sightings and its connection's state carry
        on. A silent box then does not read "not answering since this TUI started" with
        its clock restarted, and a live one gets no "back after a gap" (hour s21a #10)."""
        self.health = before.health  # the OOM baseline and boot carry on
        self.last, self.last_sample_at = before.last, before.last_sample_at
        self.seen_at, self.first_seen = before.seen_at, before.first_seen
        self._seen_written = before._seen_written
        # A stream that was working (status connected): run() tells no gap after it.
        self.connection = before.connection

    def _set(self, status: str, **fields: object) -> None:
        since = self.connection.since if status == self.connection.status else self.clock()
        self.connection = ConnectionState(status, since, **fields)  # type: ignore[arg-type]

    def _down(self, status: str) -> str:
        """``status`` for a box that ever answered (this run or, by the journal, an earlier
        one: its run may still be alive, GEN8), else "unreached"."""
        return status if self.seen_at is not None else "unreached"

    def _retrying(self, emit: Callable[[HostUpdate], None]) -> Callable[..., None]:
        def report(attempt: int, delay: float, exc: TransportError) -> None:
            status = self._down("reconnecting")
            self._set(
                status,
                attempt=attempt,
                next_try_at=self.clock() + delay,
                error=exc.message,
                fix=exc.fix,
            )
            self._update(emit)

        return report

    async def run(self, emit: Callable[[HostUpdate], None]) -> None:
        """Run until cancelled, calling ``emit`` for every state change and sample.

        An agent stream that ends — a dropped connection, a line over the cap, no sample
        within ``stall_s``, or anything else that fails on what the box sent — is a
        failed attempt like a failed connect: the monitor backs off before the next one
        (``connect_with_backoff``) and, until a sample comes again, the host reads
        reconnecting with the reason, never "connected" with frozen figures."""
        command = agent_command(
            self.host.mounts,
            self.interval,
            extra_args=self.agent_args,
            out_root=self.host.durable_dir,
            tracker_patterns=tracker_patterns(self.host),
        )
        source = agent_source()
        retrying = self._retrying(emit)
        await self._load_seen()
        # Failed attempts in a row, and how the last stream ended (None: it did not).
        failed = 0
        failure: TransportError | None = None
        # The user's r ended a working stream, carry_on took over one, or this monitor was
        # stopped while connected and runs again (a torn-down box: r, or the later look):
        # the pause was no outage, so no new gap (a user's second hour, s41: "back 07:14
        # after a 5m00s gap", 07:14 being the first connection).
        asked = self.connection.status == "connected"
        while True:
            # The user's r: try now, without the wait (the reason stays until a sample).
            at_once = self._retry_now
            try:
                failed = await connect_with_backoff(
                    self.transport,
                    self.backoff,
                    retrying,
                    self._wait,
                    failed=failed,
                    failure=None if at_once else failure,
                )
            except HostKeyError as exc:
                # A key problem needs the user; retrying would only repeat the refusal.
                status = self._down("lost")
                self._set(status, error=exc.message, fix=exc.fix, key_error=exc)
                self._update(emit)
                await self._wait(None)  # until r, or the key is trusted
                failed, failure = 0, None
                continue
            except Exception as exc:  # noqa: BLE001 - a bug here must not end the monitor
                failed, failure = failed + 1, _unexpected(self.host.name, exc)
                status = self._down("reconnecting")
                self._set(status, attempt=failed, error=failure.message, fix=failure.fix)
                self._update(emit)
                continue
            self._retry_now = False
            gap = self.clock() - self.last_sample_at if self.last_sample_at is not None else None
            if asked:
                gap, asked = None, False  # the last real gap stays the one shown
            if failure is None:
                self._set("connected")
            else:  # connected again, but "connected" only once a sample proves it
                status = self.connection.status
                self._set(status, attempt=failed, error=failure.message, fix=failure.fix)
            self._update(emit)
            loop = asyncio.get_running_loop()
            started = self._sampled_mono = loop.time()
            try:
                await self._stream(command, source, emit, gap)
            except TransportError as exc:
                failure = _agent_not_started(exc)
            except Exception as exc:  # noqa: BLE001 - nothing a box sends may end the monitor
                failure = _unexpected(self.host.name, exc)
            if self._retry_now and self.connection.status == "connected":
                # The user's r closed a stream that worked: it read "not answering:
                # connection lost … GEN8", then "back after a 0s gap" in place of the real
                # last gap (hour s17a #5). It reconnects at once; a failure there is told.
                failed, failure, asked = 0, None, True
                await self.transport.close()
                continue
            failed = 1 if self._sampled_mono - started >= STEADY_S else failed + 1
            status = self._down("reconnecting")
            self._set(status, attempt=failed, error=failure.message, fix=failure.fix)
            self._update(emit)
            await self._write_seen(force=True)
            await self.transport.close()

    async def _stream(
        self, command: str, source: str, emit: Callable[[HostUpdate], None], gap: float | None
    ) -> None:
        first = True
        first_of_run = self._seen_written is None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.stall_s
        # aclosing: a cancelled monitor closes the agent's channel now, not at GC time.
        async with contextlib.aclosing(self.transport.stream_lines(command, input=source)) as lines:
            while True:
                try:
                    line = await within(lines.__anext__(), max(0.0, deadline - loop.time()))
                except StopAsyncIteration:
                    break
                except asyncio.TimeoutError:
                    raise TransportError(
                        self.host.name,
                        f"no sample within {self.stall_s:g} s: the telemetry agent stalled "
                        "and is started again",
                        "is the box overloaded, or a watched path on a hung mount (NFS, FUSE)?",
                    ) from None
                snap = parse_agent_line(self.host.name, line)
                if snap is None:
                    continue
                self._sampled_mono = loop.time()
                deadline = self._sampled_mono + self.stall_s
                if first:
                    if self.connection.status != "connected":
                        self._set("connected", gap_s=gap)
                    elif gap is not None:
                        self.connection = replace(self.connection, gap_s=gap)
                first = False
                # Processes are listed every few samples: those between keep the last
                # list (with its age), so U11 / GEN7 / U40 do not flicker.
                snap = carry_processes(self.last, snap)
                self.health = self.health.observe(snap, self.thresholds)
                self.last = snap
                self.last_sample_at = self.seen_at = self.clock()
                if self.first_seen is None:
                    self.first_seen = self.last_sample_at
                self._update(emit)
                await self._write_seen(force=first_of_run)
                first_of_run = False
        raise TransportError(self.host.name, "telemetry agent stopped")


def _agent_not_started(exc: TransportError) -> TransportError:
    """The agent's command not found (the shell's 127: no python3 on the box's PATH for a
    non-interactive command) said with its fix; it read as a lost connection, with no word
    of python3 (hour s33 TUI #8). Any other failure as it came."""
    if not isinstance(exc, CommandFailed) or exc.status != 127:
        return exc
    return TransportError(
        exc.host,
        f"the telemetry agent did not start: {exc.message}",
        "the box needs python3 on the PATH an ssh command gets (not only an interactive "
        "shell's): install it (apt-get install -y python3) or link it into /usr/bin",
    )


def _unexpected(host: str, exc: Exception) -> TransportError:
    """What the pane says of an error the monitor did not expect (a bug): it retries."""
    return TransportError(
        host,
        f"telemetry failed: {type(exc).__name__}: {printable(str(exc), 200)}",
        "this is a bug in rgt-tui: please report it with this message",
    )
