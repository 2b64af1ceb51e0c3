"""What fills a box's disk, on demand: largest folders, the HF cache, stale checkpoints.

One round trip runs ``rgt_tui/scripts/disk_ctl.sh audit`` on the box (sent whole as
``bash -c``, its paths on stdin, its answer NUL-separated so that a name holding a
newline or a tab stays one name). It reports, each walk bounded by a timeout, on one
file system and never through a link (principle 5, U7):

- per watched mount (``host.mounts``): the largest folders by bytes AND by inodes
  (``du -x --max-depth``), with the device and inode each had, so a delete can check it
  is removing the very folder the user saw;
- the Hugging Face hub cache (``~/.cache/huggingface/hub``, ``$HF_HUB_CACHE``,
  ``$HF_HOME/hub``, each resolved on the box: the cache is often a link onto the data
  disk) by model folder (``models--ORG--NAME``), blobs counted once;
- superseded checkpoints (and torch.save's stale ``*.tmp``; U6): ``*.pt`` / ``*.pth`` /
  ``*.ckpt`` / ``*.safetensors`` / ``*.tmp`` in a queue cell's output folder (``<durable_dir>/<cell>``) older than the newest checkpoint
  of that cell that verified by loading, according to this machine's records of the
  same box (the kept manifest and ``verification.json``, ``services.records``).

It also reads the box's queue first (``services.disk.running``): a running cell's output
folder, and what holds it, is never offered. ``disk_reclaim`` decides what of this may be
deleted. Nothing here writes anything.

Every name here is the box's text. What is only shown (the home, a walk's note, an HF
model's or a checkpoint's short name, a refusal) is made printable as it enters
(``text.printable``). A path is also an identity: it is sent back for the delete, which
the box re-checks by device and inode, and compared with the pull roots and the kept
manifest, so it stays as the box wrote it, and whatever shows it escapes it
(``content/disk_text``, ``disk_reclaim``'s messages, the CLI's fence). A short name is
what a user types to confirm a delete: printable, it can be typed.

Over 450 lines on purpose: the walk's parse, the offers and the checkpoint families all
read one audit of one box; split, each would re-read its shape.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.manifest import Manifest, ManifestError, verified_here
from rgt_tui.domain.queue_file import expand_home
from rgt_tui.domain.text import is_digits, printable
from rgt_tui.services.box_script import box_refusal, run_box_script, script_text
from rgt_tui.services.disk.running import (
    UNREAD_NOTE_START,
    read_running,
    running_outs,
    unread_note,
)
from rgt_tui.services.records import host_results_dir, load_manifest, load_verification
from rgt_tui.transport.base import CommandResult, Transport

AUDIT_SECONDS = 30  # each du / find on the box stops after this
AUDIT_DEPTH = 2
AUDIT_TOP = 20
HF_HUBS = ("~/.cache/huggingface/hub", "$HF_HUB_CACHE", "$HF_HOME/hub")
CHECKPOINT_KINDS = ("torch", "safetensors")


class DiskError(Exception):
    """The audit or a delete failed or was refused; ``str()`` names the host and the fix.
    ``lost``: what a refused delete would have destroyed, one line each."""

    def __init__(self, host: str, message: str, lost: tuple[str, ...] = ()) -> None:
        self.host = host
        self.message = message
        self.lost = lost
        super().__init__(f"{host}: {message}")


@dataclass(frozen=True)
class Reclaimable:
    """Something on the box the audit saw: where, what, how big, which device/inode."""

    path: str  # absolute, as resolved on the box
    kind: str  # folder | hf-model | checkpoint
    type: str  # d (folder) | f (file)
    dev: int
    ino: int
    bytes: int | None
    inodes: int | None = None
    label: str = ""  # hf-model: ORG/NAME; checkpoint: CELL/FILE; folder: the path
    superseded_by: str | None = None  # checkpoint: the newer verified one's path
    mtime: float | None = None
    # Why it is listed but not offered for deletion yet (U6: a superseded checkpoint or
    # a stale *.tmp whose own copy is not pulled and verified); None: offered.
    held: str | None = None

    @property
    def short(self) -> str:
        """The short name a user may type to confirm deleting it (the path always works)."""
        return self.label or self.path


@dataclass(frozen=True)
class MountAudit:
    """One watched mount: its largest folders (by bytes, then the ones big by inodes)."""

    given: str
    resolved: str | None  # None: not on the box
    folders: tuple[Reclaimable, ...]
    notes: tuple[str, ...] = ()  # du stopped early, failed...


@dataclass(frozen=True)
class DiskAudit:
    """Everything one audit of a box saw."""

    host: str
    home: str
    box_id: str
    mounts: tuple[MountAudit, ...]
    hf_hubs: tuple[str, ...]  # the hub folders found (resolved)
    hf_models: tuple[Reclaimable, ...]
    checkpoints: tuple[Reclaimable, ...]  # superseded ones only
    pull_roots: tuple[str, ...]  # resolved on the box
    notes: tuple[str, ...] = ()
    # The host's durable_dir: as resolved on the box (when it exists) and as given with
    # ``~`` expanded; each cell folder the audit resolved, (cell name, resolved path).
    durable: tuple[str, ...] = ()
    cell_dirs: tuple[tuple[str, str], ...] = ()
    # The queue's cells that write to their ``{out}`` or will resume from it, (name, how,
    # a path of its ``{out}``), never offered with what holds them
    # (``services.disk.running``); why the queue could not be read (None: read).
    running: tuple[tuple[str, str, str], ...] = ()
    queue_unread: str | None = None

    def entries(self) -> tuple[Reclaimable, ...]:
        """Everything listed, checkpoints and models first (the cheapest to lose)."""
        folders = tuple(f for m in self.mounts for f in m.folders)
        return self.checkpoints + self.hf_models + folders

    def find(self, path: str) -> Reclaimable | None:
        """The listed entry at ``path`` (or whose short name is ``path``), else None. A
        trailing ``/`` is a folder's name still (a shell's completion adds it: a user's
        hour, s42, was told the folder's name held control characters)."""
        paths = {path, path.rstrip("/") or path}
        for entry in self.entries():
            if entry.path in paths:
                return entry
        return next((e for e in self.entries() if e.label and e.label in paths), None)


