"""What a group's pull takes from its other ranks (issue 41, ``pull_ranks = "all"``).

A group is pulled through rank 0 like any host, into ``<results_dir>/<group>/``. With
``pull_ranks = "all"`` each further rank's durable dir is pulled too, from that rank's
own box, into ``<results_dir>/<group>.rank<k>/``: a folder of its own with its own
manifest and records, so the pull, verify and the teardown gate treat it as one more
host (its files are the box's, never mixed into rank 0's).
"""

from __future__ import annotations

from dataclasses import replace

from rgt_tui.domain.config import HostConfig


def rank_pull_name(group: str, rank: int) -> str:
    """``pair.rank1``: the results folder (and pull name) of a group's rank ``rank``."""
    return f"{group}.rank{rank}"


def rank_pull_hosts(group: HostConfig) -> tuple[HostConfig, ...]:
    """The further ranks a group's pull takes (none unless ``pull_ranks = "all"``): each
    the rank's box as it is reached, with the group's pull roots and durable dir, named
    ``<group>.rank<k>``."""
    info = group.group
    if info is None or info.pull_ranks != "all":
        return ()
    return tuple(
        replace(
            box,
            name=rank_pull_name(group.name, rank),
            workdir=group.workdir,
            durable_dir=group.durable_dir,
            pull=group.pull,
            pull_refused=group.pull_refused,
            queue=group.queue,
            run=None,
            teardown=None,
            group=None,
        )
        for rank, box in enumerate(info.members)
        if rank > 0
    )
