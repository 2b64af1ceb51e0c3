"""Live telemetry: one long-lived agent channel per host, kept up across drops.

``HostMonitor.run`` connects (with capped, jittered backoff), starts the agent over the
connection (``python3 -u -``, source on stdin), and turns every JSON line into a
``HostUpdate`` — the snapshot, the connection state and the active alerts — handed to a
callback. A dropped connection is reported as "reconnecting", never as a dead run (GEN8);
when samples resume, the first update says how long the gap was.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from rgt_tui.agent import agent_command, agent_source
from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.health import Alert, HealthContext, HealthState, Thresholds, evaluate
from rgt_tui.domain.snapshot import HostSnapshot, snapshot_from_agent
from rgt_tui.transport.backoff import Backoff
from rgt_tui.transport.base import HostKeyError, Transport, TransportError


@dataclass(frozen=True)
class ConnectionState:
    """Where a host's connection stands, for the pane's status line."""

    status: str  # connecting | connected | reconnecting | lost
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


def parse_agent_line(host: str, line: str) -> HostSnapshot | None:
    """A snapshot from one agent line, or None for a line that is not a JSON object."""
    try:
        data = json.loads(line)
    except ValueError:
        return None
    return snapshot_from_agent(host, data) if isinstance(data, dict) else None


class HostMonitor:
    """Keeps one host's telemetry flowing; one instance per host, one task each."""

    def __init__(
        self,
        host: HostConfig,
        transport: Transport,
        *,
        interval: float = 2.0,
        thresholds: Thresholds = Thresholds(),
        backoff: Backoff = Backoff(),
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.host = host
        self.transport = transport
        self.interval = interval
        self.thresholds = thresholds
        self.backoff = backoff
        self.clock = clock
        self.health = HealthState()
        self.last: HostSnapshot | None = None
        self.last_sample_at: float | None = None
        self.connection = ConnectionState("connecting", clock())
        self._wake = asyncio.Event()
        self._closing: asyncio.Future[None] | None = None

    @property
    def host_key_fingerprint(self) -> str | None:
        """The host key the monitor's connection saw last (None: none yet, or local)."""
        return self.transport.host_key_fingerprint

    def request_reconnect(self) -> None:
        """Drop the current connection (if any) and retry now, skipping the backoff wait."""
        self._wake.set()
        # Keep a reference: the event loop holds tasks only weakly.
        self._closing = asyncio.ensure_future(self.transport.close())

    def _update(self, emit: Callable[[HostUpdate], None]) -> None:
        ctx = HealthContext(
            thresholds=self.thresholds,
            connection=self.connection.status,
            lost_since=self.connection.since if self.connection.status != "connected" else None,
            cost_per_hour=self.host.cost_per_hour,
        )
        alerts = evaluate(self.last, self.health, ctx)
        emit(HostUpdate(self.host.name, self.connection, self.last, alerts, self.health))

    def _set(self, status: str, **fields: object) -> None:
        since = self.connection.since if status == self.connection.status else self.clock()
        self.connection = ConnectionState(status, since, **fields)  # type: ignore[arg-type]

    async def _sleep_or_wake(self, seconds: float | None) -> None:
        self._wake.clear()
        try:
            await asyncio.wait_for(self._wake.wait(), seconds)
        except asyncio.TimeoutError:
            pass

    async def run(self, emit: Callable[[HostUpdate], None]) -> None:
        """Run until cancelled, calling ``emit`` for every state change and sample."""
        attempt = 0
        command = agent_command(self.host.mounts, self.interval)
        source = agent_source()
        while True:
            try:
                await self.transport.connect()
            except HostKeyError as exc:
                # A key problem needs the user; retrying would only repeat the refusal.
                self._set("lost", error=exc.message, fix=exc.fix, key_error=exc)
                self._update(emit)
                await self._sleep_or_wake(None)
                continue
            except TransportError as exc:
                attempt += 1
                delay = self.backoff.delay(attempt)
                status = (
                    "reconnecting"
                    if self.last_sample_at is not None or attempt > 1
                    else "connecting"
                )
                self._set(
                    status,
                    attempt=attempt,
                    next_try_at=self.clock() + delay,
                    error=exc.message,
                    fix=exc.fix,
                )
                self._update(emit)
                await self._sleep_or_wake(delay)
                continue
            attempt = 0
            gap = self.clock() - self.last_sample_at if self.last_sample_at is not None else None
            self._set("connected")
            self._update(emit)
            try:
                await self._stream(command, source, emit, gap)
            except TransportError as exc:
                self._set("reconnecting", attempt=0, error=exc.message)
                self._update(emit)
            await self.transport.close()

    async def _stream(
        self, command: str, source: str, emit: Callable[[HostUpdate], None], gap: float | None
    ) -> None:
        first = True
        # aclosing: a cancelled monitor closes the agent's channel now, not at GC time.
        async with contextlib.aclosing(self.transport.stream_lines(command, input=source)) as lines:
            async for line in lines:
                snap = parse_agent_line(self.host.name, line)
                if snap is None:
                    continue
                if first and gap is not None:
                    self.connection = replace(self.connection, gap_s=gap)
                first = False
                self.health = self.health.observe(snap, self.thresholds)
                self.last = snap
                self.last_sample_at = self.clock()
                self._update(emit)
        raise TransportError(self.host.name, "telemetry agent stopped")


async def sample_once(
    host: HostConfig, transport: Transport, *, timeout: float = 30.0
) -> HostSnapshot:
    """Connect, take one agent sample and return it (for `rgt-tui status`)."""
    await transport.connect()
    result = await transport.run(
        agent_command(host.mounts, 0.0, count=1), input=agent_source(), timeout=timeout
    )
    snaps = [s for s in (parse_agent_line(host.name, ln) for ln in result.stdout.splitlines()) if s]
    if not snaps:
        why = (result.stderr.strip().splitlines() or [f"exit status {result.exit_status}"])[-1]
        if result.exit_status == 127:
            why = "python3 not found on the box (the telemetry agent needs it)"
        raise TransportError(host.name, f"telemetry agent gave no sample: {why}")
    return snaps[-1]
