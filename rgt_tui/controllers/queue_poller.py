"""The TUI's slow queue poller: each connected host's queue view, now and then.

One worker per host with a queue reads the view over the host's shared connection every
``poll_s`` seconds (``WATCHED_POLL_S`` while the user watches that host's Queue tab) and
hands it to ``on_view``; polls never overlap. A host is read only while ``is_live`` says
its telemetry is connected: the poller never opens, reconnects or closes a connection,
and a torn-down box whose telemetry stopped is left alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from rgt_tui.controllers.controller_host import ControllerHost
from rgt_tui.controllers.workers import run_host_worker
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.queue_state import QueueView
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.queue_view import read_queue_view
from rgt_tui.services.slurm_telemetry import AllocationTelemetry

POLL_S = 10.0
WATCHED_POLL_S = 3.0  # while the host's Queue tab is on screen
TICK_S = 0.5


class QueuePoller:
    """Reads every queue of the fleet, slowly; the latest views are in ``views``."""

    def __init__(
        self,
        fleet: Fleet,
        connections: FleetConnections,
        *,
        on_view: Callable[[str, QueueView], None],
        is_live: Callable[[str], bool],
        is_watched: Callable[[str], bool] = lambda host: False,
        poll_s: float = POLL_S,
    ) -> None:
        self.fleet = fleet
        self.connections = connections
        self.on_view = on_view
        self.is_live = is_live
        self.is_watched = is_watched
        self.poll_s = poll_s
        self.views: dict[str, QueueView] = {}
        # A Slurm host's running cells' GPUs, sampled inside their allocations (srun
        # --overlap), on its own slower cadence and with a backoff after a refusal.
        self.inside = AllocationTelemetry()

    def start(self, runner: ControllerHost) -> None:
        """One poller worker per host that has a queue."""
        for host in self.fleet.hosts:
            self.start_host(host, runner)

    def start_host(self, host: HostConfig, runner: ControllerHost) -> None:
        """Poll ``host`` (when it has a queue) in a worker of its own."""
        if host.queue:
            run_host_worker(runner, self.poll(host), "queue-poll", host.name)

    async def poll(self, host: HostConfig) -> None:
        """Poll ``host`` until cancelled."""
        while True:
            if not self.is_live(host.name):
                await asyncio.sleep(1.0)
                continue
            try:
                # Not connected: a TransportError, and the next round tries again.
                transport = self.connections.transport(host.name)
                view = await read_queue_view(host, transport)
                if host.slurm is not None:
                    view = await self.inside.annotate(host, transport, view)
            except Exception:  # TransportError or an unreadable record: retry next round
                pass  # the telemetry link reports connection trouble; the Queue tab the rest
            else:
                self.views[host.name] = view
                self.on_view(host.name, view)
            waited = 0.0
            while waited < self.poll_s and not (
                waited >= WATCHED_POLL_S and self.is_watched(host.name)
            ):
                await asyncio.sleep(TICK_S)
                waited += TICK_S
