"""Each host's one connection, opened once and shared by every service (DESIGN data flow 2).

The TUI holds one ``FleetConnections``. Telemetry, the queue poller, logs, launch,
diagnose, pull, verify and the gate all borrow the host's transport from it — channels and
SFTP sessions over one SSH connection — instead of each opening its own (a handshake
costs half a second to a far box, and some providers rate-limit new connections).

Borrowers never close the transport: ``drop`` (the user's ``r``, a stalled pull) closes it
for everyone, and the next borrower's ``connect()`` opens it again. ``SshTransport.connect``
holds a lock and returns at once when connected, so borrowers that connect together share
one handshake. The reconnect schedule is here too: ``backoff`` is the one every
long-lived borrower waits by, and ``wait`` ends early for all of them when the user asks
to reconnect now.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from typing import TypeVar

from rgt_tui.domain.config import HostConfig
from rgt_tui.transport import HostKeyError, Transport, TransportError, transport_for
from rgt_tui.transport.backoff import Backoff

T = TypeVar("T")

# The TUI's pulls share the connection with telemetry (one session), SFTP lane 0 (logs,
# stats) and the queue poller's commands; sshd allows 10 sessions per connection by
# default (MaxSessions), so a pull there runs 3 large files × 2 lanes and leaves room.
SHARED_PULL_CONCURRENCY = 3


async def connect_with_backoff(
    transport: Transport,
    backoff: Backoff,
    on_retry: Callable[[int, float, TransportError], None] | None = None,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> None:
    """Connect, retrying with capped, jittered delays until it works (the one reconnect
    loop: the TUI's borrowers and the CLI's log follower use it). A refused host key
    (HostKeyError) is raised at once: retrying would only repeat the refusal (T6)."""
    attempt = 0
    while True:
        try:
            await transport.connect()
            return
        except HostKeyError:
            raise
        except TransportError as exc:
            attempt += 1
            delay = backoff.delay(attempt)
            if on_retry is not None:
                on_retry(attempt, delay, exc)
            await sleep(delay)


class FleetConnections:
    """The fleet's transports, one per host, made on first use and closed by ``close_all``."""

    def __init__(
        self,
        hosts: Iterable[HostConfig],
        *,
        factory: Callable[[HostConfig], Transport] = transport_for,
        backoff: Backoff = Backoff(),
    ) -> None:
        self._hosts = {h.name: h for h in hosts}
        self._factory = factory
        self.backoff = backoff
        self._transports: dict[str, Transport] = {}
        self._wakes: dict[str, asyncio.Event] = {}

    def add(self, host: HostConfig) -> None:
        """A host added while the app runs: its connection is made on first use."""
        self._hosts[host.name] = host

    def transport(self, host: str) -> Transport:
        """``host``'s shared transport (not necessarily connected). KeyError: no such host."""
        held = self._transports.get(host)
        if held is None:
            held = self._transports[host] = self._factory(self._hosts[host])
        return held

    async def connected(self, host: str) -> Transport:
        """``host``'s transport, connected: one attempt; TransportError says why not."""
        transport = self.transport(host)
        await transport.connect()
        return transport

    async def use(self, host: str, work: Callable[[Transport], Awaitable[T]]) -> T:
        """``work(transport)`` over ``host``'s connected transport."""
        return await work(await self.connected(host))

    async def wait(self, host: str, seconds: float | None) -> None:
        """Sleep ``seconds`` (None: until woken) or until ``reconnect_now(host)``."""
        wake = self._wakes.setdefault(host, asyncio.Event())
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(wake.wait(), seconds)

    async def connect_with_backoff(
        self,
        host: str,
        on_retry: Callable[[int, float, TransportError], None] | None = None,
    ) -> Transport:
        """Connect ``host``, retrying on the shared schedule until it works; a wait ends
        early on ``reconnect_now``."""
        transport = self.transport(host)
        await connect_with_backoff(transport, self.backoff, on_retry, partial(self.wait, host))
        return transport

    def reconnect_now(self, host: str) -> None:
        """End every wait on ``host`` (a borrower in backoff tries again at once)."""
        wake = self._wakes.pop(host, None)
        if wake is not None:
            wake.set()

    async def close_all(self) -> None:
        """Close every connection (the app is leaving); never raises."""
        held = list(self._transports.values())
        await asyncio.gather(*(t.close() for t in held), return_exceptions=True)
