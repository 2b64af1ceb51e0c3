"""The local side of a pull: what is already here, free space, ``.part`` files, renames.

Every function here blocks (stats, hashes, writes); the pull service calls them through
``asyncio.to_thread``. Rules kept here:

- A file counts as pulled only when its local SHA-256 equals the manifest's.
- Nothing the user owns is deleted or overwritten. A local file that differs from the
  box's copy is replaced only when rgt-tui wrote it and it is unchanged since (its hash
  is still the one in ``pulled.json``); even then the old copy is moved to
  ``.rgt/replaced/``, never deleted. Anything else in the way is a conflict, reported by
  name and left alone.
- ``.part`` files are rgt-tui's own, kept in ``.rgt/parts/`` (``part_path``): one is
  resumed from its size, or restarted from zero when it cannot belong to the manifest's
  version of the file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from rgt_tui.domain.manifest import Manifest, ManifestEntry
from rgt_tui.domain.units import fmt_bytes
from rgt_tui.services.artifact_checks import sha256_file
from rgt_tui.services.durable import sync_files
from rgt_tui.services.records import (
    PARTS_DIR,
    REPLACED_DIR,
    atomic_write_json,
    fsync_dir,
    pulled_path,
    read_json,
    records_dir,
)

PULLED_VERSION = 1
DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)


class PullError(Exception):
    """A pull stopped: ``message`` says what happened, ``fix`` what the user can do."""

    def __init__(self, message: str, fix: str | None = None) -> None:
        self.message = message
        self.fix = fix
        self.result = None  # the partial PullResult, when the pull got that far
        super().__init__(message + (f" — {fix}" if fix else ""))


class NotEnoughSpace(PullError):
    """Free local space does not cover what remains to pull plus the margin."""

    def __init__(self, folder: Path, needed: int, available: int, remaining: int) -> None:
        self.folder, self.needed, self.available, self.remaining = (
            folder,
            needed,
            available,
            remaining,
        )
        super().__init__(
            f"not enough local space in {folder}: the pull needs {fmt_bytes(needed)} "
            f"({fmt_bytes(remaining)} still to pull plus the safety margin), "
            f"{fmt_bytes(available)} is free; nothing was pulled",
            f"free at least {fmt_bytes(needed - available)} there, or expand the disk, then "
            "re-run (a subset is never pulled silently)",
        )


class NotEnoughInodes(PullError):
    """The local file system cannot create as many files as the pull needs (U7)."""

    def __init__(self, folder: Path, needed: int, available: int) -> None:
        super().__init__(
            f"not enough free inodes in {folder}: the pull creates up to {needed} files and "
            f"folders, {available} inodes are free; nothing was pulled",
            "free inodes (delete many small files) or pull to another disk (results_dir)",
        )


class LocalDiskFull(PullError):
    """The local disk filled up while a file was being written."""

    def __init__(self, path: Path, folder: Path) -> None:
        self.path, self.folder = path, folder
        super().__init__(
            f"local disk full while writing {path} (in {folder}); partial files are kept "
            "and this file is NOT marked pulled",
            "free space on that disk (or expand it), then re-run the same pull to resume",
        )


class LocalWriteError(Exception):
    """A local file operation failed (wraps the OSError, so it is not taken for a remote one)."""

    def __init__(self, path: Path, exc: OSError) -> None:
        self.path, self.exc = path, exc
        super().__init__(f"cannot write {path}: {exc.strerror or exc}")

    @property
    def disk_full(self) -> bool:
        return self.exc.errno in DISK_FULL_ERRNOS


@dataclass(frozen=True)
class FilePlan:
    """What to do with one manifest entry."""

    entry: ManifestEntry
    local: str  # relative to the host folder
    part: str  # relative path of its .part file
    action: str  # skip | pull | replace | conflict
    resume_from: int = 0
    local_sha256: str | None = None  # of the file already here, when there is one
    note: str = ""


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


class PulledRecord:
    """``.rgt/pulled.json``: every file pulled so far, with the hash it was checked against."""

    def __init__(self, files: dict[str, dict] | None = None) -> None:
        self.files: dict[str, dict] = files or {}
        self._lock = threading.Lock()  # workers record files from several threads

    @classmethod
    def load(cls, host_dir: Path) -> PulledRecord:
        """The record kept with the host's results (empty when missing or unreadable)."""
        try:
            data = read_json(pulled_path(host_dir))
        except ValueError:
            data = None  # unreadable: every local file is simply hashed again
        if not isinstance(data, dict) or data.get("version") != PULLED_VERSION:
            return cls()
        return cls(dict(data.get("files", {})))

    def put(self, rel: str, sha256: str, path: Path) -> None:
        """Record ``rel`` as pulled with ``sha256`` (size and mtime from the file now)."""
        self.put_stat(rel, sha256, path.stat())

    def put_stat(self, rel: str, sha256: str, st: os.stat_result) -> None:
        """Record ``rel`` with a stat already taken (a rename keeps size and mtime)."""
        with self._lock:
            self.files[rel] = {"sha256": sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}

    def save(self, host_dir: Path) -> None:
        """Write the record atomically."""
        with self._lock:
            files = dict(self.files)
        atomic_write_json(pulled_path(host_dir), {"version": PULLED_VERSION, "files": files})


