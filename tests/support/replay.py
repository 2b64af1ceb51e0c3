"""The one replayed monitor of the tests: ``HostMonitor``'s interface, emitting a recorded
stream.

Two ways to feed it, alone or together. ``updates``: ready ``HostUpdate``s, emitted as
soon as it runs (then ``crash`` raises, if given: a monitor that dies). ``sample`` and
``lose``: the test decides when each step is emitted, an agent sample (its JSON object,
``support.samples.agent_sample``) or a lost connection, built the way ``HostMonitor``
builds them: the real parser, the health state carried from sample to sample (starting
from whatever the runtime seeded into ``health``), and ``connection_alerts`` (the health
and cost rules); so two consumers can be fed the very same stream in the same order.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterable
from typing import Any

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.health import HealthState, Thresholds
from rgt_tui.profiles import profile as load_profile
from rgt_tui.services.telemetry import (
    ConnectionState,
    HostUpdate,
    connection_alerts,
    parse_agent_line,
)


class ReplayMonitor:
    """``MonitorLike``: emits ``updates``, then the steps it is told to, and waits to be
    cancelled (or raises ``crash`` after ``updates``). ``host`` and ``clock`` are needed
    only by ``sample`` and ``lose``; ``reconnects`` counts ``request_reconnect``."""

    host_key_fingerprint: str | None = None  # no connection, no host key

    def __init__(
        self,
        host: HostConfig | None = None,
        clock: Callable[[], float] = time.time,
        *,
        updates: Iterable[HostUpdate] = (),
        crash: str | None = None,
    ) -> None:
        self.host = host
        self.clock = clock
        self.updates = list(updates)
        self.crash = crash
        self.reconnects = 0
        self.health = HealthState()
        self.last: Any = None
        self.received_at: float | None = None
        self.connection = ConnectionState("connecting", clock())
        self.emit: Callable[[HostUpdate], None] | None = None
        self.started = asyncio.Event()

    async def run(self, emit: Callable[[HostUpdate], None]) -> None:
        self.emit = emit
        self.started.set()
        for update in self.updates:
            emit(update)
        if self.crash:
            raise RuntimeError(self.crash)
        await asyncio.Event().wait()

    def request_reconnect(self) -> None:
        """Nothing to drop; counted."""
        self.reconnects += 1

    def sample(self, data: dict[str, Any]) -> HostUpdate:
        """Emit the sample ``data`` (connected)."""
        assert self.host is not None, "sample() needs the monitor's host"
        snap = parse_agent_line(self.host.name, json.dumps(data))
        assert snap is not None, data
        self.health = self.health.observe(snap, Thresholds())
        self.last, self.received_at = snap, self.clock()
        if self.connection.status != "connected":
            self.connection = ConnectionState("connected", self.clock())
        return self._emit()

    def lose(self, error: str = "Connection lost") -> HostUpdate:
        """Emit a lost connection (the monitor retrying)."""
        self.connection = ConnectionState("reconnecting", self.clock(), attempt=1, error=error)
        return self._emit()

    def _emit(self) -> HostUpdate:
        assert self.host is not None, "sample() and lose() need the monitor's host"
        alerts = connection_alerts(
            self.host,
            load_profile(self.host.profile),
            self.last,
            self.health,
            self.connection,
            thresholds=Thresholds(),
            now=self.clock(),
            last_seen=self.received_at,
            received_at=self.received_at,
        )
        update = HostUpdate(self.host.name, self.connection, self.last, alerts, self.health)
        assert self.emit is not None, "the monitor is not running"
        self.emit(update)
        return update
