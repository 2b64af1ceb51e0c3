"""Stage 2, plan: what each manifest file needs, and whether the local disk can take it.

Rules kept here:

- A file counts as pulled only when its local SHA-256 and size equal the manifest's
  (``skip``).
- Nothing the user owns is deleted or overwritten. A local file that differs from the
  box's copy is replaced only when rgt-tui wrote it and it is unchanged since (its hash
  is still the one in ``pulled.json``); even then the old copy is moved to
  ``.rgt/replaced/``, never deleted. Anything else in the way is a conflict, named.
- Parts (``.rgt/parts/<path>.part``) are rgt-tui's own: one is resumed from its size, or
  restarted when it cannot belong to the manifest's version of the file. A name that fits
  here only without the suffix gets a shortened part (and set-aside) name (``fitted``).
- Free bytes and inodes must cover what remains plus a margin before anything moves.

Everything here blocks; the pull calls it through ``asyncio.to_thread``.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from rgt_tui.domain.manifest import Manifest, ManifestEntry
from rgt_tui.fsutil import hash_fd
from rgt_tui.services.pull.local_tree import HostTree, LocalConflict
from rgt_tui.services.pull.types import NotEnoughInodes, NotEnoughSpace, disk_of
from rgt_tui.services.records import (
    PARTS_DIR,
    RECORDS_DIR,
    REPLACED_DIR,
    atomic_write_json,
    pulled_path,
    read_json,
)

# 2: files are vouched for by inode and ctime too (version 1 records, by size and mtime
# alone, are dropped: every local file is hashed once again).
PULLED_VERSION = 2


@dataclass(frozen=True)
class FilePlan:
    """What to do with one manifest entry."""

    entry: ManifestEntry
    local: str  # relative to the host folder
    part: str  # relative path of its part file
    action: str  # skip | pull | replace | conflict
    resume_from: int = 0
    local_sha256: str | None = None  # of the file already here, when there is one
    note: str = ""
    # Made from the walk's listing (early.py), before the box's hash: it counts only
    # once the complete manifest agrees (copy._checked).
    early: bool = False
    set_aside: str | None = None  # where the older copy goes when this plan replaces it
    # A link is where it lands, one rgt-tui made (the last pull's box link): replaced.
    over_our_link: bool = False
    # A part kept from a cut pull was thrown away: the box's file changed since. The file
    # comes again whole, said on an AGAIN line (run.py), never silently (h616 #2).
    part_dropped: bool = False


@dataclass(frozen=True)
class PullPlan:
    """The plan for every entry of a manifest."""

    files: tuple[FilePlan, ...]

    @property
    def to_pull(self) -> tuple[FilePlan, ...]:
        return tuple(f for f in self.files if f.action in ("pull", "replace"))

    @property
    def remaining_bytes(self) -> int:
        return sum(f.entry.size - f.resume_from for f in self.to_pull)


_STAMP_KEYS = ("size", "mtime_ns", "ctime_ns", "ino")


def _stamp(st: os.stat_result) -> dict[str, int]:
    """What tells a local file unchanged since it was hashed (see ``vouches``)."""
    return {
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ctime_ns": st.st_ctime_ns,
        "ino": st.st_ino,
    }


PULLED_LOG = "pulled.log"  # beside pulled.json


class PulledRecord:
    """``.rgt/pulled.json``: every file pulled so far, with the hash it was checked against.

    Each file is also appended to ``.rgt/pulled.log`` as it is recorded (loaded on top of
    the JSON, removed once the JSON is saved): a pull killed outright (``kill -9``, an OOM
    kill, a reboot) saves no JSON, and the next pull took the files it had installed for
    someone else's, a CONFLICT for good, while a checkpoint on the box moved on (s36 watch
    hour #1)."""

    def __init__(self, files: dict[str, dict] | None = None, log: Path | None = None) -> None:
        self.files: dict[str, dict] = files or {}
        self._lock = threading.Lock()  # files are recorded from worker threads
        self._log = log  # None: nothing appended (a record not loaded from a folder)
        self._fh: TextIO | None = None

    @classmethod
    def load(cls, host_dir: Path) -> PulledRecord:
        """The record kept with the host's results (empty when missing or unreadable),
        with what the log holds since it was last saved."""
        try:
            data = read_json(pulled_path(host_dir))
        except ValueError:
            data = None  # unreadable: every local file is simply hashed again
        ours = isinstance(data, dict) and data.get("version") == PULLED_VERSION
        got = data.get("files") if ours else None  # type: ignore[union-attr]
        files = dict(got) if isinstance(got, dict) else {}
        log = pulled_path(host_dir).with_name(PULLED_LOG)
        _replay(log, files)
        return cls(files, log)

    def put(self, rel: str, sha256: str, st: os.stat_result) -> None:
        with self._lock:
            self.files[rel] = {"sha256": sha256, **_stamp(st)}
            self._append({"rel": rel, **self.files[rel]})

    def forget(self, rel: str) -> None:
        """Vouch no more for ``rel``: the next pull hashes it again."""
        with self._lock:
            self.files.pop(rel, None)
            self._append({"rel": rel, "forget": True})

    def _append(self, line: dict) -> None:
        """One line of the log (under the lock). Written through to the kernel, so a
        killed process leaves it; a machine crash may not (the next pull then hashes
        the file, and a copy it cannot vouch for is a CONFLICT, as before)."""
        if self._log is None:
            return
        try:  # kept open for the pull: one write a file (line-buffered), not an open
            if self._fh is None:
                self._fh = self._log.open("a", encoding="utf-8", buffering=1)
            self._fh.write(json.dumps(line, separators=(",", ":")) + "\n")
        except OSError:  # no log (a full disk): the JSON still comes
            self._close_log()

    def _close_log(self) -> None:
        if self._fh is not None:
            with contextlib.suppress(OSError):
                self._fh.close()
            self._fh = None

    def vouches(self, rel: str, st: os.stat_result) -> str | None:
        """The recorded hash of ``rel`` when the file is as rgt-tui left it.

        Size and mtime alone are not enough: an edit in place keeps the size, and anyone
        can set the mtime back. The ctime cannot be set back (any write, chmod or utime
        moves it), so a file with the same inode, size, mtime and ctime is unchanged.
        """
        rec = self.files.get(rel)
        if isinstance(rec, dict) and {k: rec.get(k) for k in _STAMP_KEYS} == _stamp(st):
            return rec.get("sha256")
        return None

    def save(self, host_dir: Path) -> None:
        """Write the record atomically; the log it now holds goes."""
        with self._lock:  # no line appended between the JSON and the log's removal
            files = dict(self.files)
            atomic_write_json(pulled_path(host_dir), {"version": PULLED_VERSION, "files": files})
            if self._log is not None:
                self._close_log()
                self._log.unlink(missing_ok=True)


