"""Each host's one connection, opened once and shared by every service (DESIGN data flow 2).

The TUI holds one ``FleetConnections``. Telemetry, the queue poller, logs, launch,
diagnose, pull, verify and the gate all borrow the host's transport from it — channels and
SFTP sessions over one SSH connection — instead of each opening its own (a handshake
costs half a second to a far box, and some providers rate-limit new connections).

Borrowers never close the transport for others on purpose: a dropped connection (the
user's ``r``, a stalled pull) is closed for everyone, and the next borrower's ``connect()``
opens it again. ``SshTransport.connect`` holds a lock and returns at once when connected,
so borrowers that connect together share one handshake.

The one reconnect loop is here too, ``connect_with_backoff``: telemetry (``HostMonitor``),
the pull and the log follower all wait by it, each reporting "attempt n, next try in s"
its own way (``on_attempt``). Its waits are ``FleetConnections.wait``, and
``FleetConnections.wake`` (the user's ``r``, a trusted host key) ends every one of them
on the host at once: the one wake mechanism.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from typing import TypeVar

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.errors import HostKeyError, TransportError
from rgt_tui.timeouts import within
from rgt_tui.transport import Transport, transport_for
from rgt_tui.transport.backoff import Backoff

T = TypeVar("T")

# The TUI's pulls share the connection with telemetry (one session), SFTP lane 0 (logs,
# stats) and the queue poller's commands; sshd allows 10 sessions per connection by
# default (MaxSessions), so a pull there runs 3 large files × 2 lanes and leaves room.
SHARED_PULL_CONCURRENCY = 3


OnAttempt = Callable[[int, float, TransportError], None]
"""Told of each failed attempt before its wait: (attempt number, seconds until the next
try, why it failed)."""


async def connect_with_backoff(
    transport: Transport,
    backoff: Backoff,
    on_attempt: OnAttempt | None = None,
    wait: Callable[[float], Awaitable[object]] = asyncio.sleep,
    *,
    failed: int = 0,
    failure: TransportError | None = None,
    max_attempts: int | None = None,
) -> int:
    """Connect, retrying with capped, jittered delays until it works: the one reconnect
    loop (telemetry, the pull and the log follower all use it). Returns the number of
    failed attempts counted so far (``failed`` included).

    Each failure n is reported to ``on_attempt`` with ``backoff.delay(n)`` and then waited
    out by ``wait`` (``FleetConnections.wait`` ends early on ``wake``). A borrower whose
    connection was just lost passes ``failed`` (how many attempts in a row have failed,
    that loss included) and ``failure`` (the loss): the loop then waits before its first
    try, as a box that just dropped us deserves. After ``max_attempts`` failures in a row
    the last TransportError is raised. A refused host key (HostKeyError) is raised at
    once: retrying would only repeat the refusal (T6)."""
    attempt, exc = failed, failure
    while True:
        if exc is not None:
            if max_attempts is not None and attempt >= max_attempts:
                raise exc
            delay = backoff.delay(attempt)
            if on_attempt is not None:
                on_attempt(attempt, delay, exc)
            await wait(delay)
        try:
            await transport.connect()
            return attempt
        except HostKeyError:
            raise
        except TransportError as error:
            attempt, exc = attempt + 1, error


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
        """Sleep ``seconds`` (None: until woken) or until ``wake(host)``: how every
        borrower of ``host`` waits between attempts."""
        wake = self._wakes.setdefault(host, asyncio.Event())
        with contextlib.suppress(asyncio.TimeoutError):
            await within(wake.wait(), seconds)

    def waiter(self, host: str) -> Callable[[float | None], Awaitable[None]]:
        """``wait`` for ``host`` as a one-argument sleep (for ``connect_with_backoff``'s
        ``wait``, a pull's or a monitor's)."""
        return partial(self.wait, host)

    async def connect_with_backoff(
        self, host: str, on_attempt: OnAttempt | None = None
    ) -> Transport:
        """Connect ``host``, retrying on the shared schedule until it works; a wait ends
        early on ``wake``."""
        transport = self.transport(host)
        await connect_with_backoff(transport, self.backoff, on_attempt, self.waiter(host))
        return transport

    def wake(self, host: str) -> None:
        """End every wait on ``host``: each borrower in backoff (telemetry, a pull, a log
        follower) or waiting on a refused key tries again at once. The one wake."""
        wake = self._wakes.pop(host, None)
        if wake is not None:
            wake.set()

    def is_connected(self, host: str) -> bool:
        """Whether ``host``'s shared connection is open now (False: closed, or never made)."""
        held = self._transports.get(host)
        return held is not None and held.connected

    async def close(self, host: str) -> None:
        """Close ``host``'s connection and its SFTP sessions (a torn-down box is done);
        never raises. The host stays known: the next borrower's ``connect()`` (the
        user's ``r``) opens it again."""
        held = self._transports.get(host)
        if held is not None:
            with contextlib.suppress(Exception):
                await held.close()

    def detach(self, host: str) -> Transport | None:
        """Forget ``host`` (removed from the fleet file, or its connection settings
        changed: ``add`` it again) and hand back its transport, for the caller to close
        once its borrowers have stopped; None when none was made."""
        self._hosts.pop(host, None)
        return self._transports.pop(host, None)

    async def close_all(self) -> None:
        """Close every connection (the app is leaving); never raises."""
        held = list(self._transports.values())
        await asyncio.gather(*(t.close() for t in held), return_exceptions=True)
