"""``wait_for``: poll a condition until it holds, the one waiting helper of the tests."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any


async def wait_for(
    predicate: Callable[[], Any | Awaitable[Any]],
    timeout: float = 30.0,
    what: str = "",
    *,
    pilot: Any = None,
    show: Callable[[], str] | None = None,
    every: float = 0.05,
) -> Any:
    """Poll ``predicate`` (sync or async) every ``every`` seconds until it returns
    something truthy, and return that value; fail after ``timeout`` seconds naming
    ``what``, with ``show()`` (what was on the screen, say).

    With ``pilot`` the App runs between polls (``pilot.pause``) and a failure shows its
    screen as it was.
    """
    if pilot is not None and show is None:
        from support.pilot import screen_text

        def show() -> str:
            return screen_text(pilot.app)

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = predicate()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if loop.time() > deadline:
            message = f"timed out after {timeout:g} s waiting for {what or predicate}"
            if show is not None:
                message += f"; last seen:\n{show()}"
            raise AssertionError(message)
        if pilot is not None:
            await pilot.pause(every)
        else:
            await asyncio.sleep(every)
