"""The one place a host's scheduler backend is chosen (docs/schedulers.md).

Everything else asks the backend for a capability (``services.queue.scheduler``): the
command line, the controllers, the screens, the runtime, preflight and the teardown gate
never test which backend a host has. A new backend (a group of boxes, a Kubernetes Job)
is one module and one line here.
"""

from __future__ import annotations

from rgt_tui.domain.config import HostConfig
from rgt_tui.services.queue.box_backend import BoxRunner
from rgt_tui.services.queue.group.backend import GroupBackend
from rgt_tui.services.queue.group.ranks import MemberLinks
from rgt_tui.services.queue.scheduler import AllocationSampler
from rgt_tui.services.queue.slurm.backend import SlurmBackend
from rgt_tui.services.queue.slurm.telemetry import AllocationTelemetry

__all__ = ["BoxRunner", "GroupBackend", "SlurmBackend", "backend_for"]


def backend_for(
    host: HostConfig, links: MemberLinks | None = None
) -> BoxRunner | SlurmBackend | GroupBackend:
    """``host``'s backend: a group's for a ``[[groups]]`` entry (its boxes' connections
    borrowed from ``links``, the fleet's, else opened per verb), Slurm for a login node
    (``scheduler = "slurm"``), else the box runner. Cheap (a small frozen object):
    callers make one per use."""
    if host.group is not None:
        return GroupBackend(host, links)
    if host.slurm is not None:
        return SlurmBackend(host)
    return BoxRunner(host)


def allocation_sampler() -> AllocationSampler:
    """The sampler the queue poll lays over views of hosts whose backend has ``allocations``
    (Slurm: running cells' GPUs sampled inside their allocations). Made here, where the
    backends are known, so the runtime names no scheduler."""
    return AllocationTelemetry()
