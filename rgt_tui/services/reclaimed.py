"""Files a reclaim deleted on the box after they were pulled and verified (hour s19a #1).

``disk --delete`` (and the TUI's ``u``) frees a box's disk only of files whose local copy
is pulled, verified and re-hashed at that moment (``services.disk.reclaim``). From then on
this machine's copy is the only one: the next pull's manifest no longer lists them, yet
they are results. Without a record, verify called the cell missing ("no output
directory") and the gate stopped re-hashing its files, so deleting them here opened it.

``<host>/.rgt/reclaimed.json`` keeps, per local path, what the box's copy was (its path
there, size, mtime, SHA-256) and what verify found it to be (``verified``: an artifact
that loaded; ``hashed``: checked by hash), under the id of the box it was deleted from.
It is written before the delete: a delete that then fails leaves entries for files the
box still has, and wherever the manifest lists a path, the manifest's entry stands.

``reclaimed_here`` is what verify and the gate read: this box's entries that the
manifest no longer lists, their local copies re-hashed now. Verify counts a matching
copy for its cell's roster and names a missing or changed one; the gate re-hashes them
with the manifest's files, so deleting one here keeps the gate shut.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from rgt_tui.domain.artifacts import GOOD_STATUSES
from rgt_tui.domain.manifest import Manifest
from rgt_tui.domain.teardown_gate import FileFacts, LocalCopyChecked
from rgt_tui.services.local_copy import check_local_copy
from rgt_tui.services.records import atomic_write_json, read_json, records_dir

RECLAIMED_FILE = "reclaimed.json"
VERSION = 1


@dataclass(frozen=True)
class ReclaimedFile:
    """One file deleted on the box whose local copy was verified at that moment."""

    local: str  # the path under the host's folder
    remote: str  # where it was on the box (shown, never used to reach the box)
    size: int
    mtime: float
    sha256: str
    status: str  # verify's: "verified" (loaded as an artifact) or "hash-only"


@dataclass(frozen=True)
class ReclaimedHere:
    """This box's reclaimed files the manifest no longer lists, re-hashed now."""

    files: tuple[ReclaimedFile, ...]
    check: LocalCopyChecked
    problem: str | None = None  # the record could not be read: said, never ignored

    @property
    def intact(self) -> tuple[ReclaimedFile, ...]:
        """The files whose local copy still hashes to the record's SHA-256."""
        bad = set(self.check.missing) | {c.split(": ", 1)[0] for c in self.check.changed}
        return tuple(f for f in self.files if f.local not in bad)


def reclaimed_path(host_dir: Path) -> Path:
    """``<host_dir>/.rgt/reclaimed.json``."""
    return records_dir(host_dir) / RECLAIMED_FILE


def record_reclaimed(host_dir: Path, box_id: str, files: Sequence[ReclaimedFile]) -> None:
    """Add ``files`` to the record under ``box_id`` (blocking; atomic write)."""
    path = reclaimed_path(host_dir)
    data = read_json(path)
    boxes = data.get("boxes") if isinstance(data, dict) else None
    boxes = boxes if isinstance(boxes, dict) else {}
    entries = boxes.get(box_id) if isinstance(boxes.get(box_id), dict) else {}
    now = time.time()
    for f in files:
        entries[f.local] = {**asdict(f), "deleted_at": now}
    boxes[box_id] = entries
    atomic_write_json(path, {"version": VERSION, "boxes": boxes})


def load_reclaimed(host_dir: Path, box_id: str | None) -> tuple[ReclaimedFile, ...]:
    """The record's files of box ``box_id`` (none for another box or none recorded);
    ValueError naming the file when it cannot be read."""
    path = reclaimed_path(host_dir)
    try:
        data = read_json(path)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path} cannot be read ({exc})") from None
    if data is None or box_id is None:
        return ()
    try:
        entries = data["boxes"].get(box_id) or {}
        files = tuple(
            ReclaimedFile(
                str(local),
                str(e["remote"]),
                int(e["size"]),
                float(e["mtime"]),
                str(e["sha256"]),
                str(e["status"]),
            )
            for local, e in entries.items()
        )
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path} is malformed ({exc!r})") from None
    if any(f.status not in GOOD_STATUSES or not _inside(f.local) for f in files):
        raise ValueError(f"{path} is malformed (a status or local path it cannot hold)")
    return files


def _inside(local: str) -> bool:
    """A relative path with no ``..``: one the host's folder holds."""
    parts = local.split("/")
    return bool(local) and not local.startswith("/") and ".." not in parts and "" not in parts


def reclaimed_count(host_dir: Path, manifest: Manifest | None) -> int:
    """How many of the box's reclaimed files ``manifest`` no longer lists (0 when the
    record cannot be read: verify and the gate say so). No re-hash: a count to say."""
    if manifest is None:
        return 0
    try:
        recorded = load_reclaimed(host_dir, manifest.box_id)
    except ValueError:
        return 0
    listed = {manifest.local_relpath(e.root, e.path) for e in manifest.entries}
    return sum(1 for f in recorded if f.local not in listed)


def reclaimed_here(host_dir: Path, manifest: Manifest, at: float) -> ReclaimedHere:
    """The box's reclaimed files that ``manifest`` no longer lists, re-hashed now
    (blocking: call it off the event loop)."""
    try:
        recorded = load_reclaimed(host_dir, manifest.box_id)
    except ValueError as exc:
        # Unreadable, it cannot say which copies are the only ones: the gate stays shut
        # on it (a "changed" entry) until it is put right.
        why = f"{exc}: it names the files whose only copy is here — restore it from a backup"
        return ReclaimedHere((), LocalCopyChecked(str(host_dir), at, 0, (), (why,)), why)
    listed = {manifest.local_relpath(e.root, e.path) for e in manifest.entries}
    files = tuple(f for f in recorded if f.local not in listed)
    facts = [(f.local, FileFacts(f.size, f.mtime, f.sha256)) for f in files]
    return ReclaimedHere(files, check_local_copy(host_dir, facts, at))


def lost_lines(here: ReclaimedHere) -> list[tuple[str, str]]:
    """(local path, problem line) for each reclaimed file whose only copy, here, is gone
    or changed; the path is "" for a record that cannot be read."""
    if here.problem:
        return [("", here.problem)]
    only = "deleted on the box by a reclaim after it verified, so this was its only copy"
    fix = "put it back (a pull cannot: the box no longer has it), or accept its cell as missing"
    lines = [(p, f"{p}: missing here — {only}: {fix}") for p in here.check.missing]
    lines += [(c.split(": ", 1)[0], f"{c} — {only}: {fix}") for c in here.check.changed]
    return lines
