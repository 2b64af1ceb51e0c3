"""Deleting what the disk audit listed, only when nothing is lost (principles 5 and 9).

``plan_delete`` decides, ``delete_planned`` deletes. The rules:

- never a running cell's output folder, nor one that holds it: the queue is read again
  right before the delete (``services.disk.running``); when it cannot be read, no
  folder under the durable folder;
- only an entry of the audit just taken can be deleted (a superseded checkpoint, a
  Hugging Face model folder, one of the largest folders); a path holding a pull root is
  never deleted, and outside the pull roots only a Hugging Face model folder is;
- anything under a pull root needs every file in it pulled AND verified: listed in the
  kept manifest of this very box, unchanged on the box since (a re-scan now, by size and
  mtime), reported good by the verification of that manifest, and still on this disk
  with the manifest's SHA-256 (re-hashed now, ``services.local_copy``). Otherwise the
  refusal names each file that would be lost (not pulled; pulled but not verified;
  changed since; the local copy gone);
- a superseded checkpoint also needs the newer checkpoint it was superseded by to pass
  the same check at that moment.

The user confirms by typing the path or its short name (``Reclaimable.short``) — the
caller asks. The box then re-checks, right before removing, that the path is still what
the audit saw: not a link, the same type, the same device and inode, no link on the way;
it renames the path aside and checks what it renamed before ``rm`` runs
(``scripts/disk_ctl.sh delete``). ``rm`` never follows a link: a link is removed, never
its target.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path

from rgt_tui.domain.artifacts import HASH_ONLY, VERIFIED, is_leftover
from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.gate_events import FileFacts
from rgt_tui.domain.manifest import Manifest, ManifestError
from rgt_tui.domain.text import is_digits, printable
from rgt_tui.services.disk.audit import (
    DiskAudit,
    DiskError,
    Reclaimable,
    disk_refusal,
    record_of,
    run_disk_ctl,
    with_running,
)
from rgt_tui.services.disk.offer import OUTSIDE, UNREAD, not_offered, under
from rgt_tui.services.disk.running import read_running
from rgt_tui.services.local_copy import check_local_copy
from rgt_tui.services.manifest import take_manifest
from rgt_tui.services.reclaimed import ReclaimedFile, record_reclaimed
from rgt_tui.services.records import host_results_dir, load_manifest, load_verification
from rgt_tui.transport.base import Transport

DELETE_TIMEOUT_S = 600.0  # rm of a big cache folder can take a while
LOST_SHOWN = 20  # lines of a refusal; the rest is counted


@dataclass(frozen=True)
class DeletePlan:
    """A delete that passed every check: what, and why it is allowed."""

    host: str
    target: Reclaimable
    why: str  # "a Hugging Face model outside the pull roots", "3 files pulled and verified"
    # The host's results folder, the box's id and the verified files the delete leaves
    # with one copy, here: recorded before the delete (``services.reclaimed``).
    folder: Path | None = None
    box_id: str | None = None
    files: tuple[ReclaimedFile, ...] = ()
    # A folder under a pull root: the box removes only ``files`` (as they were checked)
    # and the folders left empty, never what was written there since (hour s20a #1).
    listed: bool = False


async def plan_delete(
    host: HostConfig, transport: Transport, results_dir: Path, audit: DiskAudit, path: str
) -> DeletePlan:
    """Check that deleting ``path`` (or an entry's short name) loses nothing; DiskError
    naming what would be lost otherwise."""
    target = audit.find(path)
    if target is None:
        raise DiskError(
            host.name,
            f"{printable(path)} is not in the disk audit: rgt-tui deletes only what "
            f"`rgt-tui disk {host.name}` lists (superseded checkpoints, Hugging Face models, "
            "folders under a pull root)",
        )
    shown = printable(target.path)
    await transport.connect()
    # The queue now, not as the audit saw it: a cell may have started since.
    audit = with_running(audit, *await read_running(host, transport))
    refused = not_offered(audit, target)  # the rule the disk screen shows beside it
    if refused == OUTSIDE:
        raise DiskError(
            host.name,
            f"refused: {shown} is {OUTSIDE} and is not a Hugging Face model: "
            "rgt-tui deletes nothing else (delete it yourself if you are sure)",
        )
    if refused == UNREAD:
        raise DiskError(
            host.name, f"refused: {shown} is not offered: {refused} ({audit.queue_unread})"
        )
    if refused is not None:
        raise DiskError(host.name, f"refused: {shown} is not offered: {refused}")
    if target.kind == "hf-model" and not any(under(target.path, r) for r in audit.pull_roots):
        return DeletePlan(host.name, target, "a Hugging Face model outside the pull folders")
    also = (target.superseded_by,) if target.superseded_by else ()
    checked, lost, box_id, files = await _pulled_and_verified(
        host, transport, results_dir, target.path, also
    )
    if lost:
        raise DiskError(
            host.name,
            f"refused: deleting {shown} would lose {len(lost)} "
            f"{'file' if len(lost) == 1 else 'files'} not safely pulled and verified "
            f"— run `rgt-tui pull {host.name}` and `rgt-tui verify {host.name}` first",
            _shown(lost),
        )
    # A superseded checkpoint is one file, counted with the newer one that stands for it
    # ("2 files under it" of a file: hour s19a #11); the box changes, and so the gate:
    # said before the delete.
    if target.superseded_by:
        what = f"it and {printable(target.superseded_by)}, which supersedes it, are"
    else:
        what = f"{checked} files under it"
    return DeletePlan(
        host.name,
        target,
        f"{what} pulled and verified; deleting it changes the box, so pull and verify again before teardown",
        host_results_dir(results_dir, host),
        box_id,
        # A superseded checkpoint's successor stays on the box: only the deleted files.
        tuple(f for f in files if under(f.remote, target.path)),
        listed=target.type == "d",
    )


async def delete_planned(transport: Transport, plan: DeletePlan) -> str:
    """Delete the planned path on the box, which re-checks it first; the box's answer."""
    t = plan.target
    if plan.files and plan.folder is not None and plan.box_id is not None:
        # Before the delete: after it, this machine's copy is the only one, and verify and
        # the gate must know (a delete that then fails leaves entries the manifest outranks).
        try:
            # Not a *.tmp a crash left: no result, and recorded, verify then asked to keep
            # the copy here that it had just said to delete (s38 disk hour #2).
            results = [f for f in plan.files if not is_leftover(f.local)]
            await asyncio.to_thread(record_reclaimed, plan.folder, plan.box_id, results)
        except OSError as exc:
            raise DiskError(
                plan.host,
                f"nothing deleted: could not record which files will have their only copy "
                f"here ({exc}) — free space in {plan.folder} and try again",
            ) from None
    await transport.connect()
    stdin = t.path + "\0"
    verb: tuple[str | int, ...] = (t.dev, t.ino, t.type)
    if plan.listed:
        verb += ("listed",)
        stdin += "".join(
            f"{f.size}\t{int(f.mtime)}\t{f.remote[len(t.path.rstrip('/')) + 1 :]}\0"
            for f in plan.files
        )
    result = await run_disk_ctl(transport, "delete", *verb, input=stdin, timeout=DELETE_TIMEOUT_S)
    error = disk_refusal(plan.host, result, "the delete")
    if error is not None:
        raise error
    return _deleted_line(t.path, result.stdout)


def _deleted_line(path: str, out: str) -> str:
    """``deleted PATH``, and what the box kept: files written there since the check."""
    kept = [r.split("\t", 1)[1] for r in out.split("\0") if r.startswith("kept\t")]
    count = next((r.split("\t", 1)[1] for r in out.split("\0") if r.startswith("keptcount\t")), "")
    if not kept:
        return f"deleted {printable(path)}"
    n = int(count) if is_digits(count.strip()) else len(kept)
    shown = ", ".join(printable(k, 200) for k in kept[:5]) + (" …" if n > 5 else "")
    return (
        f"deleted what was pulled and verified under {printable(path)}; KEPT {n} "
        f"{'file' if n == 1 else 'files'} written there since the check ({shown}) — "
        "not pulled yet: pull and verify again"
    )


async def _pulled_and_verified(
    host: HostConfig, transport: Transport, results_dir: Path, path: str, also: tuple[str, ...]
) -> tuple[int, list[str], str | None, list[ReclaimedFile]]:
    """How many files under ``path`` (and the files ``also``) are pulled and verified
    now, a line for each that is not, the box's id, and the files as a reclaim records
    them."""
    folder = host_results_dir(results_dir, host)
    try:
        kept = await asyncio.to_thread(load_manifest, folder)
    except (ManifestError, OSError) as exc:
        raise DiskError(host.name, f"the kept manifest in {folder} is unreadable: {exc}") from None
    record = await asyncio.to_thread(load_verification, folder)
    await transport.connect()
    try:
        now = await take_manifest(host, transport, hash_files=False)
    except ManifestError as exc:
        raise DiskError(host.name, f"could not re-scan the pull roots: {exc}") from None
    wanted = [e for e in now.entries if _wanted(now.display(e.root, e.path), path, also)]
    lost = [
        f"not pulled ({r.reason}): {printable(now.display(r.root, r.path))}"
        for r in now.refused
        if under(now.display(r.root, r.path), path)
    ]
    for name in also:  # the newer checkpoint must still be there, not just its record
        if not any(now.display(e.root, e.path) == name for e in now.entries):
            lost.append(f"the newer checkpoint is gone from the box: {printable(name)}")
    if kept is None:
        missed = [f"not pulled: {printable(now.display(e.root, e.path))}" for e in wanted]
        return 0, lost + missed, None, []
    same = now.identity is not None and now.identity.same_box(kept.identity)
    if not same:
        lost.append(f"the pulled copy in {folder} is of another box than this one")
    good = _good_checks(record, kept)
    failed = _failed_checks(record, kept)
    by_remote = {kept.display(e.root, e.path): e for e in kept.entries}
    rehash: list[tuple[str, FileFacts]] = []
    files: list[ReclaimedFile] = []
    for e in wanted:
        remote = now.display(e.root, e.path)
        old = by_remote.get(remote) if same else None
        shown = printable(remote)
        if old is None:
            lost.append(f"not pulled: {shown}")
        elif (old.size, old.mtime) != (e.size, e.mtime):
            lost.append(f"changed on the box since the pull: {shown}")
        elif old.sha256 is not None and (why := failed.get(remote)) is not None:
            # Verify read it and it failed: a pull and verify again give the same verdict
            # (h612 #7: "run pull and verify first" for a corrupt checkpoint, forever).
            lost.append(
                f"failed verify ({why}): {shown} — its copy here is the box's bytes, so pulling "
                "and verifying again changes nothing; delete it on the box yourself if you "
                "mean to lose it"
            )
        elif old.sha256 is None or good.get(remote, ("", ""))[0] != old.sha256:
            lost.append(f"pulled but not verified: {shown}")
        else:
            rel = kept.local_relpath(old.root, old.path)
            rehash.append((rel, FileFacts(old.size, old.mtime, old.sha256)))
            status = VERIFIED if good[remote][1] == VERIFIED else HASH_ONLY
            files.append(ReclaimedFile(rel, remote, old.size, old.mtime, old.sha256, status))
    local = await asyncio.to_thread(check_local_copy, folder, rehash, time.time())
    lost += [f"the pulled copy is missing here: {printable(p)}" for p in local.missing]
    lost += [f"the pulled copy changed here: {printable(p)}" for p in local.changed]
    return local.matched, lost, kept.box_id, files


def _wanted(remote: str, path: str, also: tuple[str, ...]) -> bool:
    return under(remote, path) or remote in also


def _good_checks(record: dict | None, manifest: Manifest) -> dict[str, tuple[str, str]]:
    """Box path → (SHA-256, verify's status) of each file the verification of
    ``manifest`` found good."""
    if not record_of(record, manifest):
        return {}
    assert record is not None
    good = {}
    for c in record.get("checks") or []:
        if isinstance(c, dict) and c.get("ok") is True and isinstance(c.get("sha256"), str):
            good[str(c.get("remote"))] = (c["sha256"], str(c.get("status")))
    return good


def _failed_checks(record: dict | None, manifest: Manifest) -> dict[str, str]:
    """Box path → "corrupt" for each file the verification of ``manifest`` read whole at
    the manifest's hash and found corrupt: a file a new pull and verify would find bad
    again."""
    if not record_of(record, manifest):
        return {}
    assert record is not None
    hashes = {manifest.display(e.root, e.path): e.sha256 for e in manifest.entries}
    failed = {}
    for c in record.get("checks") or []:
        if not isinstance(c, dict) or c.get("ok") is not False:
            continue
        remote, sha = str(c.get("remote")), c.get("sha256")
        # Corrupt only: "not-verified" (no torch here, a timeout) and "unsafe" (a class
        # to allow) are settled by another verify (review h620 #3).
        if c.get("status") == "corrupt" and isinstance(sha, str) and sha == hashes.get(remote):
            failed[remote] = "corrupt"
    return failed


def _shown(lost: list[str]) -> tuple[str, ...]:
    if len(lost) <= LOST_SHOWN:
        return tuple(lost)
    return (*lost[:LOST_SHOWN], f"… and {len(lost) - LOST_SHOWN} more")
