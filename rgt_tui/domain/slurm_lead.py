"""The Slurm warning signal's lead (SLURM2), the ``signal-lead`` preflight check: pure,
so both the launch plan (services.queue.slurm) and preflight (services.preflight) make it."""

from __future__ import annotations

from rgt_tui.domain.config import HostConfig, SlurmConfig
from rgt_tui.domain.preflight import Check

# Slurm may deliver the --signal warning up to 60 s early or late (SLURM2); a lead no
# longer than this leaves the cell no time at all to checkpoint before the kill.
SIGNAL_SLACK_S = 60


def signal_lead_check(host: str, slurm: SlurmConfig) -> Check:
    """The ``signal-lead`` preflight check (SLURM2): the warning signal's lead must fit
    one checkpoint's write (``checkpoint_write_s``: the host's figure, default 60 s;
    nothing on the box measures it yet) plus Slurm's slack (the signal may come up to
    60 s late), else the kill lands mid-write. Failed: a launch is refused unless
    acknowledged by name."""
    lead, write = slurm.signal_lead_s, slurm.checkpoint_write_s
    need = write + SIGNAL_SLACK_S
    sums = (
        f"checkpoint_write_s {write} s + Slurm's slack {SIGNAL_SLACK_S} s "
        f"(it may send the warning up to {SIGNAL_SLACK_S} s late) = {need} s"
    )
    if lead < need:
        return Check(
            "signal-lead",
            False,
            f"signal_lead_s = {lead} on {host} is shorter than {sums}: the kill can land "
            "while the checkpoint is being written (SLURM2)",
            f"set signal_lead_s = {need} or more for {host} (or lower checkpoint_write_s if "
            "a checkpoint writes faster); checkpoint periodically too, and write it "
            "atomically (tmp, fsync, rename: U6)",
        )
    return Check("signal-lead", True, f"signal_lead_s {lead} s ≥ {sums}")


def host_signal_lead_check(host: HostConfig) -> Check | None:
    """``signal_lead_check`` for a host whose scheduler sends a warning signal before its
    time limit (Slurm); None for a host that has none (a box runs until it is stopped)."""
    return None if host.slurm is None else signal_lead_check(host.name, host.slurm)
