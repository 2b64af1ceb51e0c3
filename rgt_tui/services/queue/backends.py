"""The one place a host's scheduler backend is chosen (docs/schedulers.md).

Everything else asks the backend for a capability (``services.queue.scheduler``): the
command line, the controllers, the screens, the runtime, preflight and the teardown gate
never test which backend a host has. A new backend (a group of boxes, a Kubernetes Job)
is one module and one line here.
"""

from __future__ import annotations

from rgt_tui.domain.config import HostConfig
from rgt_tui.services.queue.box_backend import BoxRunner
from rgt_tui.services.queue.slurm.backend import SlurmBackend

__all__ = ["BoxRunner", "SlurmBackend", "backend_for"]


def backend_for(host: HostConfig) -> BoxRunner | SlurmBackend:
    """``host``'s backend: Slurm for a login node (``scheduler = "slurm"``), else the box
    runner. Cheap (a small frozen object): callers make one per use."""
    if host.slurm is not None:
        return SlurmBackend(host)
    return BoxRunner(host)