async def run_disk_ctl(
    transport: Transport, verb: str, *args: str | int, input: str, timeout: float
) -> CommandResult:
    """Run one verb of disk_ctl.sh on the box (TransportError when unreachable)."""
    script = script_text("disk_ctl.sh")
    return await run_box_script(
        transport, script, "disk_ctl", verb, *args, input=input, timeout=timeout
    )


def disk_refusal(host: str, result: CommandResult, what: str) -> DiskError | None:
    """The script's ``refused<TAB>CODE<TAB>DETAIL`` or failure as an error, else None."""
    refused = box_refusal(result, what)
    return None if refused is None else DiskError(host, refused.message)


async def audit_disk(
    host: HostConfig,
    transport: Transport,
    results_dir: Path,
    *,
    seconds: int = AUDIT_SECONDS,
    depth: int = AUDIT_DEPTH,
    top: int = AUDIT_TOP,
    cells: tuple[str, ...] | None = None,
) -> DiskAudit:
    """Audit the box's disk (see the module docstring). ``cells``: the queue's cell names
    (None: read from the host's queue file). The box's queue is read first: a running
    cell's output folder is never offered (``services.disk.running``)."""
    if cells is None:
        cells = await asyncio.to_thread(_queue_cells, host)
    await transport.connect()
    running, unread = await read_running(host, transport)
    cells = tuple(dict.fromkeys((*cells, *(name for name, _ in running))))
    asked: list[tuple[str, str]] = [("mount", m) for m in host.mounts]
    asked += [("pull", p) for p in host.pull] + [("hf", h) for h in HF_HUBS]
    asked.append(("durable", host.durable_dir))
    durable = host.durable_dir.rstrip("/")
    asked += [("cell", f"{durable}/{name}") for name in cells]
    payload = "".join(f"{kind}\t{path}\0" for kind, path in asked)
    # Every walk has its own timeout on the box: the whole may take a few of them.
    limit = seconds * (2 * len(host.mounts) + 8) + 30
    result = await run_disk_ctl(
        transport, "audit", seconds, depth, top, input=payload, timeout=limit
    )
    error = disk_refusal(host.name, result, "the disk audit")
    if error is not None:
        raise error
    verified = await asyncio.to_thread(_verified_checkpoints, host, results_dir)
    safe = await asyncio.to_thread(_safe_copies, host, results_dir)
    audit = parse_audit(host.name, result.stdout, asked, cells, verified, safe or frozenset())
    return with_running(audit, running, unread)


