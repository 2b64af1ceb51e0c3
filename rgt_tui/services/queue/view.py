"""A host's queue view and the diagnosis of a run that vanished, as its backend reads them.

On a box the records say it all; on a Slurm host (``services.queue.slurm``) a second
round trip over the same connection asks the scheduler and each cell's task state is laid
over its records (``domain.slurm_queue``): the runner is alive while any array task is
pending or running, not while a pid is.
"""

from __future__ import annotations

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.queue_state import QueueView
from rgt_tui.domain.vanished import Diagnosis
from rgt_tui.services.queue.backends import backend_for
from rgt_tui.transport import Transport

__all__ = ["diagnose_queue", "read_queue_view"]


async def read_queue_view(host: HostConfig, transport: Transport) -> QueueView:
    """Every cell's state (pending/running/done/failed/interrupted, and a scheduler's own
    states where it has one) and the summary, as ``host``'s backend reads them."""
    return await backend_for(host).read_view(transport)


async def diagnose_queue(host: HostConfig, transport: Transport) -> tuple[QueueView, Diagnosis]:
    """The view, and the cause of the latest vanished cell, as ``host``'s backend tells it."""
    return await backend_for(host).diagnose(transport)
