"""Where asyncssh's bulk receive path costs more than it needs to, for pulls of gigabytes.

On a pull the event loop's thread is the critical path: asyncssh parses every packet
that arrives (about 30,000 per GB: OpenSSH sends at most 32 KiB per channel read) in
Python, and in the TUI the same loop draws the screen. Each tuning here wraps one
asyncssh method around its own work and leaves the SSH protocol's parsing and checks to
asyncssh; each was measured (docs/pulls.md) and is tested against asyncssh's own result.
"""

from __future__ import annotations

import asyncio

import asyncssh

# Received bytes are handed to asyncssh at most this many at a time (see feed_in_packets).
FEED_BYTES = 33_000
KEEPALIVE_REARM_S = 1.0  # see rearm_keepalive_lazily


def feed_in_packets(conn: asyncssh.SSHClientConnection) -> None:
    """Hand asyncssh each socket read a packet's worth at a time.

    asyncssh appends a read (up to 256 KiB) to one ``bytes`` buffer and cuts each packet
    (32 KiB from OpenSSH) off its front, copying the rest twice per packet: every byte of
    a bulk transfer was copied about eight times, a fifth of this side's CPU in memmove
    during a pull (perf). In pieces of about one packet the rest stays short. This wraps
    the connection's ``data_received`` (the asyncio protocol method the socket transport
    calls), so asyncssh's own parsing is unchanged.
    """
    receive = conn.data_received

    def data_received(data: bytes, datatype: object = None) -> None:
        if len(data) <= FEED_BYTES:
            receive(data, datatype)
            return
        view = memoryview(data)
        for start in range(0, len(view), FEED_BYTES):
            if conn.is_closed():
                return
            receive(view[start : start + FEED_BYTES], datatype)  # type: ignore[arg-type]

    conn.data_received = data_received  # type: ignore[method-assign]


def rearm_keepalive_lazily(conn: asyncssh.SSHClientConnection) -> None:
    """Re-arm asyncssh's keepalive timer at most once a second, not on every piece fed in.

    asyncssh cancels its keepalive timer and schedules a new one on every
    ``data_received``: with a piece per packet that is ~30,000 loop timers per GB
    pulled, 5% of this side's time (py-spy). Re-armed at most once a second, a
    keepalive goes out after 9-10 s of silence instead of exactly 10 s; one that goes out
    early is answered and changes nothing. Where asyncssh has no such method (a future
    version), nothing is changed.
    """
    reset = getattr(conn, "_reset_keepalive_timer", None)
    if reset is None:
        return
    loop = asyncio.get_running_loop()
    last = -KEEPALIVE_REARM_S

    def rearm() -> None:
        nonlocal last
        now = loop.time()
        if now - last >= KEEPALIVE_REARM_S:
            last = now
            reset()

    conn._reset_keepalive_timer = rearm  # type: ignore[method-assign]
