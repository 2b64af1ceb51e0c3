"""``within``: ``asyncio.wait_for`` without its lost cancellation.

On Python 3.10 and 3.11, ``asyncio.wait_for`` returns the awaited result when its task is
cancelled just as that result arrives: the cancellation is lost (CPython gh-86296, fixed
in 3.12 by building it on ``asyncio.timeout``). A loop of such waits — the telemetry
stream's next line every second, a driver's sleep — then cannot be stopped: a CI run
hung 120 s on a host monitor told to stop while its agent's next line came in.

Every timed wait in rgt-tui goes through ``within``; ``asyncio.wait_for`` is not used.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def within(aw: Awaitable[T], timeout: float | None) -> T:
    """``await aw``, or ``asyncio.TimeoutError`` after ``timeout`` seconds (None: no
    limit), ``aw`` then cancelled; a cancellation of the caller always raises."""
    if timeout is None:
        return await aw
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(timeout):  # counts cancellations: never swallows one
            return await aw
    task = asyncio.ensure_future(aw)  # 3.10: asyncio.wait raises the caller's cancel
    try:
        done, _ = await asyncio.wait({task}, timeout=max(0.0, timeout))
    except asyncio.CancelledError:
        task.cancel()
        raise
    if not done:
        task.cancel()
        await asyncio.wait({task})  # ended before the caller moves on, as wait_for does
        raise asyncio.TimeoutError
    return task.result()