def _replay(log: Path, files: dict[str, dict]) -> None:
    """The log's lines onto ``files``, in order (a torn last line, or one that is not
    ours, is skipped: the file it named is then hashed again)."""
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    for line in text.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        rel = rec.get("rel") if isinstance(rec, dict) else None
        if not isinstance(rel, str):
            continue
        if rec.get("forget"):
            files.pop(rel, None)
        elif isinstance(rec.get("sha256"), str):
            files[rel] = {k: v for k, v in rec.items() if k != "rel"}


def part_path(rel: str, name_max: int) -> str:
    """Where ``rel`` is written until it is checked: under ``.rgt/parts/``, where no file
    from the box can land (the manifest refuses paths into ``.rgt``)."""
    return f"{PARTS_DIR}/{fitted(rel, '.part', name_max)}"


def set_aside_path(rel: str, local_sha256: str | None, name_max: int) -> str:
    """Where rgt-tui's older copy of ``rel`` goes when the box's changed copy replaces it."""
    suffix = f".{(local_sha256 or 'old')[:12]}"
    return f"{RECORDS_DIR}/{REPLACED_DIR}/{fitted(rel, suffix, name_max)}"


def fitted(rel: str, suffix: str, name_max: int) -> str:
    """``rel`` with ``suffix`` on its last name, which is shortened when the whole would
    not fit in ``name_max`` bytes (a name the box may have, which fits here only as it
    is): its start, a hash of the whole and the suffix, then ``~``. No name so made is
    another's: a name with the suffix as is ends in the suffix, never in ``~``."""
    folder, _, name = rel.rpartition("/")
    whole = name + suffix
    if len(whole.encode("utf-8")) <= name_max:
        return f"{folder}/{whole}" if folder else whole
    tag = f"~{hashlib.sha256(whole.encode('utf-8')).hexdigest()[:24]}{suffix}~"
    room = max(0, name_max - len(tag.encode("utf-8")))
    start = name.encode("utf-8")[:room].decode("utf-8", "ignore")  # whole characters only
    short = start + tag
    return f"{folder}/{short}" if folder else short


