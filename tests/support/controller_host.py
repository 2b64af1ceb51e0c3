"""The one controller host of the tests: what a UI-free controller (``ControllerHost``:
the job runner, the queue keys, the host keys, …) needs of the App, without Textual.

Workers are asyncio tasks started as Textual's ``run_worker`` would (a newer worker of
a group cancels the older: ``exclusive``), and notices are kept in a list.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any


class LoopHost:
    """``ControllerHost`` on the running event loop: ``workers`` by group (the latest),
    ``tasks`` every one started, ``notices`` as (message, title, severity)."""

    def __init__(self) -> None:
        self.notices: list[tuple[str, str, Any]] = []
        self.workers: dict[str, asyncio.Task[Any]] = {}
        self.tasks: list[asyncio.Task[Any]] = []

    def run_worker(
        self,
        work: Coroutine[Any, Any, Any],
        name: str | None = "",
        group: str = "default",
        description: str = "",
        exit_on_error: bool = True,
        start: bool = True,
        exclusive: bool = False,
        thread: bool = False,
    ) -> asyncio.Task[Any]:
        assert exclusive and not exit_on_error  # controllers.workers' options, always
        old = self.workers.get(group)
        if old is not None:
            old.cancel()
        task = self.workers[group] = asyncio.ensure_future(work)
        self.tasks.append(task)
        return task

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: Any = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        self.notices.append((message, title, severity))

    @property
    def messages(self) -> list[str]:
        """The notices' messages alone."""
        return [message for message, _, _ in self.notices]

    async def drain(self) -> None:
        """Cancel every worker still running and wait for them to end."""
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
