"""A running cell's newest checkpoint that is pulled and verified here, as the records say
(issue 40: work at risk, "41m ago verified here").

The resume move (``services.queue.resume.cell_files``) re-hashes every copy before it
pushes one; a pane that shows the age of the newest verified checkpoint on every sample
must not. This reads the last pull's manifest and the verification of that very manifest
only (no file is hashed), and only when those two records changed (``signature``: two
stats), so the UI asks often and pays once per pull or verify.

Blocking (it reads the manifest): call ``newest_verified`` in a thread.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from rgt_tui.domain.artifacts import GOOD_STATUSES
from rgt_tui.domain.checkpoints import is_checkpoint, recency
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.manifest import Manifest, ManifestError, verified_here
from rgt_tui.domain.preemption import Checkpoint
from rgt_tui.domain.roster import output_prefixes
from rgt_tui.services.queue.resumed_record import RECORD_FILE, resumed_from
from rgt_tui.services.queue.retried import record_path, set_aside_since
from rgt_tui.services.records import (
    fleet_host_dir,
    load_manifest,
    load_verification,
    manifest_path,
    records_dir,
    verification_path,
)


def file_stamp(path: Path | None) -> tuple[float, int] | None:
    """(mtime, size) of ``path``: what changes when it is written; None when it is
    absent, unreadable or not given."""
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime, st.st_size)


def signature(fleet: Fleet, host: HostConfig) -> tuple[object, ...]:
    """What changes when the host's pull, verification, retry or resume records change
    (cheap): a retry makes the copy pulled before it no checkpoint of the cell
    (``retried``), and the pane kept its "verified here" age until the next pull; a resume
    move brings a cell whose checkpoint is another host's copy (``resumed_record``)."""
    folder = fleet_host_dir(fleet, host)
    resumed = records_dir(folder) / RECORD_FILE
    return tuple(
        file_stamp(p)
        for p in (manifest_path(folder), verification_path(folder), record_path(folder), resumed)
    )


def _this_attempts_checks(
    fleet: Fleet, host: HostConfig, cell: str
) -> tuple[Path, Manifest, list[dict]] | None:
    """The host's folder, the manifest pulled last and its verification's checks, when
    that verification is of that manifest and no retry set ``cell``'s attempt aside
    since the pull; None otherwise, or when the records cannot be read."""
    folder = fleet_host_dir(fleet, host)
    try:
        manifest = load_manifest(folder)
        record = load_verification(folder)
    except (ManifestError, OSError, ValueError):
        return None
    if manifest is None or not isinstance(record, dict):
        return None
    if not verified_here(record.get("manifest"), manifest):
        return None  # verified an older pull: nothing of this one is vouched for
    if set_aside_since(folder, cell, manifest.taken_at):
        return None  # pulled before a retry set that attempt aside: not this attempt's
    checks = [
        c
        for c in record.get("checks") or ()
        if isinstance(c, dict) and isinstance(c.get("path"), str)
    ]
    return folder, manifest, checks


def failed_verify(fleet: Fleet, host: HostConfig, cell: str, rel: str) -> str | None:
    """The status (``corrupt``, ``unsafe``, …) the last verify gave ``cell``'s checkpoint
    ``rel`` (relative to its {out}) when it did not pass; None when it passed, was not
    pulled or verified, or the records cannot be read."""
    found = _this_attempts_checks(fleet, host, cell)
    if found is None:
        return None
    _, manifest, checks = found
    paths = {f"{prefix}/{rel}" for prefix in output_prefixes(manifest, host.durable_dir, cell)}
    for check in checks:
        status = check.get("status")
        if check["path"] in paths and isinstance(status, str) and status not in GOOD_STATUSES:
            return status
    return None


