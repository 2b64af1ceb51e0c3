"""What this machine holds of a box's files, verified: a pulled folder's records
(``local_records``), the files they prove are here whole (``verified_copies``), where a
group's pull keeps what it took from one of its boxes (``rank_folder``), and the files of
a group's folders on a box that no verified pull here holds (``unsaved_of_group``).

Why the last: torchrun's c10d rendezvous numbers the workers itself, so the worker that
saves (``rank == 0``) may run on any box of a group, and a group's pull takes rank 0's box
alone unless ``pull_ranks = "all"`` (h501 #1: a rank box's gate opened while the group's
folder on it held a finished cell's only copy). A box's own pull counts too: its folders
may be the group's.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from rgt_tui.domain import teardown_gate as g
from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.manifest import Manifest, ManifestError
from rgt_tui.domain.text import printable
from rgt_tui.services.manifest import take_manifest
from rgt_tui.services.records import host_results_dir, load_manifest, read_json, verification_path
from rgt_tui.services.teardown.events import manifest_event, verification_events
from rgt_tui.transport.base import Transport

# A remote file as the box listed it: (its path on the box, size, mtime).
Listed = tuple[str, int, float]


def local_records(folder: Path) -> tuple[Manifest | None, Any, str | None]:
    """The kept manifest and verification record, and why the manifest is unusable."""
    try:
        manifest = load_manifest(folder)
    except ManifestError as exc:
        return None, None, str(exc)
    try:
        record = read_json(verification_path(folder))
    except (ValueError, OSError) as exc:
        record = f"unreadable: {exc}"  # not a dict: verification_events says so
    return manifest, record, None


def verified_copies(folder: Path) -> set[Listed]:
    """Each file the last pull into ``folder`` listed and its verify found here whole,
    as the box listed it; none when nothing usable was pulled or verified."""
    manifest, record, unusable = local_records(folder)
    if manifest is None or unusable:
        return set()
    state = g.GateState("")
    for event in (manifest_event(manifest), *verification_events(record, manifest)):
        state = g.apply(state, event)
    return {
        (manifest.display(e.root, e.path), e.size, e.mtime)
        for e in manifest.entries
        if manifest.local_relpath(e.root, e.path) in state.pulled
    }


def rank_folder(results_dir: Path, group: HostConfig, box: str) -> Path | None:
    """Where a pull of ``group`` keeps what it took from ``box`` (None: it takes nothing
    from it: a rank other than 0 without ``pull_ranks = "all"``)."""
    from rgt_tui.services.pull.ranks import rank_pull_hosts

    info = group.group
    if info is None or box not in info.hosts:
        return None
    rank = info.hosts.index(box)
    if rank == 0:
        return host_results_dir(results_dir, group)
    ranks = rank_pull_hosts(group)
    return host_results_dir(results_dir, ranks[rank - 1]) if ranks else None


async def unsaved_of_group(
    results_dir: Path,
    box: HostConfig,
    group: HostConfig,
    rank_host: HostConfig,
    transport: Transport,
) -> tuple[tuple[str, ...], str]:
    """The files of ``group``'s folders on ``box`` (listed now over ``transport``, as
    ``rank_host``, the group's host for this box's rank) that no verified pull here holds,
    and the pull that brings them. Raises what the listing raises."""
    if group.pull_refused:  # the group's folder is a whole home: its pull is refused
        return (), ""
    listing = await take_manifest(rank_host, transport, hash_files=False)
    folder = rank_folder(results_dir, group, box.name)
    # The kept records are read off the event loop: a manifest may be megabytes.
    held, own = await asyncio.to_thread(_local_facts, results_dir, box, folder)
    unsaved = sorted(
        shown
        for e in listing.entries
        if ((shown := listing.display(e.root, e.path)), e.size, e.mtime) not in held
    )
    return tuple(unsaved), _fix(group, box, folder, own, listing)


def _own_roots(results_dir: Path, box: HostConfig) -> set[str]:
    """The box's own pull folders: as its last pull found them on the box, else as
    written."""
    try:
        manifest = load_manifest(host_results_dir(results_dir, box))
    except ManifestError:
        manifest = None
    found = {r.path for r in manifest.roots} if manifest is not None else set()
    return found | set(box.pull)


def _fix(
    group: HostConfig, box: HostConfig, folder: Path | None, own: set[str], listing: Manifest
) -> str:
    """The pull that brings a group's files on ``box`` here: the group's when it takes
    this rank's; else the box's own when its folders are the group's; else both ways."""
    name = printable(group.name, 200)
    box_name = printable(box.name, 200)
    if folder is not None:
        return f"pull and verify them: `rgt-tui pull {name}`, then `rgt-tui verify {name}`"
    roots = {r.path for r in listing.roots if r.error is None} | set(group.pull)
    if any(r in own for r in roots):
        return (
            f"pull and verify this box: `rgt-tui pull {box_name}`, then `rgt-tui verify {box_name}`"
        )
    return (
        f'pull them: set pull_ranks = "all" in group {name} (its pull takes rank 0\'s box '
        "alone, and torchrun's c10d rendezvous may run the worker that saves on any box), "
        f"then `rgt-tui pull {name}` and `rgt-tui verify {name}`"
    )


def _local_facts(
    results_dir: Path, box: HostConfig, folder: Path | None
) -> tuple[set[Listed], set[str]]:
    """The box's files verified here (by its own pull, and by its group's of its rank),
    and its own pull folders (``_own_roots``). Blocking."""
    held = verified_copies(host_results_dir(results_dir, box))
    if folder is not None:
        held |= verified_copies(folder)
    return held, _own_roots(results_dir, box)
