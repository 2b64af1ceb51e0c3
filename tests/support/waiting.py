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

    With ``pilot`` the App runs between polls (``pilot.pause``), the wait also lasts
    until the screen on top is shown (``screen_shown``), and a failure shows its screen
    as it was.
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
        if value and (pilot is None or screen_shown(pilot.app)):
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


def screen_shown(app: Any) -> bool:
    """The screen on top has mounted its widgets and been laid out, or the App is ending.

    A pushed screen is on the stack (``isinstance(app.screen, X)`` holds) before it has
    composed a widget: a test that read it then read an empty screen, on a loaded CI
    machine only. Waiting here closes that gap for every ``wait_for(..., pilot=)``.
    """
    from textual.app import ScreenStackError

    if app.return_code is not None:
        return True  # quitting: nothing more will be shown
    try:
        screen = app.screen
    except ScreenStackError:
        return True
    # Laid out: its compositor has been given a size, which the screen does on its first
    # resume, after its widgets are mounted (an empty screen counts: nothing to show).
    return screen.is_mounted and bool(screen._compositor.size.area)