def newest_failed(fleet: Fleet, host: HostConfig, cell: str) -> tuple[str, str] | None:
    """``cell``'s newest pulled checkpoint (relative to its {out}) and its status, when
    the last verify (of the manifest pulled last) did not pass it: what a relaunch of
    the cell would resume from and fail on (hour s24c #1). None otherwise."""
    found = _this_attempts_checks(fleet, host, cell)
    if found is None:
        return None
    _, manifest, checks = found
    statuses = {c["path"]: c.get("status") for c in checks}
    prefixes = output_prefixes(manifest, host.durable_dir, cell)
    newest: tuple[tuple[float, int, str], str, str] | None = None
    for entry in manifest.entries:
        local = manifest.local_relpath(entry.root, entry.path)
        prefix = next((p for p in prefixes if local.startswith(p + "/")), None)
        if prefix is None or not is_checkpoint(local):
            continue
        if newest is None or recency(entry.mtime, local) > newest[0]:
            newest = (recency(entry.mtime, local), local, local[len(prefix) + 1 :])
    if newest is None:
        return None
    status = statuses.get(newest[1])
    if not isinstance(status, str) or status in GOOD_STATUSES:
        return None
    return newest[2], status


def newest_verified(
    fleet: Fleet, host: HostConfig, cell: str, *, resumed_from_origin: bool = True
) -> Checkpoint | None:
    """``cell``'s newest checkpoint whose last verification (of the manifest pulled
    last) passed it; None when there is none or the records cannot be read. Without one
    of its run on ``host``, that of the host whose verified copy a resume move pushed
    to bring it here (``from_host`` set): the run started from it, so it is what a
    preemption falls back to (the pane read "none verified here": s44 note). The
    records only, as ``resume.earlier_hop`` decides with a re-hash."""
    best = _newest_verified(fleet, host, cell)
    if best is not None or not resumed_from_origin:
        return best
    origin = resumed_from(fleet, host.name, cell)
    if origin is None or origin == host.name or origin not in {h.name for h in fleet.hosts}:
        return None
    if set_aside_since(fleet_host_dir(fleet, host), cell, 0.0):
        return None  # a retry here asked for a fresh start: not its base any more
    base = _newest_verified(fleet, fleet.host(origin), cell)
    return replace(base, from_host=origin) if base is not None else None


def _newest_verified(fleet: Fleet, host: HostConfig, cell: str) -> Checkpoint | None:
    found = _this_attempts_checks(fleet, host, cell)
    if found is None:
        return None
    folder, manifest, checks = found
    good = {c["path"]: c.get("sha256") for c in checks if c.get("status") in GOOD_STATUSES}
    # A damaged checkpoint's earlier copy that loads (verify's ``earlier``): a resume may
    # start from it (services.queue.resume), so it is not "no verified checkpoint".
    earlier = {c["path"]: c["earlier"] for c in checks if isinstance(c.get("earlier"), dict)}
    prefixes = output_prefixes(manifest, host.durable_dir, cell)
    best: Checkpoint | None = None
    for entry in manifest.entries:
        local = manifest.local_relpath(entry.root, entry.path)
        prefix = next((p for p in prefixes if local.startswith(p + "/")), None)
        if prefix is None or not is_checkpoint(local):
            continue
        rel = local[len(prefix) + 1 :]
        found = None
        if local in good and good[local] in (None, entry.sha256):
            found = Checkpoint(rel, entry.mtime, entry.size)
        elif local in earlier:
            found = _earlier(folder, rel, earlier[local])
        if found is not None and (
            best is None or recency(found.mtime, rel) > recency(best.mtime, best.path)
        ):
            best = found
    return best


def _earlier(folder: Path, rel: str, earlier: dict) -> Checkpoint | None:
    """The earlier copy verify loaded, dated by its pull (this machine's clock: when it
    was written on the box is not recorded); None when it is gone."""
    size = earlier.get("size")
    path = earlier.get("path")
    if not isinstance(size, int) or not isinstance(path, str):
        return None
    try:
        return Checkpoint(rel, os.lstat(folder / path).st_mtime, size)
    except OSError:
        return None
