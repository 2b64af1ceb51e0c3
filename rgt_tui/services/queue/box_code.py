"""What a running queue runs: the code on the box, which sync may not touch while it runs.

Sync is refused while a queue runs (a cell must not see its code change under it), so an
edit made here after the launch is in none of the cells still to run: a retry the running
queue takes (s37 dev-loop hour #1), nor a pending cell (s37 dev-loop hour #2: `queue show`
listed it pending, with nothing to say it would run the old config). Both say so, with
the files that differ and how to run the local code instead.
"""

from __future__ import annotations

import asyncio

from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.queue_state import QueueView
from rgt_tui.domain.queue_waiting import still_to_run
from rgt_tui.domain.text import printable
from rgt_tui.domain.units import plural
from rgt_tui.timeouts import within
from rgt_tui.transport import Transport

COMPARE_TIMEOUT_S = 20.0


async def code_differs(fleet: Fleet, host: HostConfig, transport: Transport) -> str:
    """``2 files (configs/c.yaml, train.py)``: where the box's code differs from the local
    tree; "" when it does not, when the host names no ``code``, or when it cannot be told
    (a launch's preflight says why), within ``COMPARE_TIMEOUT_S`` too: a workdir on a slow
    disk, or a box that answers slowly, must not hold up what waits for the note (a
    review made `queue show` wait three minutes). Reads only."""
    # Here, not at the top: the runtime imports this module at start-up, and only an
    # open Queue tab, `queue show` or a retry's plan compares code.
    from rgt_tui.services.code_sync.rules import fleet_files
    from rgt_tui.services.code_sync.status import code_status
    from rgt_tui.services.code_sync.types import SyncError

    try:
        status = await within(
            code_status(host, transport, withhold=fleet_files(fleet)), COMPARE_TIMEOUT_S
        )
    except (SyncError, TransportError, asyncio.TimeoutError):
        return ""
    if status is None or not status.differ_count:
        return ""
    named = ", ".join(status.differs[:3]) + (", …" if status.differ_count > 3 else "")
    return f"{plural(status.differ_count, 'file')} ({named})"


async def pending_code_note(
    fleet: Fleet, host: HostConfig, transport: Transport, view: QueueView
) -> str:
    """``3 cells still to run (c, d, e) run the code on box1, which differs …`` while the
    queue runs with cells still to start; "" when none waits or the code agrees."""
    if not still_to_run(view):
        return ""
    return code_note(host, view, await code_differs(fleet, host, transport))


def code_note(host: HostConfig, view: QueueView, differs: str) -> str:
    """The note for ``view``'s cells still to run, given where the box's code differs
    (``code_differs``; "" says nothing). Apart from the look: the Queue tab looks at most
    every half minute, and a note kept whole named cells that had run since (a user's hour,
    s42: "4 cells still to run (a, b, …)" under a and b done)."""
    waiting = still_to_run(view)
    if not waiting or not differs:
        return ""
    named = ", ".join(printable(n, 60) for n in waiting[:3]) + (", …" if len(waiting) > 3 else "")
    them = "it" if len(waiting) == 1 else "them"
    return (
        f"{plural(len(waiting), 'cell')} still to run ({named}) will run the code on "
        f"{host.name}, which differs from the local tree in {differs}: an edit made here "
        f"since the launch is not in {them} — sync is refused while the queue runs; to run "
        "the local code, stop the queue after the current cell, sync, then launch (it goes "
        "on from the first cell not run)"
    )
