"""A host's queue as its box records it, and the diagnosis of a run that vanished.

Both read everything in one probe round trip and hand the records to the pure domain
(``domain.queue_state.derive_view``, ``domain.vanished.diagnose``): what the UI shows is
what the box wrote, never what the app remembers. On a Slurm host (``host.slurm``) a
second round trip over the same connection asks the scheduler (``services.slurm_view``)
and each cell's task state is laid over its records (``domain.slurm_queue``): the runner
is alive while any array task is pending or running, not while a pid is.
"""

from __future__ import annotations

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.queue_records import tmux_session_name
from rgt_tui.domain.queue_state import QueueView, derive_view
from rgt_tui.domain.slurm_queue import slurm_view
from rgt_tui.domain.slurm_vanished import SlurmLimits, diagnose_slurm
from rgt_tui.domain.vanished import BoxFacts, Diagnosis, diagnose
from rgt_tui.services.queue_box import BoxQueueFacts, probe
from rgt_tui.services.slurm_view import SlurmFacts, read_slurm
from rgt_tui.transport import Transport

__all__ = ["diagnose_queue", "read_queue_facts", "read_queue_view", "view_from_facts"]


def view_from_facts(
    host: HostConfig, facts: BoxQueueFacts, slurm: SlurmFacts | None = None
) -> QueueView:
    """The queue view derived from probed facts (pure); with ``slurm`` (a Slurm host's
    scheduler facts), each cell's array task laid over its records."""
    view = derive_view(
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
        marks=facts.marks,
    )
    if slurm is None:
        return view
    return slurm_view(view, slurm.cells, slurm.cluster, squeue_ok=slurm.squeue_ok)


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


async def read_queue_view(host: HostConfig, transport: Transport) -> QueueView:
    """Every cell's state (pending/running/done/failed/interrupted, and Slurm's states
    on a Slurm host) and the summary."""
    facts = await read_queue_facts(host, transport)
    slurm = await read_slurm(host, transport) if host.slurm is not None else None
    return view_from_facts(host, facts, slurm)


async def diagnose_queue(host: HostConfig, transport: Transport) -> tuple[QueueView, Diagnosis]:
    """The view, and the cause of the latest vanished cell with the evidence for all four."""
    if host.slurm is not None:  # the job state says why, not the login node's kernel
        facts = await read_queue_facts(host, transport)
        view = view_from_facts(host, facts, await read_slurm(host, transport))
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