def with_running(
    audit: DiskAudit, cells: tuple[tuple[str, str], ...], unread: str | None
) -> DiskAudit:
    """``audit`` knowing the queue's cells that use their folder (``read_running``), or
    why they are not known."""
    notes = tuple(n for n in audit.notes if not n.startswith(UNREAD_NOTE_START))
    if unread is not None:
        notes += (unread_note(unread),)
    outs = running_outs(cells, audit.durable, audit.cell_dirs)
    return replace(audit, running=outs, queue_unread=unread, notes=notes)


def parse_audit(
    host: str,
    text: str,
    asked: list[tuple[str, str]],
    cells: tuple[str, ...],
    verified: tuple[dict[str, float], str | None, str | None],
    safe: frozenset[str] | None = None,
) -> DiskAudit:
    """The script's records as a DiskAudit (pure). ``verified``: the newest-verified map
    (box path → mtime), the box id the records are of, and why there is none; ``safe``:
    the box paths whose pulled copy verified (None: not known, nothing held)."""
    single: dict[str, str] = {}
    box_home = ""  # as the box sent it: ~ in durable_dir expands on it (an identity)
    resolved: dict[int, str] = {}
    folders: dict[int, dict[str, Reclaimable]] = {}
    notes: dict[int, list[str]] = {}
    models: dict[str, Reclaimable] = {}
    ckpts: list[tuple[int, Reclaimable]] = []
    for rec in text.split("\0"):
        key, _, rest = rec.partition("\t")
        try:
            if key == "home":
                box_home = rest
                single[key] = printable(rest, None)  # shown only (the paths came resolved)
            elif key == "boxid":
                single[key] = rest  # compared with the records' box id, never shown
            elif key == "root":
                idx, _, path = rest.split("\t", 2)
                resolved[int(idx)] = path
            elif key == "du":
                idx, what, value, dev, ino, path = rest.split("\t", 5)
                got = folders.setdefault(int(idx), {})
                old = got.get(path) or Reclaimable(path, "folder", "d", int(dev), int(ino), None)
                field = {"bytes": int(value)} if what == "B" else {"inodes": int(value)}
                got[path] = _with(old, **field)
            elif key == "cut":
                idx, what, why = rest.split("\t", 2)
                notes.setdefault(int(idx), []).append(
                    f"{'bytes' if what == 'B' else 'inodes'}: {printable(why)}"
                )
            elif key == "hf":
                idx, size, inodes, dev, ino, path = rest.split("\t", 5)
                name = PurePosixPath(path).name.split("--", 1)[-1].replace("--", "/")
                name = printable(name, None)  # the short name a user types
                models[path] = Reclaimable(
                    path, "hf-model", "d", int(dev), int(ino), _int(size), _int(inodes), name
                )
            elif key == "ckpt":
                idx, mtime, size, dev, ino, path = rest.split("\t", 5)
                kind = "tmp" if path.endswith(".tmp") else "checkpoint"  # torch.save's leftover
                entry = Reclaimable(
                    path, kind, "f", int(dev), int(ino), int(size), mtime=float(mtime)
                )
                ckpts.append((int(idx), entry))
        except ValueError:
            continue  # a garbled record from a strange box is dropped, never trusted
    mounts = []
    for i, (kind, given) in enumerate(asked):
        if kind != "mount":
            continue
        listed = sorted(folders.get(i, {}).values(), key=lambda f: (-(f.bytes or 0), f.path))
        mounts.append(MountAudit(given, resolved.get(i), tuple(listed), tuple(notes.get(i, []))))
    pulls = tuple(resolved[i] for i, (k, _) in enumerate(asked) if k == "pull" and i in resolved)
    hubs = tuple(
        dict.fromkeys(resolved[i] for i, (k, _) in enumerate(asked) if k == "hf" and i in resolved)
    )
    box_id = single.get("boxid", "")
    newest, records_box, why_none = verified
    extra: list[str] = []
    if why_none:
        extra.append(f"no superseded checkpoints known: {why_none}")
    elif records_box and box_id and records_box != box_id:
        extra.append("no superseded checkpoints known: the local records are of another box")
        newest = {}
    cell_of = {i: given for i, (k, given) in enumerate(asked) if k == "cell"}
    stale = _superseded(ckpts, cell_of, resolved, newest)
    if safe is not None:
        stale = tuple(_with(c, held=_held(c, safe)) for c in stale)
    durable = [resolved[i] for i, (k, _) in enumerate(asked) if k == "durable" and i in resolved]
    durable += [expand_home(given, box_home) for k, given in asked if k == "durable"]
    cell_dirs = tuple(
        (PurePosixPath(given).name, resolved[i]) for i, given in cell_of.items() if i in resolved
    )
    return DiskAudit(
        host, single.get("home", ""), box_id, tuple(mounts), hubs,
        tuple(sorted(models.values(), key=lambda m: -(m.bytes or 0))), stale, pulls, tuple(extra),
        tuple(dict.fromkeys(durable)), cell_dirs,
    )  # fmt: skip