def plan_pull(
    host_dir: Path, manifest: Manifest, previous: Manifest | None, record: PulledRecord
) -> PullPlan:
    """Decide, file by file, what the pull must do (hashing local files rgt-tui cannot vouch for)."""
    before = _entries_by_key(previous) if previous is not None else {}
    here = _Listings(host_dir)
    plans = []
    for entry in manifest.entries:
        rel = manifest.local_relpath(entry.root, entry.path)
        part = part_path(rel)
        if here.absent(rel) and here.absent(part):
            plans.append(FilePlan(entry, rel, part, "pull"))  # nothing here: a fresh pull
        elif here.unlisted(rel) and (blocker := _file_in_the_way(host_dir, rel)):
            note = f"{blocker} is a file where a folder must go; move it away and re-run"
            plans.append(FilePlan(entry, rel, part, "conflict", note=note))
        else:
            plans.append(_plan_one(host_dir, manifest, entry, rel, part, record, before))
    return PullPlan(tuple(plans))


def part_path(rel: str) -> str:
    """Where the file ``rel`` is written until it is checked, relative to the host folder.

    In ``.rgt/parts/``, where no file from the box can land (the manifest refuses paths
    into ``.rgt``): next to the file, as ``<name>.part``, a box file of that very name
    (a leftover of the box's own) took the same path, and whichever finished first was
    overwritten by the other with its hash still passing.
    """
    return f"{PARTS_DIR}/{rel}.part"


class _Listings:
    """Which names each local folder holds, listed once per folder.

    A fresh pull of thousands of files then costs one ``listdir`` per folder instead of
    four stats per file (3000 files: 80 ms to 10 ms). Names are compared case- and
    Unicode-folded, so on a case-insensitive or normalising file system a look-alike
    name is never taken for absent; such a name, or a folder that cannot be listed, gets
    the full per-file checks.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._names: dict[str, frozenset[str] | None] = {}

    def absent(self, rel: str) -> bool:
        folder, _, name = rel.rpartition("/")
        names = self._of(folder)
        return names is not None and _folded(name) not in names

    def unlisted(self, rel: str) -> bool:
        """True when ``rel``'s folder could not be listed (a file in its way, no access)."""
        return self._of(rel.rpartition("/")[0]) is None

    def _of(self, folder: str) -> frozenset[str] | None:
        if folder not in self._names:
            self._names[folder] = self._list(folder)
        return self._names[folder]

    def _list(self, folder: str) -> frozenset[str] | None:
        try:
            return frozenset(_folded(n) for n in os.listdir(self.root / folder))
        except FileNotFoundError:
            return frozenset()
        except OSError:
            return None  # a file in the way, unreadable: the per-file checks say what


def _folded(name: str) -> str:
    return unicodedata.normalize("NFC", name).casefold()


def _entries_by_key(m: Manifest) -> dict[tuple[str, str], ManifestEntry]:
    return {(m.roots[e.root].path, e.path): e for e in m.entries if e.root < len(m.roots)}


