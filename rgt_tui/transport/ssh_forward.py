"""A local port forwarded over the host's one asyncssh connection (``ssh -L``, U39).

asyncssh's ``forward_local_port`` listens here and opens one ``direct-tcpip`` channel per
accepted connection on the connection already open: no second login, no second
handshake. The listener is bound to ``FORWARD_LISTEN_HOST`` only. asyncssh closes it
when the connection goes; ``wait_closed`` returns then, so the caller (services/box/tunnel)
can say the tunnel is down and open a new one on the next connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress

import asyncssh

from rgt_tui.domain.text import printable
from rgt_tui.transport.base import FORWARD_LISTEN_HOST, TransportError
from rgt_tui.transport.ssh_stream import describe

# The box end: its loopback by name, so a TensorBoard that bound ::1 (``--host localhost``
# on some images) is reached as well as one on 127.0.0.1; the box's sshd resolves it.
BOX_END = "localhost"


class SshPortForward:
    """One forwarded port (``PortForward``) on one asyncssh connection."""

    def __init__(
        self,
        listener: asyncssh.SSHListener,
        conn: asyncssh.SSHClientConnection,
        remote_port: int,
    ) -> None:
        self._listener = listener
        self._conn = conn
        self.local_port = listener.get_port()
        self.remote_port = remote_port
        self._closed = asyncio.Event()

    @property
    def listen_host(self) -> str:
        """Where it listens here: loopback only."""
        return FORWARD_LISTEN_HOST

    async def probe(self) -> str | None:
        """One ``direct-tcpip`` channel to the box's port, closed at once: None when it
        opened, else the box's reason (nothing listens; forwarding refused by its sshd)."""
        try:
            _, writer = await self._conn.open_connection(BOX_END, self.remote_port)
        except asyncssh.ChannelOpenError as exc:
            return printable(exc.reason or "refused", 200)
        except (OSError, asyncssh.Error) as exc:
            return describe(exc)
        writer.close()
        return None

    def close(self) -> None:
        """Stop listening; the connection stays open for everyone else."""
        self._closed.set()
        with contextlib.suppress(Exception):  # the connection may be gone already
            self._listener.close()

    async def wait_closed(self) -> None:
        """Until ``close`` or the connection's end, whichever comes first."""
        closing = asyncio.ensure_future(self._closed.wait())
        dropped = asyncio.ensure_future(self._conn.wait_closed())
        try:
            await asyncio.wait({closing, dropped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            closing.cancel()
            dropped.cancel()
        self.close()


async def forward_port(
    conn: asyncssh.SSHClientConnection, host: str, remote_port: int, local_port: int
) -> SshPortForward:
    """Listen on ``FORWARD_LISTEN_HOST:local_port`` and forward to ``remote_port`` on the
    box over ``conn``. OSError (the port here is taken) is left to the caller, who knows
    whether another port will do."""
    if local_port == remote_port and _over_loopback(conn):
        # The box may be this machine (the demo's boxes, `ssh localhost`): its port N is
        # then the listener itself, and each connection opened another through the box
        # without end (20,000 descriptors in 8 s after T in the demo: a user's hour).
        # Refused like a taken port, so a tunnel with no port asked for takes a free one.
        raise OSError(
            errno.EADDRINUSE,
            f"the box is reached over this machine's loopback, so its port {remote_port} "
            "may be this very port, and the tunnel would carry into itself",
        )
    try:
        listener = await conn.forward_local_port(
            FORWARD_LISTEN_HOST, local_port, BOX_END, remote_port
        )
    except asyncssh.Error as exc:
        raise TransportError(host, f"port forwarding refused: {describe(exc)}") from exc
    return SshPortForward(listener, conn, remote_port)


def _over_loopback(conn: asyncssh.SSHClientConnection) -> bool:
    """The connection goes to this machine's loopback (127.0.0.0/8, ::1)."""
    peer = conn.get_extra_info("peername")
    try:
        return bool(peer) and ipaddress.ip_address(str(peer[0]).split("%")[0]).is_loopback
    except ValueError:
        return False