def _superseded(
    ckpts: list[tuple[int, Reclaimable]],
    cell_of: dict[int, str],
    resolved: dict[int, str],
    newest: dict[str, float],
) -> tuple[Reclaimable, ...]:
    """Checkpoints older than a newer verified one of their family in their cell (a stale
    ``*.tmp``: older than the cell's newest verified one), biggest first.

    A family is one folder's names that differ only in their numbers (``ckpt_epoch3.pt``,
    ``ckpt_epoch5.pt``): any newer ``.pt`` superseded the cell's only weights, a 1.5 KB
    ``args.pt`` offering its resume point for a delete (hour s20c #2)."""
    stale = []
    for idx in cell_of:
        folder = resolved.get(idx)
        if folder is None:
            continue
        mine = [(p, t) for p, t in newest.items() if p.startswith(folder.rstrip("/") + "/")]
        if not mine:
            continue
        cell = PurePosixPath(folder).name
        for i, c in ckpts:
            if i != idx or c.mtime is None:
                continue
            leftover = c.path.endswith(".tmp")
            kin = [(p, t) for p, t in mine if leftover or _family(p) == _family(c.path)]
            if not kin:
                continue
            best, best_t = max(kin, key=lambda pt: pt[1])
            if c.path != best and c.mtime < best_t:
                label = printable(f"{cell}/{c.path[len(folder.rstrip('/')) + 1 :]}", None)
                stale.append(_with(c, label=label, superseded_by=best))
    return tuple(sorted(stale, key=lambda c: (-(c.bytes or 0), c.path)))


def _family(path: str) -> tuple[str, str]:
    """(folder, name with its numbers blanked): ``ckpt_epoch3.pt`` and ``ckpt_epoch12.pt``
    are one family, ``checkpoint.pt`` and ``args.pt`` are not."""
    folder, _, name = path.rpartition("/")
    return folder, re.sub(r"\d+", "#", name)


def _held(entry: Reclaimable, safe: frozenset[str]) -> str | None:
    """Why a superseded checkpoint or stale ``*.tmp`` is not offered yet (U6)."""
    if entry.path in safe:
        return None
    return "its own copy is not pulled and verified yet (pull and verify first)"


