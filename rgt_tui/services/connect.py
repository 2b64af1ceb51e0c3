"""One host's connection for one command of the command line.

The command line never imports the transport (DESIGN, Layers): its connections come from
the fleet-connections service the TUI uses (``FleetConnections``), here holding the one
host a command names, and the connection's type is named here for its signatures. The
errors a connection raises live in ``rgt_tui.domain.errors``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from rgt_tui.domain.config import HostConfig
from rgt_tui.services.connections import FleetConnections
from rgt_tui.transport import Transport

__all__ = ["Transport", "host_connection"]


@contextlib.asynccontextmanager
async def host_connection(host: HostConfig) -> AsyncIterator[Transport]:
    """``host``'s connection, not yet connected (it connects when a service first needs
    it: ``verify --offline`` never does), closed on the way out."""
    connections = FleetConnections([host])
    try:
        yield connections.transport(host.name)
    finally:
        await connections.close_all()