def _plan_one(
    host_dir: Path,
    manifest: Manifest,
    entry: ManifestEntry,
    rel: str,
    part: str,
    record: PulledRecord,
    before: dict[tuple[str, str], ManifestEntry],
) -> FilePlan:
    final = host_dir / rel
    action, local_sha, note = "pull", None, ""
    if final.is_symlink() or (final.exists() and not final.is_file()):
        return FilePlan(
            entry, rel, part, "conflict", note="something that is not a file is in the way"
        )
    if final.exists():
        st = final.stat()
        rec = record.files.get(rel)
        trusted = rec and rec.get("size") == st.st_size and rec.get("mtime_ns") == st.st_mtime_ns
        local_sha = rec["sha256"] if trusted else sha256_file(final)
        if local_sha == entry.sha256:
            if not trusted:
                record.put(rel, local_sha, final)
            # A part of it left by an interrupted pull is rgt-tui's own and now useless
            # (else verify would call it unfinished for ever).
            with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                os.unlink(host_dir / part)
            return FilePlan(entry, rel, part, "skip", local_sha256=local_sha)
        if rec and rec.get("sha256") == local_sha:
            action, note = "replace", "changed on the box; the older copy goes to .rgt/replaced/"
        else:
            return FilePlan(
                entry, rel, part, "conflict", local_sha256=local_sha,
                note="a different local file is in the way and rgt-tui did not write it "
                "(or it was edited since); move it away and re-run",
            )  # fmt: skip
    resume = _resumable(
        host_dir / part, entry, before.get((manifest.roots[entry.root].path, entry.path))
    )
    return FilePlan(entry, rel, part, action, resume, local_sha, note)


def _file_in_the_way(host_dir: Path, rel: str) -> str | None:
    """The first folder on ``rel``'s way that is something else here (a file, a link to
    one), as a relative path; None when every existing one is a folder."""
    parts = rel.split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        ancestor = host_dir.joinpath(*parts[:depth])
        if not ancestor.exists() and not ancestor.is_symlink():
            return None  # missing: the pull creates it and everything below
        if not ancestor.is_dir():
            return "/".join(parts[:depth])
    return None


def _resumable(part: Path, entry: ManifestEntry, previous: ManifestEntry | None) -> int:
    """Bytes of ``part`` worth keeping: all of them, unless they cannot be this version."""
    try:
        size = part.stat().st_size
    except (FileNotFoundError, NotADirectoryError):
        return 0
    if size > entry.size:
        return 0  # longer than the file: left from another version
    if previous is not None and previous.sha256 != entry.sha256:
        return 0  # the box's file changed since the part was started
    return size


def check_space(host_dir: Path, plan: PullPlan, *, margin_fraction: float, margin_min: int) -> None:
    """Raise NotEnoughSpace / NotEnoughInodes unless the rest of the pull fits with margin.

    Margin: ``max(margin_fraction × remaining, margin_min)`` (defaults 5 % and 1 GiB): a
    pull that would leave the disk at zero breaks the next write of anything else too.
    """
    if not plan.to_pull:
        return
    new_files = sum(1 for f in plan.to_pull if not f.resume_from)
    dirs = {str(Path(f.local).parent) for f in plan.to_pull}
    dirs |= {str(Path(f.part).parent) for f in plan.to_pull}  # .rgt/parts/ mirrors them
    new_inodes = new_files + sum(1 for d in dirs if not (host_dir / d).exists())
    check_space_for(
        host_dir,
        plan.remaining_bytes,
        new_inodes,
        margin_fraction=margin_fraction,
        margin_min=margin_min,
    )


def check_space_for(
    host_dir: Path, remaining: int, new_inodes: int, *, margin_fraction: float, margin_min: int
) -> None:
    """``check_space`` for given totals: ``remaining`` bytes and ``new_inodes`` new files
    and folders."""
    folder = _existing_ancestor(host_dir)
    st = os.statvfs(folder)
    available = st.f_bavail * st.f_frsize
    needed = remaining + max(int(remaining * margin_fraction), margin_min)
    if available < needed:
        raise NotEnoughSpace(host_dir, needed, available, remaining)
    if st.f_files and st.f_favail < new_inodes + 100:
        raise NotEnoughInodes(host_dir, new_inodes, st.f_favail)