def _safe_copies(host: HostConfig, results_dir: Path) -> frozenset[str] | None:
    """Box paths of the kept manifest whose pulled copy the verification of that very
    manifest found good (blocking); None when no verified pull is recorded."""
    folder = host_results_dir(results_dir, host)
    try:
        manifest = load_manifest(folder)
    except (ManifestError, OSError):
        return None
    record = load_verification(folder)
    if manifest is None or not record_of(record, manifest):
        return None
    assert record is not None
    sha = {manifest.display(e.root, e.path): e.sha256 for e in manifest.entries}
    return frozenset(
        str(c.get("remote"))
        for c in record.get("checks") or []
        if isinstance(c, dict)
        and c.get("ok") is True
        and c.get("sha256") is not None
        and sha.get(str(c.get("remote"))) == c.get("sha256")
    )


def _verified_checkpoints(
    host: HostConfig, results_dir: Path
) -> tuple[dict[str, float], str | None, str | None]:
    """Box path → mtime of each checkpoint that verified by loading, per this machine's
    records; the box id those records are of; why there are none (blocking)."""
    folder = host_results_dir(results_dir, host)
    try:
        manifest = load_manifest(folder)
    except (ManifestError, OSError) as exc:
        return {}, None, f"the kept manifest is unreadable ({exc})"
    if manifest is None:
        return (
            {},
            None,
            f"nothing pulled yet — run `rgt-tui pull {host.name}` and `rgt-tui verify {host.name}`",
        )
    record = load_verification(folder)
    if not record_of(record, manifest):
        return (
            {},
            manifest.box_id,
            f"no verification of the last pull — run `rgt-tui verify {host.name}`",
        )
    assert record is not None
    mtimes = {manifest.display(e.root, e.path): e.mtime for e in manifest.entries}
    found = {}
    for check in record.get("checks") or []:
        if not isinstance(check, dict):
            continue
        remote = check.get("remote")
        if (
            check.get("status") == "verified"
            and check.get("kind") in CHECKPOINT_KINDS
            and remote in mtimes
        ):
            found[remote] = mtimes[remote]
    return found, manifest.box_id, None


def record_of(record: dict[str, Any] | None, manifest: Manifest) -> bool:
    """Whether the verification record speaks about this very manifest."""
    about = record.get("manifest") if isinstance(record, dict) else None
    return verified_here(about, manifest)


def _queue_cells(host: HostConfig) -> tuple[str, ...]:
    """The cell names of the host's queue file (none without one)."""
    if host.queue is None:
        return ()
    from rgt_tui.services.queue.check import read_queue_file

    source = read_queue_file(host.queue, host=host.name, default_epochs=host.epochs)
    return tuple(dict.fromkeys(c.name for c in source.parsed.cells))


def _int(text: str) -> int | None:
    return int(text) if is_digits(text) else None


def _with(entry: Reclaimable, **changes: Any) -> Reclaimable:
    return replace(entry, **changes)


def audit_to_json(audit: DiskAudit) -> dict[str, Any]:
    """The ``disk --json`` object (paths are the box's text, as it sent them)."""

    def entry(e: Reclaimable) -> dict[str, Any]:
        return {
            "path": e.path, "kind": e.kind, "short": e.short, "bytes": e.bytes,
            "inodes": e.inodes, "superseded_by": e.superseded_by, "mtime": e.mtime,
            "held": e.held,
        }  # fmt: skip

    return {
        "host": audit.host,
        "home": audit.home,
        "mounts": [
            {
                "given": m.given,
                "resolved": m.resolved,
                "notes": list(m.notes),
                "folders": [entry(f) for f in m.folders],
            }  # fmt: skip
            for m in audit.mounts
        ],
        "hf_hubs": list(audit.hf_hubs),
        "hf_models": [entry(m) for m in audit.hf_models],
        "superseded_checkpoints": [entry(c) for c in audit.checkpoints],
        "pull_roots": list(audit.pull_roots),
        "notes": list(audit.notes),
    }
