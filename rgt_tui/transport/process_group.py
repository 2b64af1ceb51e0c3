"""The one local process-group runner: a command on this machine started as the leader of
a session of its own, so that stopping it stops everything it started.

A shell's children (``sh -c 'cli destroy & wait'``, a pipeline, a background job) share
its process group; killing only the shell would leave them running, unseen, after the app
said the command was stopped. Used by the local transport (a capped or timed-out command)
and by the teardown and autostop commands run here.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from typing import Any


async def start_in_group(*argv: str, **kwargs: Any) -> asyncio.subprocess.Process:
    """Start ``argv`` (asyncio's ``create_subprocess_exec`` keywords) leading a new
    session and so its own process group (pgid == its pid)."""
    return await asyncio.create_subprocess_exec(*argv, start_new_session=True, **kwargs)


def kill_group(proc: asyncio.subprocess.Process) -> None:
    """SIGKILL ``proc``'s whole process group; one already gone is fine (PermissionError:
    a group whose only members are zombies, as macOS answers)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
