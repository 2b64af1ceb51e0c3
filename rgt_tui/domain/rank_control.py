"""A group's rank box asked to stop, kill or retry on its own (docs/groups.md): its
records are the group's cells, and the group's verbs act on every rank at once. Asked of
the box alone, the box refused it as "another host entry launched it … keep one entry per
account", which read as a mistake in the fleet file (hours s22b #4, s35 Slurm #3). The TUI
and the command line say this instead. Pure."""

from __future__ import annotations

from rgt_tui.domain.config import Fleet, HostConfig


def rank_control_refusal(fleet: Fleet, host: HostConfig, verb: str) -> tuple[str, str] | None:
    """(message, fix) when ``host`` has no queue of its own and is a rank of a group, so
    ``verb`` (stop, kill, retry) must be asked of the group; None otherwise."""
    if host.queue:
        return None
    rank = fleet.rank_of(host.name)
    if rank is None:
        return None
    group, index = rank
    every = "stops every rank" if verb == "stop" else f"{verb}s it on every rank"
    return (
        f"{host.name} is rank {index} of group {group}: its cells are {group}'s",
        f"{verb} them from {group} (its Queue tab, or rgt-tui queue {verb} {group}), which {every}",
    )
