"""A HostMonitor watched from a test: every update it emits, kept in order."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from rgt_tui.services.telemetry import HostMonitor, HostUpdate


class Watch:
    """A HostMonitor running in a task, every update it emits kept in order."""

    def __init__(self, monitor: HostMonitor) -> None:
        self.monitor = monitor
        self.updates: list[HostUpdate] = []
        self.task = asyncio.create_task(monitor.run(self.updates.append))

    async def until(
        self, check: Callable[[HostUpdate], bool], timeout: float = 60, what: str = "an update"
    ) -> HostUpdate:
        """The first update (seen so far or still to come) for which ``check`` holds."""
        deadline = time.monotonic() + timeout
        seen = 0
        while time.monotonic() < deadline:
            for update in self.updates[seen:]:
                if check(update):
                    return update
            seen = len(self.updates)
            if self.task.done():
                self.task.result()  # raise what killed the monitor
            await asyncio.sleep(0.05)
        for update in self.updates[seen:]:  # what came while the sleep overran the deadline
            if check(update):
                return update
        last = self.updates[-1] if self.updates else None
        raise AssertionError(f"no {what} within {timeout:g} s; last: {last}")

    async def stop(self) -> None:
        """Cancel the monitor and close its transport."""
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        await self.monitor.transport.close()


def alert_ids(update: HostUpdate) -> set[str]:
    """The ids of the alerts an update carries."""
    return {a.id for a in update.alerts}
