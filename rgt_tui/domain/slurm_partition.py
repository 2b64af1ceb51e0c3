"""The ``partition`` preflight check of a Slurm host: the partitions its ``partition`` key
names exist on the cluster (hour s22b #7: a wrong one was caught only by sbatch, after
the plan had passed). Pure: services.preflight asks ``sinfo`` and hands its lines here."""

from __future__ import annotations

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.preflight import Check
from rgt_tui.domain.slurm_jobs import parse_partition
from rgt_tui.domain.text import printable

SHOWN = 8  # partitions a failed check names
# The login node's partitions, bounded in time and size (a hung slurmctld, a huge cluster).
SINFO_PARTITIONS = (
    "{ if command -v timeout >/dev/null; then timeout 20 sinfo -h -o '%P|%a|%F'; "
    "else sinfo -h -o '%P|%a|%F'; fi; } | head -n 200 | cut -c 1-200"
)


def partition_of(host: HostConfig) -> str | None:
    """The partition(s) a Slurm host's key names (None: no key, or not a Slurm host)."""
    return host.slurm.partition if host.slurm is not None else None


def partition_check(
    host: str, partition: str | None, sinfo: str | None, where: str, error: str = ""
) -> Check:
    """``partition``: the host's key (sbatch's ``--partition``, a comma list allowed);
    ``sinfo``: the login node's ``sinfo -h -o '%P|%a|%F'`` output (None: not asked);
    ``where``: the fleet file and the host's block, for the fix."""
    if partition is None:
        return Check("partition", True, "no partition key: sbatch submits to the cluster's default")
    wanted = [p.strip() for p in partition.split(",") if p.strip()]
    seen = [p for line in (sinfo or "").splitlines() if (p := parse_partition(line)) is not None]
    if not seen:
        why = printable(error or "sinfo listed no partition", 300)
        return Check(
            "partition",
            True,
            f"partition {printable(partition, 200)} not checked: {why}",
            ran=False,
        )
    # sinfo marks the default partition with a '*' and lists a partition once per state.
    names = list(dict.fromkeys(p.name.rstrip("*") for p in seen))
    default = next((p.name.rstrip("*") for p in seen if p.name.endswith("*")), None)
    missing = [p for p in wanted if p not in names]
    if not missing:
        return Check("partition", True, f"partition {printable(partition, 200)} exists")
    listed = ", ".join(
        printable(n, 100) + (" (the default)" if n == default else "") for n in names[:SHOWN]
    )
    more = f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
    unknown = ", ".join(printable(m, 100) for m in missing)
    instead = f' (e.g. partition = "{printable(default or names[0], 100)}")'
    return Check(
        "partition",
        False,
        f"{host}'s cluster has no partition {unknown}: sbatch would refuse every array. "
        f"Its partitions: {listed}{more}",
        f"set partition in {where} to one of them{instead}, or remove the key to submit "
        "to the default",
        certain=True,  # sbatch refuses it: no acknowledgement lets the launch go
    )
