"""What this machine holds of a box's files, verified: a pulled folder's records
(``local_records``), the files they prove are here whole (``verified_copies``), where a
group's pull keeps what it took from one of its boxes (``rank_folder``), and what of a
group's folders on a box no verified pull here holds (``unsaved_of_group``).

Why the last: torchrun's c10d rendezvous numbers the workers itself, so the worker that
saves (``rank == 0``) may run on any box of a group, and a group's pull takes rank 0's box
alone unless ``pull_ranks = "all"`` (h501 #1: a rank box's gate opened while the group's
folder on it held a finished cell's only copy). Every folder here that took from the box
counts — its own pull's and each of its groups' for its rank — and only while its copy
still hashes as verified (as the box's own gate re-hashes its folder). What the listing
refuses (a name that is no text, a link out of the folder) is never here: it counts as
unsaved, unless the rules skip it (secrets, rgt-tui's own records).
"""

from __future__ import annotations

import asyncio
import posixpath
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from rgt_tui.agent.secret_paths import skipped_by_rule
from rgt_tui.domain import teardown_gate as g
from rgt_tui.domain.box_identity import BoxIdentity
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.manifest import Manifest, ManifestError, ManifestLink
from rgt_tui.domain.text import printable
from rgt_tui.services.local_copy import check_local_copy
from rgt_tui.services.manifest import take_manifest
from rgt_tui.services.records import host_results_dir, load_manifest, read_json, verification_path
from rgt_tui.services.teardown.events import manifest_event, verification_events
from rgt_tui.transport.base import Transport

# A remote file as the box listed it: (its path on the box, size, mtime).
Listed = tuple[str, int, float]
# A pulled folder's records (``local_records``): its manifest, verification record, and
# why the manifest is unusable.
Records = tuple[Manifest | None, Any, str | None]
# The box's own pulled copy as the gate read it (``local_records``) and re-hashed it in
# this check: reused, not read and hashed again.
OwnCopy = tuple[Records, g.LocalCopyChecked]


def local_records(folder: Path) -> Records:
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


class Copies(NamedTuple):
    """What the last pull into a folder here proves of the box (``verified_copies``)."""

    files: dict[Listed, tuple[str, g.FileFacts]]  # verified: local path and facts, to re-hash
    links: set[str]  # the links it kept, ``path -> target`` as the box names them
    roots: set[str]  # its pull folders, as the box resolved them


def verified_copies(
    folder: Path,
    box: BoxIdentity | None,
    records: Records | None = None,
) -> Copies:
    """Each file the last pull into ``folder`` listed and its verify found here whole, as
    the box listed it, with its local path and facts; the links that pull kept; its pull
    folders. Nothing when nothing usable was pulled, or when that pull was of another box
    than ``box`` (an earlier box of the same name: its records vouch for none of this
    one's files, as the box's own gate holds; review h506). ``records``: the folder's
    records already read."""
    manifest, record, unusable = records or local_records(folder)
    if manifest is None or unusable or box is None or not box.same_box(manifest.identity):
        return Copies({}, set(), set())
    state = g.GateState("")
    for event in (manifest_event(manifest), *verification_events(record, manifest)):
        state = g.apply(state, event)
    files = {
        (manifest.display(e.root, e.path), e.size, e.mtime): (
            local,
            g.FileFacts(e.size, e.mtime, e.sha256 or ""),
        )
        for e in manifest.entries
        if (local := manifest.local_relpath(e.root, e.path)) in state.pulled
    }
    links = {_link_key(manifest, ln) for ln in manifest.links}
    return Copies(files, links, {r.path for r in manifest.roots})


