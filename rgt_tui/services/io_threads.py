"""Worker threads for a pull's bulk local work (hashing and writing what arrives), run at
a lower CPU priority than the event loop's thread.

The event loop's thread is a pull's critical path: it decrypts and parses every SSH
packet (asyncssh in Python, about 30,000 packets per GB) and, in the TUI, draws the
screen. The hashing and writing threads compete with it for cores; where cores are
scarce (a laptop, a small VM, or a box and client sharing two cores as in
``scripts/bench_pull.py``) the kernel let the loop wait runnable for 0.6-0.8 s of a
3 s pull. At nice +10 (``WORKER_NICE``) the kernel runs the loop first when both are
ready, and the workers take what is left: their work is never dropped, only queued, and
a full queue stops the channel reading (``ssh_stream.HIGH_WATER``).

Per-thread nice values are a Linux feature (``setpriority`` with a thread id); elsewhere
the threads keep the process's priority, since there the same call would name a
process.
"""

from __future__ import annotations

import asyncio
import functools
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

WORKER_NICE = 10  # added to the process's nice value (19 is the lowest priority)

T = TypeVar("T")


def _lower_priority() -> None:
    """Runs first in each worker thread: lower that thread's (and only its) priority."""
    if not sys.platform.startswith("linux"):
        return
    tid = threading.get_native_id()
    try:
        now = os.getpriority(os.PRIO_PROCESS, tid)
        os.setpriority(os.PRIO_PROCESS, tid, min(19, now + WORKER_NICE))
    except OSError:  # a sandbox that forbids it: the thread works at normal priority
        pass


@functools.cache
def executor() -> ThreadPoolExecutor:
    """The shared pool (created on first use; as many threads as asyncio's default)."""
    return ThreadPoolExecutor(
        max_workers=min(32, (os.cpu_count() or 1) + 4),
        thread_name_prefix="rgt-io",
        initializer=_lower_priority,
    )


def run_io(func: Callable[..., T], /, *args: object) -> asyncio.Future[T]:
    """Run ``func(*args)`` in a low-priority worker thread; await the result."""
    loop = asyncio.get_running_loop()
    return loop.run_in_executor(executor(), func, *args)
