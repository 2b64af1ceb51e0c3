"""The pull manifest: every file under a host's pull roots, as the box saw it.

The on-box script (``rgt_tui.agent.manifest``) prints JSON lines; the hostile-input parser
(``rgt_tui.domain.manifest_parse.parse_manifest_lines``) turns them into a frozen
``Manifest``. A manifest is the reference a pull is checked against (a file is pulled only
when its local SHA-256 equals the entry's) and the snapshot the teardown gate re-scans and
``compare``s to notice later writes. ``manifest_to_json`` / ``manifest_from_json`` are its
record (``.rgt/manifest.json``).

Local layout (``<results_dir>/<host>/``): with one pull root, files land directly under
the host folder, mirroring their path below the root. With several roots each gets a
sub-folder named by ``root_labels`` (``rgt_tui.domain.manifest_names``, the name policy:
which names from the box are safe, which are secrets). ``.rgt`` (``RECORDS_DIR``) is
reserved for rgt-tui's own records.

A manifest belongs to one box (``rgt_tui.domain.box_identity``): the scan reports the id
the box keeps in ``~/.rgt/box-id`` (``box_id``) and the transport adds the host key it saw
(``host_key``). Both are part of the record and of its ``digest``, so nothing derived from
one box's manifest (a verification, a gate fact) can pass for another box's.

Everything here is pure: no I/O, no clock.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from rgt_tui.domain.box_identity import BoxIdentity, valid_box_id

MANIFEST_VERSION = 1
RECORDS_DIR = ".rgt"  # inside <results_dir>/<host>/: manifest, pull state, verification


class ManifestError(ValueError):
    """The box's manifest output could not be read (truncated, wrong version, garbled)."""


@dataclass(frozen=True)
class PullRoot:
    """One remote folder from the host's ``pull`` list."""

    index: int
    given: str  # as written in hosts.toml
    path: str  # as resolved on the box (``~`` expanded, symlinks resolved)
    label: str  # local sub-folder; "" when the host has a single root
    error: str | None = None  # e.g. "no such folder"


@dataclass(frozen=True)
class ManifestEntry:
    """One regular file: where it is, and what its content was when listed."""

    root: int
    path: str  # relative to the root, '/'-separated
    size: int
    mtime: float
    sha256: str | None  # None only in a --no-hash re-scan
    mode: int | None = None  # permission bits on the box (0o7777); None: not reported
    # Still being written when hashed: ``size`` and ``sha256`` are of its first bytes, as
    # they were read (the file was longer by then); the next scan lists the rest.
    growing: bool = False

    @property
    def key(self) -> tuple[int, str]:
        return (self.root, self.path)


@dataclass(frozen=True)
class ManifestLink:
    """A symlink that stays inside its root; recreated locally, its target pulled as a file."""

    root: int
    path: str
    target: str  # relative to the root


@dataclass(frozen=True)
class Refusal:
    """Something under a root that is not pulled, and why (shown to the user by name)."""

    root: int
    path: str
    reason: str