def _link_key(manifest: Manifest, link: ManifestLink) -> str:
    """``<path> -> <target>``, both as the box names them: a target is stored relative to
    its root, and one folder may be listed under two roots (the box's own pull holding
    the group's folder: review h506 #2)."""
    base = manifest.roots[link.root].path if 0 <= link.root < len(manifest.roots) else ""
    target = posixpath.normpath(posixpath.join(base, link.target))
    return f"{manifest.display(link.root, link.path)} -> {target}"


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
    fleet: Fleet,
    box: HostConfig,
    group: HostConfig,
    rank_host: HostConfig,
    transport: Transport,
    own: OwnCopy | None = None,
) -> tuple[tuple[str, ...], str]:
    """What of ``group``'s folders on ``box`` (listed now over ``transport``, as
    ``rank_host``, the group's host for this box's rank) no verified pull here holds, and
    the pull that brings it (``own``: the box's own copy, read and re-hashed by the gate
    in this check). Raises what the listing raises."""
    listing = await take_manifest(rank_host, transport, hash_files=False)
    folders = [host_results_dir(fleet.results_dir, box)] + [
        f
        for other in fleet.groups_of(box.name)
        if (f := rank_folder(fleet.results_dir, other, box.name))
    ]
    # The kept records are read, and the copies re-hashed, off the event loop.
    held, links, roots = await asyncio.to_thread(_local_facts, folders, listing, own)
    roots |= set(box.pull)  # as written too: a box never pulled has no resolved roots
    unsaved = [
        shown
        for e in listing.entries
        if ((shown := listing.display(e.root, e.path)), e.size, e.mtime) not in held
    ]
    # A root that failed whole (the group's folder not made on this box: a rank that
    # saves nothing) holds nothing to save (review h506 #1). A refused entry the box's own
    # verified pull holds, as a file or a link, is here.
    failed = {r.index for r in listing.roots if r.error}
    held_paths = {p for p, _, _ in held} | {k.split(" -> ", 1)[0] for k in links}
    unsaved += [
        f"{shown} ({printable(r.reason, 200)})"
        for r in listing.refused
        if not skipped_by_rule(r.reason)
        and r.root not in failed
        and (shown := listing.display(r.root, r.path) if isinstance(r.root, int) else r.path)
        not in held_paths
    ]
    unsaved += [key for ln in listing.links if (key := _link_key(listing, ln)) not in links]
    folder = rank_folder(fleet.results_dir, group, box.name)
    return tuple(sorted(unsaved)), _fix(group, box, folder, roots, listing)


def _under(path: str, root: str) -> bool:
    """Whether remote folder ``path`` is ``root`` or lies under it (by their text)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def _fix(
    group: HostConfig, box: HostConfig, folder: Path | None, own: set[str], listing: Manifest
) -> str:
    """The pull that brings a group's files on ``box`` here: the group's when it takes
    this rank's; else the box's own when its folders hold the group's; else both ways."""
    name = printable(group.name, 200)
    box_name = printable(box.name, 200)
    if folder is not None:
        return f"pull and verify them: `rgt-tui pull {name}`, then `rgt-tui verify {name}`"
    roots = {r.path for r in listing.roots if r.error is None} | set(group.pull)
    if any(_under(r, o) for r in roots for o in own):
        return (
            f"pull and verify this box: `rgt-tui pull {box_name}`, then `rgt-tui verify {box_name}`"
        )
    return (
        f'pull them: set pull_ranks = "all" in group {name} (its pull takes rank 0\'s box '
        "alone, and torchrun's c10d rendezvous may run the worker that saves on any box), "
        f"then `rgt-tui pull {name}` and `rgt-tui verify {name}`"
    )


def _local_facts(
    folders: Sequence[Path], listing: Manifest, own: OwnCopy | None
) -> tuple[set[Listed], set[str], set[str]]:
    """Of the files ``listing`` names, those a folder here holds verified, of the box
    ``listing`` was taken on, and still hashing as verified (re-hashed now: a record that
    it was pulled is not enough); the links those pulls kept; the pull folders of the first (the box's own, whose records
    and re-hash ``own`` holds when the gate made them in this check). Blocking."""
    wanted = {(listing.display(e.root, e.path), e.size, e.mtime) for e in listing.entries}
    held: set[Listed] = set()
    links: set[str] = set()
    first: set[str] | None = None
    for i, folder in enumerate(folders):
        done = own if i == 0 else None
        files, kept, roots = verified_copies(folder, listing.identity, done[0] if done else None)
        first = roots if first is None else first
        links |= kept
        pick = {k: v for k, v in files.items() if k in wanted and k not in held}
        if not pick:
            continue
        # The gate's re-hash of the box's own copy covers every file of its manifest.
        check = done[1] if done else check_local_copy(folder, pick.values(), time.time())
        spoilt = g.locally_spoilt(check, dict(pick.values()))
        held |= {k for k, (local, _) in pick.items() if local not in spoilt}
    return held, links, first or set()
