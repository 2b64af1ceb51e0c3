"""The scheduler's view of a Slurm host's queue: ``slurm_cells`` and its facts.

The implementation is ``services.slurm_view``, a sibling of ``services.queue_view``
outside this package: ``queue_view`` reads it for every Slurm host, and this package's
launch and control modules import ``queue_view``, so living here would make the two an
import cycle (the ``acyclic_siblings`` contract).
"""

from __future__ import annotations

from rgt_tui.services.slurm_view import (
    SlurmCell,
    SlurmFacts,
    parse_slurm_view,
    read_slurm,
    slurm_cells,
)

__all__ = ["SlurmCell", "SlurmFacts", "parse_slurm_view", "read_slurm", "slurm_cells"]
