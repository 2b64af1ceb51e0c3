"""The Slurm warning signal's lead (SLURM2), the ``signal-lead`` preflight check: pure,
so both the launch plan (services.queue.slurm) and preflight (services.preflight) make it."""

from __future__ import annotations

import math
from dataclasses import dataclass

from rgt_tui.domain.at_risk import CheckpointsSeen
from rgt_tui.domain.config import HostConfig, SlurmConfig
from rgt_tui.domain.preflight import Check
from rgt_tui.domain.text import is_digits
from rgt_tui.domain.young_daly import cadence

# Slurm may deliver the --signal warning up to 60 s early or late (SLURM2); a lead no
# longer than this leaves the cell no time at all to checkpoint before the kill.
SIGNAL_SLACK_S = 60


@dataclass(frozen=True)
class ObservedWrite:
    """A checkpoint write time the agent observed on the host's box (the median of the
    running cell's last writes), as recorded by a runtime: ``seen`` says when, as shown."""

    write_s: float
    seen: str  # ``14:02``, ``Nov 27 14:02``: the caller's local time


def median_write_s(seen: CheckpointsSeen | None) -> float | None:
    """The median write time of the checkpoint writes the agent timed; None: none timed."""
    if seen is None or not seen.writes:
        return None
    return cadence(seen.writes, 0.0).write_s  # the one median of write times (young_daly)


def signal_lead_check(
    host: str, slurm: SlurmConfig, observed: ObservedWrite | None = None
) -> Check:
    """The ``signal-lead`` preflight check (SLURM2): the warning signal's lead must fit
    one checkpoint's write plus Slurm's slack (the signal may come up to 60 s late), else
    the kill lands mid-write. The write is the larger of ``checkpoint_write_s`` (the
    host's figure, default 60 s) and the write time last ``observed`` on the box, the
    detail saying which. Failed: a launch is refused unless acknowledged by name."""
    lead, configured = slurm.signal_lead_s, slurm.checkpoint_write_s
    wall = time_seconds(slurm.time)
    if wall is not None and lead >= wall:
        # Sent as the cell starts: a cell that ends on TERM ends at once (hour s18b #5
        # saw TERM in the first second and exit 137); a launch only warned of it.
        return Check(
            "signal-lead",
            False,
            f"signal_lead_s = {lead} on {host} is not shorter than time = {slurm.time} "
            f"({wall} s): Slurm sends the warning signal as each cell starts (SLURM2)",
            f"set signal_lead_s below {wall} for {host} (it must still fit a checkpoint's "
            "write plus Slurm's 60 s slack), or raise time",
        )
    if observed is not None and observed.write_s > configured:
        write = math.ceil(observed.write_s)
        said = f"write {write} s observed {observed.seen} (checkpoint_write_s {configured})"
        faster = "make the checkpoint write faster"
    else:
        write = configured
        others = (
            "none observed yet"
            if observed is None
            else f"observed {math.ceil(observed.write_s)} s at {observed.seen} is shorter"
        )
        said = f"checkpoint_write_s {write} s (configured; {others})"
        faster = "lower checkpoint_write_s if a checkpoint writes faster"
    need = write + SIGNAL_SLACK_S
    sums = (
        f"{said} + Slurm's slack {SIGNAL_SLACK_S} s "
        f"(it may send the warning up to {SIGNAL_SLACK_S} s late) = {need} s"
    )
    if lead < need:
        return Check(
            "signal-lead",
            False,
            f"signal_lead_s = {lead} on {host} is shorter than {sums}: the kill can land "
            "while the checkpoint is being written (SLURM2)",
            f"set signal_lead_s = {need} or more for {host} (or {faster}); checkpoint "
            "periodically too, and write it atomically (tmp, fsync, rename: U6)",
        )
    return Check("signal-lead", True, f"signal_lead_s {lead} s ≥ {sums}")


def host_signal_lead_check(host: HostConfig, observed: ObservedWrite | None = None) -> Check | None:
    """``signal_lead_check`` for a host whose scheduler sends a warning signal before its
    time limit (Slurm); None for a host that has none (a box runs until it is stopped)."""
    return None if host.slurm is None else signal_lead_check(host.name, host.slurm, observed)


def time_seconds(value: str | None) -> int | None:
    """Slurm's ``--time`` in seconds (``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M``,
    ``D-H:M:S``); None when unset or not one of those."""
    if not value:
        return None
    days = 0
    rest = value
    if "-" in value:
        d, _, rest = value.partition("-")
        if not is_digits(d):
            return None
        days = int(d)
    fields = rest.split(":")
    if not all(is_digits(f) for f in fields) or len(fields) > 3:
        return None
    n = [int(f) for f in fields]
    if days:  # D-H, D-H:M, D-H:M:S
        n += [0] * (3 - len(n))
        h, m, s = n
    elif len(n) == 1:  # minutes
        h, m, s = 0, n[0], 0
    elif len(n) == 2:  # minutes:seconds
        h, m, s = 0, n[0], n[1]
    else:
        h, m, s = n
    return days * 86400 + h * 3600 + m * 60 + s