@dataclass(frozen=True)
class Manifest:
    """What was under a host's pull roots at ``taken_at`` (box clock, unix seconds)."""

    host: str
    roots: tuple[PullRoot, ...]
    entries: tuple[ManifestEntry, ...]
    links: tuple[ManifestLink, ...] = ()
    refused: tuple[Refusal, ...] = ()
    taken_at: float = 0.0
    finished_at: float = 0.0
    hashed: bool = True
    box_id: str | None = None  # the box's ~/.rgt/box-id; None: not reported
    host_key: str | None = None  # the host key's fingerprint on the scan's connection
    box_id_error: str | None = None  # why the box could not report its id

    @property
    def identity(self) -> BoxIdentity | None:
        """The box this manifest was taken on; None when it did not say."""
        return BoxIdentity(self.box_id, self.host_key) if self.box_id else None

    @property
    def total_bytes(self) -> int:
        return sum(e.size for e in self.entries)

    @property
    def last_write(self) -> float | None:
        """The newest mtime among the files (box clock), None when there are none."""
        return max((e.mtime for e in self.entries), default=None)

    @property
    def digest(self) -> str:
        """SHA-256 of the manifest's content: ties records (verification...) to this manifest."""
        text = json.dumps(manifest_to_json(self), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    @property
    def content_digest(self) -> str:
        """SHA-256 of what the manifest lists, without when it was taken: two scans of a
        box where nothing changed (a pull that found nothing new) have the same one."""
        data = manifest_to_json(self)
        for when in ("taken_at", "finished_at"):
            data.pop(when, None)
        text = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def local_relpath(self, root: int, path: str) -> str:
        """Where ``path`` of ``root`` lands, relative to ``<results_dir>/<host>/``."""
        label = self.roots[root].label if 0 <= root < len(self.roots) else f"root{root + 1}"
        return f"{label}/{path}" if label else path

    def display(self, root: int, path: str) -> str:
        """The remote path of an entry as the user knows it (root + relative path)."""
        base = self.roots[root].path if 0 <= root < len(self.roots) else f"<root {root}>"
        if path in ("", "."):  # the root itself (a root that is not there): no "/." after it
            return base
        return f"{base.rstrip('/')}/{path}"

    def by_local_path(self) -> dict[str, ManifestEntry]:
        """Entries keyed by their local relative path."""
        return {self.local_relpath(e.root, e.path): e for e in self.entries}


def moved_roots(previous: Manifest | None, now: Manifest) -> tuple[tuple[str, str, str], ...]:
    """(remote root, local folder before, local folder now) of each pull root whose files
    land elsewhere here than at the last pull: a root added to or removed from the host's
    ``pull`` list moves every root's files (``root_labels``), and they all come again."""
    if previous is None:
        return ()
    before = {r.path: r.label for r in previous.roots if r.error is None}
    return tuple(
        (r.path, before[r.path], r.label)
        for r in now.roots
        if r.error is None and r.path in before and before[r.path] != r.label
    )


@dataclass(frozen=True)
class ManifestDiff:
    """What changed between two scans of the same roots."""

    added: tuple[ManifestEntry, ...] = ()
    removed: tuple[ManifestEntry, ...] = ()
    changed: tuple[tuple[ManifestEntry, ManifestEntry], ...] = ()  # (old, new)
    newly_refused: tuple[Refusal, ...] = ()

    @property
    def unchanged(self) -> bool:
        return not (self.added or self.removed or self.changed or self.newly_refused)

    def describe(self, limit: int = 5) -> list[str]:
        """Short lines naming what changed, for messages."""
        lines = []
        for word, items in (
            ("added", [e.path for e in self.added]),
            ("removed", [e.path for e in self.removed]),
            ("changed", [new.path for _, new in self.changed]),
            ("refused", [f"{r.path} ({r.reason})" for r in self.newly_refused]),
        ):
            if items:
                more = f" and {len(items) - limit} more" if len(items) > limit else ""
                lines.append(f"{word}: {', '.join(items[:limit])}{more}")
        return lines


def compare(old: Manifest, new: Manifest) -> ManifestDiff:
    """Files added, removed and changed from ``old`` to ``new``.

    Roots are matched by their resolved path, so a reordered ``pull`` list is no change.
    A file is changed when its size, mtime or (when both scans hashed it) SHA-256 differ;
    a ``--no-hash`` re-scan therefore compares by size and mtime alone.
    """

    def keyed(m: Manifest) -> dict[tuple[str, str], ManifestEntry]:
        return {(_root_path(m, e.root), e.path): e for e in m.entries}

    before, after = keyed(old), keyed(new)
    added = tuple(after[k] for k in sorted(after.keys() - before.keys()))
    removed = tuple(before[k] for k in sorted(before.keys() - after.keys()))
    changed = []
    for k in sorted(before.keys() & after.keys()):
        a, b = before[k], after[k]
        hashes_differ = a.sha256 is not None and b.sha256 is not None and a.sha256 != b.sha256
        if a.size != b.size or a.mtime != b.mtime or hashes_differ:
            changed.append((a, b))
    old_refused = {(_root_path(old, r.root), r.path) for r in old.refused}
    newly = tuple(r for r in new.refused if (_root_path(new, r.root), r.path) not in old_refused)
    return ManifestDiff(added, removed, tuple(changed), newly)


def _root_path(m: Manifest, index: int) -> str:
    return m.roots[index].path if 0 <= index < len(m.roots) else f"#{index}"


def manifest_to_json(m: Manifest) -> dict[str, Any]:
    """A JSON-ready dict (the format of ``.rgt/manifest.json``).

    The box's identity is written only when known, so a manifest without one keeps the
    digest it had before identities were recorded (records tied to it stay tied).
    """
    data = {
        "version": MANIFEST_VERSION,
        "host": m.host,
        "taken_at": m.taken_at,
        "finished_at": m.finished_at,
        "hashed": m.hashed,
        "roots": [
            {"index": r.index, "given": r.given, "path": r.path, "label": r.label, "error": r.error}
            for r in m.roots
        ],
        "entries": [
            {"root": e.root, "path": e.path, "size": e.size, "mtime": e.mtime, "sha256": e.sha256}
            | ({} if e.mode is None else {"mode": e.mode})  # older records have none
            | ({"growing": True} if e.growing else {})  # so a digest without one stays
            for e in m.entries
        ],
        "links": [{"root": ln.root, "path": ln.path, "target": ln.target} for ln in m.links],
        "refused": [{"root": r.root, "path": r.path, "reason": r.reason} for r in m.refused],
    }
    box = {"box_id": m.box_id, "host_key": m.host_key, "box_id_error": m.box_id_error}
    data.update({key: value for key, value in box.items() if value is not None})
    return data


def manifest_from_json(data: dict[str, Any]) -> Manifest:
    """The inverse of ``manifest_to_json``; ManifestError on a file it did not write."""
    try:
        if data.get("version") != MANIFEST_VERSION:
            raise ManifestError(f"manifest version {data.get('version')!r} not understood")
        return Manifest(
            host=str(data["host"]),
            roots=tuple(PullRoot(**r) for r in data["roots"]),
            entries=tuple(ManifestEntry(**e) for e in data["entries"]),
            links=tuple(ManifestLink(**ln) for ln in data.get("links", [])),
            refused=tuple(Refusal(**r) for r in data.get("refused", [])),
            taken_at=float(data["taken_at"]),
            finished_at=float(data.get("finished_at", 0.0)),
            hashed=bool(data.get("hashed", True)),
            box_id=valid_box_id(data.get("box_id")),
            host_key=_optional_str(data.get("host_key")),
            box_id_error=_optional_str(data.get("box_id_error")),
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise ManifestError(f"manifest record is malformed ({exc})") from None


def _optional_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


__all__ = [
    "MANIFEST_VERSION", "RECORDS_DIR", "Manifest", "ManifestDiff", "ManifestEntry",
    "ManifestError", "ManifestLink", "PullRoot", "Refusal", "compare", "manifest_from_json",
    "manifest_to_json", "moved_roots",
]  # fmt: skip


def verified_here(about: object, manifest: Manifest) -> bool:
    """Whether a verification record's ``manifest`` part speaks about ``manifest``: the
    same one, or one listing the same files with the same hashes (a pull that found
    nothing new took a new manifest; a user's hour saw it undo the verification and
    relock the teardown gate). A record older than content digests has only its digest."""
    if not isinstance(about, dict):
        return False
    if about.get("digest") == manifest.digest:
        return True
    content = about.get("content")
    return isinstance(content, str) and content == manifest.content_digest