def _existing_ancestor(path: Path) -> Path:
    path = Path(path).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def finalize(host_dir: Path, plan: FilePlan, *, sync_dir: bool = True) -> Path:
    """Move a checked ``.part`` into place (setting an older copy aside); returns the file."""
    part, final = host_dir / plan.part, host_dir / plan.local
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        if plan.action == "replace" and final.exists():
            keep = _replaced_name(host_dir, plan)
            keep.parent.mkdir(parents=True, exist_ok=True)
            os.rename(final, keep)
        os.rename(part, final)
    except OSError as exc:
        raise LocalWriteError(final, exc) from exc
    if sync_dir:
        fsync_dir(final.parent)
    return final


def finalize_many(
    host_dir: Path,
    group: list[tuple[FilePlan, bytes, str]],
    record: PulledRecord,
    fsync: bool,
) -> None:
    """Write whole small files (already checked against their hash) and move them into place.

    Each goes through its ``.part`` like a large file, so a crash never leaves a short file
    under the real name: the whole group is written, made durable with one sync
    (``durable.sync_files``), then renamed; folders are fsynced once per group.
    """
    # File creation dominates here (tenths of a millisecond each on many disks), so the
    # per-file work is kept to the system calls that matter: no buffered file objects,
    # each folder created once, and the stat for the record taken from the open file.
    # Plain string paths: pathlib's joins cost more than the system calls they feed.
    base = os.fspath(host_dir)
    folders: set[str] = set()
    written: list[tuple[FilePlan, str, int, str]] = []  # (plan, part path, fd, sha256)
    try:
        for plan, data, digest in group:
            part = os.path.join(base, plan.part)
            folder = os.path.dirname(part)
            try:
                if folder not in folders:
                    os.makedirs(folder, exist_ok=True)
                    folders.add(folder)
                fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
                written.append((plan, part, fd, digest))
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            except OSError as exc:
                raise LocalWriteError(Path(part), exc) from exc
        if fsync and written:
            try:
                sync_files([fd for _, _, fd, _ in written])
            except OSError as exc:
                raise LocalWriteError(Path(written[0][1]), exc) from exc
        stats = [os.fstat(fd) for _, _, fd, _ in written]
    finally:
        for _, _, fd, _ in written:
            os.close(fd)
    for (plan, part, _, digest), st in zip(written, stats, strict=True):
        final = os.path.join(base, plan.local)
        folder = os.path.dirname(final)  # the part is elsewhere, in .rgt/parts/
        if plan.action == "replace":
            finalize(host_dir, plan, sync_dir=False)  # sets the older copy aside first
        else:
            try:
                if folder not in folders:
                    os.makedirs(folder, exist_ok=True)
                os.rename(part, final)
            except OSError as exc:
                raise LocalWriteError(Path(final), exc) from exc
        folders.add(folder)
        record.put_stat(plan.local, digest, st)
    for folder in folders:
        fsync_dir(Path(folder))


def _replaced_name(host_dir: Path, plan: FilePlan) -> Path:
    tag = (plan.local_sha256 or "old")[:12]
    base = records_dir(host_dir) / REPLACED_DIR / f"{plan.local}.{tag}"
    candidate, n = base, 1
    while candidate.exists():
        candidate, n = base.with_name(f"{base.name}.{n}"), n + 1
    return candidate


def make_links(host_dir: Path, manifest: Manifest) -> list[tuple[str, str]]:
    """Recreate the box's in-root symlinks; returns (path, why) for each one left alone."""
    conflicts = []
    for link in manifest.links:
        rel = manifest.local_relpath(link.root, link.path)
        where = host_dir / rel
        target = os.path.relpath(
            host_dir / manifest.local_relpath(link.root, link.target), where.parent
        )
        try:
            if where.is_symlink():
                if os.readlink(where) != target:
                    conflicts.append(
                        (rel, f"a different symlink is in the way (-> {os.readlink(where)})")
                    )
                continue
            if where.exists():
                conflicts.append((rel, "a file is in the way of the box's symlink"))
                continue
            where.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(target, where)
        except OSError as exc:
            conflicts.append((rel, f"cannot create symlink: {exc.strerror or exc}"))
    return conflicts