def earlier_entries(previous: Manifest | None) -> dict[tuple[str, str], ManifestEntry]:
    """The previous manifest's entries by (root as resolved on the box, path): what a
    part left by an older pull was started on."""
    if previous is None:
        return {}
    return {
        (previous.roots[e.root].path, e.path): e
        for e in previous.entries
        if e.root < len(previous.roots)
    }


def links_made(previous: Manifest | None) -> frozenset[str]:
    """The local paths of the box links the last pull made (its manifest's links): a
    link anywhere else here is the user's, never replaced by a pull."""
    if previous is None:
        return frozenset()
    return frozenset(
        previous.local_relpath(ln.root, ln.path)
        for ln in previous.links
        if ln.root < len(previous.roots)
    )


class LinksAbove:
    """The first folder of a path that is a link here (None: none is), looked at once per
    folder in one plan: a link where a folder must go is replaced by a folder when the
    file lands, so one the user made (``results/box1/ckpt -> /mnt/big``) must stop the
    plan first (hour s34: the pull would have made a folder there, on the small disk)."""

    def __init__(self, tree: HostTree) -> None:
        self.tree = tree
        self.found: dict[str, str | None] = {"": None}

    def of(self, rel: str) -> str | None:
        return self._folder(rel.rpartition("/")[0])

    def _folder(self, folder: str) -> str | None:
        if folder in self.found:
            return self.found[folder]
        link = self._folder(folder.rpartition("/")[0])
        if link is None:
            try:
                st = self.tree.lstat(folder)  # every folder above it is a real one
            except (LocalConflict, OSError):  # a file in the way: the file's own plan says
                st = None
            link = folder if st is not None and stat.S_ISLNK(st.st_mode) else None
        self.found[folder] = link
        return link


def plan_pull(
    tree: HostTree, manifest: Manifest, previous: Manifest | None, record: PulledRecord
) -> PullPlan:
    """Decide, file by file, what the pull must do (hashing local files rgt-tui cannot
    vouch for)."""
    before = earlier_entries(previous)
    ours = links_made(previous)
    above = LinksAbove(tree)
    plans = []
    for entry in manifest.entries:
        rel = manifest.local_relpath(entry.root, entry.path)
        earlier = before.get((manifest.roots[entry.root].path, entry.path))
        link = above.of(rel)
        if link is not None and link not in ours:
            note = f"{link} is a link rgt-tui did not make, where a folder must go; move it away and re-run"
            part = part_path(rel, tree.name_max)
            plans.append(FilePlan(entry, rel, part, "conflict", note=note))
            continue
        plans.append(_plan_one(tree, entry, rel, record, earlier, rel in ours))
    return PullPlan(tuple(plans))


def _plan_one(
    tree: HostTree,
    entry: ManifestEntry,
    rel: str,
    record: PulledRecord,
    earlier: ManifestEntry | None,
    link_ours: bool = False,
) -> FilePlan:
    part = part_path(rel, tree.name_max)
    try:
        st = tree.lstat(rel)
    except LocalConflict as exc:
        return FilePlan(entry, rel, part, "conflict", note=exc.told)
    except OSError as exc:
        if exc.errno != errno.ENAMETOOLONG:
            raise
        note = "its name is too long for this file system: it cannot land here"
        return FilePlan(entry, rel, part, "conflict", note=note)
    action, local_sha, note = "pull", None, ""
    if st is not None and stat.S_ISDIR(st.st_mode):
        return FilePlan(
            entry, rel, part, "conflict", note="a folder is in the way; move it away and re-run"
        )
    if st is not None and stat.S_ISLNK(st.st_mode) and not link_ours:
        # The user's link (to a checkpoint kept elsewhere, say): never replaced unasked
        # (hour s34 CLI #4: it became a regular file, with no copy kept and no word).
        note = "a link is in the way and rgt-tui did not make it; move it away and re-run"
        return FilePlan(entry, rel, part, "conflict", note=note)
    if st is not None and stat.S_ISREG(st.st_mode):
        local_sha = record.vouches(rel, st)
        trusted = local_sha is not None
        if not trusted:
            fd = tree.open_read(rel)
            try:
                local_sha = hash_fd(fd).hexdigest()
            finally:
                os.close(fd)
        # The size too: a box that lists its file's true hash at another size (a lie, or
        # a scan gone wrong) had it "already here", and verify then blamed the good copy
        # here for the box's size (h616 #1). Pulled, the copy's own size and hash checks
        # name the box's listing.
        if local_sha == entry.sha256 and st.st_size == entry.size:
            if not trusted:
                record.put(rel, local_sha, st)
            tree.remove(part)  # a part left by an interrupted pull is now useless
            return FilePlan(entry, rel, part, "skip", local_sha256=local_sha)
        # Ours: recorded, or byte for byte the box's file as the last manifest listed it
        # (a pull killed outright between a file's rename into place and its record's
        # line left it unrecorded: CONFLICT for good, a CI run on a loaded machine saw).
        # Either way it is set aside, never deleted.
        recorded = record.files.get(rel, {}).get("sha256") == local_sha
        if not recorded and (earlier is None or earlier.sha256 != local_sha):
            return FilePlan(
                entry, rel, part, "conflict", local_sha256=local_sha,
                note="a different local file is in the way and rgt-tui did not write it "
                "(or it was edited since); move it away and re-run",
            )  # fmt: skip
        action, note = "replace", "changed on the box; the older copy goes to .rgt/replaced/"
    # (A link here now is one the last pull made from the box's: the file replaces it,
    # its target untouched.)
    dropped = False
    try:
        resume, dropped = _resumable(tree, part, entry, earlier)
        grew = earlier is not None and earlier.growing and st is not None
        if action == "replace" and grew and not resume and st.st_size < entry.size:  # type: ignore[union-attr]
            # The last pull took it while it was written (a log): likely the start of
            # this one. Only the rest crosses the wire (the GROWING note promises it); the
            # hash of the whole decides, and a file rewritten instead is pulled again.
            try:
                resume = tree.seed_part(rel, part)
            except OSError:  # the copy here unreadable, or no room for it: from zero
                tree.remove(part)
                resume = 0
    except LocalConflict:  # an old part of ours where this part's folder goes: the copy says
        resume = 0
    aside = set_aside_path(rel, local_sha, tree.name_max) if action == "replace" else None
    over = st is not None and stat.S_ISLNK(st.st_mode)
    return FilePlan(
        entry, rel, part, action, resume, local_sha, note, set_aside=aside, over_our_link=over,
        part_dropped=dropped and not resume,
    )  # fmt: skip


