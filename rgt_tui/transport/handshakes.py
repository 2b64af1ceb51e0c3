"""At most ``AT_ONCE`` SSH connections being opened at a time by one process.

A fleet of hundreds starts (``watch``, the TUI) with every host connecting at once: each
key exchange costs this process a few milliseconds of CPU and starts the agent on the
box, and 500 together kept the event loop busy for seconds while scrapes and keys
waited (issue 44, docs/benchmarks.md). Beyond the limit a connection waits its turn, in
order; a connection already open never waits. A handshake that hangs holds its slot
until ``CONNECT_TIMEOUT_S`` at most, so it takes ``AT_ONCE`` dead boxes at once to delay
the others, and by one timeout each.
"""

from __future__ import annotations

import asyncio
import weakref

AT_ONCE = 32

# One semaphore per event loop: a process that runs several loops (the tests, a command
# that calls asyncio.run twice) must not share one across them.
_SLOTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary()
)


def handshake_slot() -> asyncio.Semaphore:
    """This loop's limit on handshakes in flight (``async with handshake_slot():``)."""
    loop = asyncio.get_running_loop()
    slots = _SLOTS.get(loop)
    if slots is None:
        slots = _SLOTS[loop] = asyncio.Semaphore(AT_ONCE)
    return slots
