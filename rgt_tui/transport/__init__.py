"""Transports: how services reach a box (SSH) or this machine (local)."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from rgt_tui.transport.base import (
    CommandResult,
    FileReader,
    FileStat,
    HostKeyError,
    Transport,
    TransportError,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from rgt_tui.domain.config import HostConfig

__all__ = [
    "CommandResult",
    "FileReader",
    "FileStat",
    "HostKeyError",
    "Transport",
    "TransportError",
    "open_transport",
    "transport_for",
]


def transport_for(host: HostConfig) -> Transport:
    """The transport a host's fleet-file entry asks for."""
    if host.ssh is None:
        from rgt_tui.transport.local import LocalTransport

        return LocalTransport(host.name)
    from rgt_tui.transport.ssh import SshTransport

    return SshTransport(
        host.name,
        address=host.ssh.host,
        port=host.ssh.port,
        username=host.ssh.user,
        identity_file=host.identity_file,
        known_hosts=host.known_hosts,
        host_key=host.host_key,
        identity_at=host.identity_at,
    )


@contextlib.asynccontextmanager
async def open_transport(host: HostConfig) -> AsyncIterator[Transport]:
    """A transport of its own for ``host``, closed on the way out."""
    transport = transport_for(host)
    try:
        yield transport
    finally:
        await transport.close()