def _resumable(
    tree: HostTree, part: str, entry: ManifestEntry, earlier: ManifestEntry | None
) -> tuple[int, bool]:
    """Bytes of the part worth keeping: all of them, unless they cannot be this version;
    and whether a kept part was thrown away for that (the box's file changed since)."""
    st = tree.lstat(part)
    if st is None or not stat.S_ISREG(st.st_mode) or not st.st_size:
        return 0, False
    if st.st_size > entry.size:
        return 0, True  # longer than the box's file now: it shrank, or was rewritten
    if earlier is not None and earlier.sha256 != entry.sha256:
        return 0, True  # the box's file changed since the part was started
    return st.st_size, False


def set_aside_size(folder: Path) -> tuple[int, int]:
    """(files, bytes) under ``folder`` (.rgt/replaced: rgt-tui's own, links not followed)."""
    count = size = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                size += os.lstat(os.path.join(root, name)).st_size
                count += 1
    return count, size


def check_space(host_dir: Path, plan: PullPlan, *, margin_fraction: float, margin_min: int) -> None:
    """Raise NotEnoughSpace / NotEnoughInodes unless the rest of the pull fits with margin.

    Margin: ``max(margin_fraction × remaining, margin_min)`` (defaults 5 % and 1 GiB): a
    pull that would leave the disk at zero breaks the next write of anything else too.
    """
    todo = plan.to_pull
    if not todo:
        return
    folders = {f.local.rpartition("/")[0] for f in todo} | {f.part.rpartition("/")[0] for f in todo}
    new_inodes = sum(1 for f in todo if not f.resume_from) + len(folders)  # folders: at most
    st = disk_of(host_dir)
    if st is None:  # not even / answers: the copy's own writes will say what is wrong
        return
    available = st.f_bavail * st.f_frsize
    remaining = plan.remaining_bytes
    needed = remaining + max(int(remaining * margin_fraction), margin_min)
    if available < needed:
        # The earlier copies pulls set aside grow with every changed file and are never
        # deleted (periodic pulls of a last.pt rewritten each epoch): named, as what may
        # be freed (hour s20a #2).
        aside = set_aside_size(host_dir / RECORDS_DIR / REPLACED_DIR)
        big = max(todo, key=lambda f: f.entry.size - f.resume_from)
        biggest = (big.local, big.entry.size - big.resume_from)
        raise NotEnoughSpace(host_dir, needed, available, remaining, aside, biggest)
    if st.f_files and st.f_favail < new_inodes + 100:
        raise NotEnoughInodes(host_dir, new_inodes, st.f_favail)
