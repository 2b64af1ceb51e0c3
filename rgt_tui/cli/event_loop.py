"""A command's event loop, and its stop on SIGTERM while SIGINT is ignored.

Ctrl-C (and SIGTERM, which ``cli._term_as_interrupt`` turns into a SIGINT) stops a
command inside ``asyncio.run`` at an await: asyncio's own SIGINT handler cancels the
command's task, its ``finally`` blocks and connection closes run, and ``asyncio.run``
raises KeyboardInterrupt. A background job of a script ignores SIGINT, so asyncio
installs no handler there, and a KeyboardInterrupt raised from the TERM handler landed
at any bytecode: mid-``close_all``, a coroutine left unawaited, and a traceback at exit
("Exception ignored in …", about one loaded run in twelve). ``run_async`` keeps the
task, so ``cancel_on_term`` can cancel it as asyncio's handler would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_running: list[asyncio.Task[Any]] = []  # the command's task while run_async runs it
_termed: list[asyncio.Task[Any]] = []  # ... once cancel_on_term cancelled it


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)``; a cancel by ``cancel_on_term`` raises KeyboardInterrupt
    once the task has stopped, as a Ctrl-C inside ``asyncio.run`` does."""

    async def main() -> T:
        task = asyncio.current_task()
        assert task is not None
        _running.append(task)
        try:
            return await coro
        finally:
            _running.remove(task)

    try:
        return asyncio.run(main())
    except asyncio.CancelledError:
        if _termed:
            raise KeyboardInterrupt from None
        raise
    finally:  # a TERM whose cancel came after the task ended leaves nothing behind
        _termed.clear()


def cancel_on_term() -> bool:
    """Cancel the running command's task at its next await (from a signal handler, in
    the loop's thread); False when no command task runs, or a first TERM already
    cancelled it (a second then stops it at once)."""
    task = _running[-1] if _running else None
    if task is None or task.done() or task in _termed:
        return False
    _termed.append(task)
    task.get_loop().call_soon_threadsafe(task.cancel)
    return True
