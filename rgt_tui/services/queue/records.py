"""A host's queue as its box records it: the probe's facts and the view derived from them.

Both hand the records to the pure domain (``domain.queue_state.derive_view``): what the
UI shows is what the box wrote, never what the app remembers. A scheduler's own view
(Slurm's array tasks) is laid over this one by its backend.
"""

from __future__ import annotations

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.queue_records import tmux_session_name
from rgt_tui.domain.queue_state import QueueView, derive_view
from rgt_tui.services.queue.box import BoxQueueFacts, probe
from rgt_tui.transport import Transport

__all__ = ["read_queue_facts", "view_from_facts"]


def view_from_facts(host: HostConfig, facts: BoxQueueFacts) -> QueueView:
    """The queue view derived from probed facts (pure)."""
    return derive_view(
        host.name,
        facts.deployed,
        facts.launches,
        facts.attempts,
        boot_id=facts.boot_id,
        now=facts.now,
        runner_alive=facts.runner_alive,
        alive_cells=facts.alive_cells,
        session_present=facts.session_present,
        reasons=facts.why,
        log_mtimes=facts.log_mtimes,
        last_lines=facts.last_lines,
        marks=facts.marks,
    )


async def read_queue_facts(
    host: HostConfig, transport: Transport, *, diag: bool = False
) -> BoxQueueFacts:
    """Connect if needed and probe the box's queue records (TransportError when unreachable)."""
    await transport.connect()
    return await probe(
        transport,
        host.name,
        session=tmux_session_name(host.name),
        workdir=host.workdir,
        durable_dir=host.durable_dir,
        diag=diag,
    )
