"""A host's queue view and the diagnosis of a run that vanished, as its backend reads them.

On a box the records say it all; on a Slurm host (``services.queue.slurm``) a second
round trip over the same connection asks the scheduler and each cell's task state is laid
over its records (``domain.slurm_queue``): the runner is alive while any array task is
pending or running, not while a pid is.
"""

from __future__ import annotations

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.queue_records import tmux_session_name
from rgt_tui.domain.queue_state import QueueView
from rgt_tui.domain.slurm_queue import slurm_view
from rgt_tui.domain.slurm_vanished import SlurmLimits, diagnose_slurm
from rgt_tui.domain.vanished import BoxFacts, Diagnosis, diagnose
from rgt_tui.services.queue.records import read_queue_facts, view_from_facts
from rgt_tui.services.queue.slurm.view import read_slurm
from rgt_tui.transport import Transport

__all__ = ["diagnose_queue", "read_queue_view"]


async def read_queue_view(host: HostConfig, transport: Transport) -> QueueView:
    """Every cell's state (pending/running/done/failed/interrupted, and Slurm's states
    on a Slurm host) and the summary."""
    facts = await read_queue_facts(host, transport)
    slurm = await read_slurm(host, transport) if host.slurm is not None else None
    view = view_from_facts(host, facts)
    if slurm is None:
        return view
    return slurm_view(view, slurm.cells, slurm.cluster, squeue_ok=slurm.squeue_ok)


async def diagnose_queue(host: HostConfig, transport: Transport) -> tuple[QueueView, Diagnosis]:
    """The view, and the cause of the latest vanished cell with the evidence for all four."""
    if host.slurm is not None:  # the job state says why, not the login node's kernel
        facts = await read_queue_facts(host, transport)
        slurm = await read_slurm(host, transport)
        view = slurm_view(
            view_from_facts(host, facts), slurm.cells, slurm.cluster, squeue_ok=slurm.squeue_ok
        )
        limits = SlurmLimits(host.slurm.mem, host.slurm.time, host.slurm.signal_lead_s)
        return view, diagnose_slurm(view, limits)
    facts = await read_queue_facts(host, transport, diag=True)
    view = view_from_facts(host, facts)
    box = BoxFacts(
        boot_id=facts.boot_id,
        uptime_s=facts.uptime_s,
        oom_kill_now=facts.oom_now,
        dmesg=facts.dmesg,
        dmesg_lines=facts.dmesg_lines,
        session_name=tmux_session_name(host.name),
        session_present=facts.session_present,
        xid_lines=facts.xid_lines,
        gpu_lines=facts.gpu_lines,
        cuda_oom=facts.cuda_oom,
    )
    return view, diagnose(view, facts.launches, facts.attempts, box)
