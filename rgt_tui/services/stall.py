"""Stall detection that costs nothing per block: a watchdog instead of a timeout per await.

``asyncio.wait_for`` around every block of a transfer wraps each await in a task; at a few
thousand blocks per gigabyte that overhead shows. ``StallWatch`` instead remembers when
data last arrived (``kick()`` is one clock read) and checks a few times per timeout.

When nothing arrived for ``timeout`` seconds it calls ``on_stall`` (the pull drops the
connection there): the blocked read then fails the ordinary way, and asyncssh collects
its own in-flight requests. Cancelling the read instead would strand those requests as
tasks whose errors nobody retrieves. Only if the read is still blocked one more timeout
later is the guarded task cancelled. Either way the ``with`` block raises ``Stalled``;
a cancellation from outside is left alone and propagates as usual.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import TracebackType


class Stalled(Exception):
    """No data arrived for the stall timeout."""


class StallWatch:
    """Cancel the current task when ``kick()`` has not been called for ``timeout`` seconds."""

    def __init__(self, timeout: float, on_stall: Callable[[], object] | None = None) -> None:
        self.timeout = timeout
        self.on_stall = on_stall
        self._cancelled = False
        self._loop = asyncio.get_running_loop()
        self._task: asyncio.Task | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._last = 0.0
        self.fired = False

    def kick(self) -> None:
        """Data arrived."""
        self._last = self._loop.time()

    def __enter__(self) -> StallWatch:
        self._task = asyncio.current_task()
        self.kick()
        self._schedule()
        return self

    def _schedule(self) -> None:
        self._handle = self._loop.call_later(max(0.05, self.timeout / 4), self._check)

    def _check(self) -> None:
        if self._loop.time() - self._last < self.timeout:
            self._schedule()
        elif not self.fired and self.on_stall is not None:
            self.fired = True
            self.on_stall()
            self.kick()  # give the dropped connection one more timeout to surface
            self._schedule()
        else:
            self.fired = self._cancelled = True
            if self._task is not None:
                self._task.cancel()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._handle is not None:
            self._handle.cancel()
        if not self.fired or exc_type is None:
            return
        message = f"no data for {self.timeout:g} s (stalled)"
        if exc_type is asyncio.CancelledError:
            if not self._cancelled:
                return  # cancelled from outside
            task = self._task
            uncancel = getattr(task, "uncancel", None)  # 3.11+: undo our own cancel request
            if uncancel is not None and task is not None and task.cancelling():
                uncancel()
            raise Stalled(message) from None
        if isinstance(exc, Exception):
            raise Stalled(message) from exc
