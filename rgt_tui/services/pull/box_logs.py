"""The box's queue and cell logs, brought beside the results by every pull (U20).

A spot or auto-released box takes its logs with it: the run's story (``queue.log``, each
cell's ``cells/NAME.log``, its ``.state`` record and OOM note) must outlive it. Every
pull also copies them from ``~/.rgt/queue`` into ``<results_dir>/<host>/.rgt/box-logs/``:
inside rgt-tui's own ``.rgt`` folder, where no pulled result can land (the manifest
refuses a name that folds to ``.rgt``), so they never collide with results, and ``verify``
and the teardown gate, which check the results manifest's files only, never count them.

They travel by the same stages as results (``run._pull_box_logs``): a manifest taken on
the box (no link followed, names checked by ``domain.manifest_parse``), the plan, the
resumable hash-checked copy into a tree of their own (its records and parts in
``box-logs/.rgt/``). Only the names below are taken, newest first, up to ``MAX_FILES``
and ``MAX_BYTES``; the box's links are never recreated. A log still being written
arrives as it was when listed (its first bytes hash the same). A cell log the caps leave
on the box has its last ``TAIL_BYTES`` kept beside where it would land
(``cells/NAME.log.tail``, ``keep_tails``): ``verify`` checks the log's last "saved" line
there, not in a copy an earlier pull left, which predates it (h511 #3: a 270 MB log
ending in a failed save read as verified against its stale 553-byte copy).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import re
from dataclasses import dataclass
from pathlib import Path

from rgt_tui.domain.manifest import Manifest
from rgt_tui.domain.saved_claims import TAIL_BYTES
from rgt_tui.domain.text import printable
from rgt_tui.domain.units import fmt_bytes
from rgt_tui.services.pull.local_tree import HostTree, LocalConflict
from rgt_tui.services.records import BOX_LOGS_DIR
from rgt_tui.transport.base import Transport

LOGS_ROOT = "~/.rgt/queue"  # the queue runner's folder (scripts/queue_ctl.sh: $q)
MAX_FILES = 2000
MAX_BYTES = 256 << 20  # per host: logs, not checkpoints; the newest first

_WANTED = re.compile(r"queue\.log|cells/[^/]{1,200}\.(?:log|state|oom)")
TAIL_SUFFIX = ".tail"  # a cell log's last bytes, when the log itself stays on the box
UNREAD_SUFFIX = ".unread"  # why those bytes could not be read at the last pull


@dataclass(frozen=True)
class BoxLogs:
    """What the logs step of a pull did; ``note`` says why some or none came."""

    folder: Path
    listed: int = 0  # log files taken from the box's listing
    pulled: int = 0  # brought this time (new or grown)
    bytes_received: int = 0
    failed: tuple[tuple[str, str], ...] = ()
    left_out: tuple[tuple[str, int], ...] = ()  # (name, size) over MAX_FILES / MAX_BYTES
    note: str = ""


def is_log(path: str) -> bool:
    """A name the logs step takes (relative to ``~/.rgt/queue``)."""
    return _WANTED.fullmatch(path) is not None


def select_logs(manifest: Manifest) -> tuple[Manifest, tuple[tuple[str, int], ...]]:
    """The listing cut to the log files, newest first within the caps, no links; with
    the names (and sizes) left out for the caps."""
    logs = sorted((e for e in manifest.entries if is_log(e.path)), key=lambda e: -e.mtime)
    kept, left_out, total = [], [], 0
    for entry in logs:
        if len(kept) >= MAX_FILES or total + entry.size > MAX_BYTES:
            left_out.append((entry.path, entry.size))
            continue
        kept.append(entry)
        total += entry.size
    cut = dataclasses.replace(manifest, entries=tuple(kept), links=(), refused=())
    return cut, tuple(left_out)


def left_out_note(left_out: tuple[tuple[str, int], ...]) -> str:
    """What the caps left on the box, by name and size: a queue.log over the cap is the
    run's whole story, not "older log files" (hour s20a #3)."""
    if not left_out:
        return ""
    shown = ", ".join(f"{printable(p, 120)} ({fmt_bytes(size)})" for p, size in left_out[:3])
    more = f" and {len(left_out) - 3} more" if len(left_out) > 3 else ""
    return (
        f"left on the box, over the cap of {fmt_bytes(MAX_BYTES)} of logs a pull brings: "
        f"{shown}{more} — copy what you need from ~/.rgt/queue before teardown"
    )


def logs_folder(tree: HostTree) -> Path:
    """``.rgt/box-logs`` under the host's folder, made one component at a time without
    following a link (a link there is replaced by a folder, as for results)."""
    os.close(tree.folder(BOX_LOGS_DIR, create=True))
    return tree.root / BOX_LOGS_DIR


def _cell_log(path: str) -> bool:
    return path.startswith("cells/") and path.endswith(".log")


MAX_TAILS = 64  # log ends read per pull, the newest logs first


async def keep_tails(
    transport: Transport,
    root: str,
    tree: HostTree,
    listing: Manifest,
    kept: Manifest,
    left_out: tuple[tuple[str, int], ...],
    failed: set[str],
) -> str:
    """Each cell log the caps left on the box (under ``root``, the box's logs folder),
    its last ``TAIL_BYTES`` read now into ``cells/NAME.log.tail``, stamped with the log's
    listed mtime so that an unchanged log is not read again; at most ``MAX_TAILS`` a pull.
    A log pulled whole this time (not among ``failed``, the local paths whose copy
    failed) drops its tail; a tail that could not be read again goes, rather than stand
    for the log's end (review h514 #8, #9). Returns what could not be read ("")."""
    mtimes = {e.path: e.mtime for e in listing.entries}
    unread = []
    # A record's name is the log's with a suffix: a box's log named near this disk's
    # limit (escaped control characters are four bytes each) leaves no room for one, and
    # its write failed the whole pull, every pull (h533 #1). Said by name instead.
    too_long = [
        p for p, _ in (*left_out, *((r.path, 0) for r in listing.refused))
        if _cell_log(p) and not _fits(tree, p)
    ]  # fmt: skip
    for path, listed in [p for p in left_out if _cell_log(p[0]) and _fits(tree, p[0])][:MAX_TAILS]:
        rel = path + TAIL_SUFFIX
        mtime = mtimes.get(path, 0.0)
        stamp = await asyncio.to_thread(_tail_stamp, tree, rel)
        if stamp is not None and abs(stamp - mtime) < 1e-3:
            continue  # the log has not changed since its end was read
        where = f"{root.rstrip('/')}/{path}"
        try:
            now = await transport.stat(where)
            size = now.size if now is not None else listed
            data = await transport.read_range(where, max(0, size - TAIL_BYTES), TAIL_BYTES)
            await asyncio.to_thread(_write_tail, tree, rel, data, mtime)
            await asyncio.to_thread(_drop_tail, tree, path + UNREAD_SUFFIX)
        except OSError as exc:  # the transport's file errors are OSErrors too
            # Said where verify looks, so that no older copy stands for the log's end (a
            # box that makes its log unreadable: review h516 #7).
            why = printable(exc, 200)
            await asyncio.to_thread(_drop_tail, tree, rel)
            await asyncio.to_thread(_write_tail, tree, path + UNREAD_SUFFIX, why.encode(), 0.0)
            unread.append(f"{printable(path, 120)} ({why})")
    whole = [
        e.path
        for e in kept.entries
        if _cell_log(e.path) and kept.local_relpath(e.root, e.path) not in failed
    ]
    # A log gone from the box's queue folder (a --fresh launch moved it aside) has no
    # end to stand for (review h516 #8): its tail would name a log the box lacks.
    # One the listing refused (unreadable, changed while hashed) is still there, and its
    # end unread: said where verify looks, never an older tail for it (review h524 #8,
    # h526 #8).
    refused = {r.path: r.reason for r in listing.refused if _cell_log(r.path)}
    for path, reason in [r for r in refused.items() if _fits(tree, r[0])][:MAX_TAILS]:
        why = printable(f"the box's listing refused it: {reason}", 200)
        await asyncio.to_thread(_drop_tail, tree, path + TAIL_SUFFIX)
        await asyncio.to_thread(_write_tail, tree, path + UNREAD_SUFFIX, why.encode(), 0.0)
    listed = set(mtimes) | set(refused)
    gone = [p for p in await asyncio.to_thread(_records, tree.root) if p not in listed]
    for path in whole + gone:
        for suffix in (TAIL_SUFFIX, UNREAD_SUFFIX):
            await asyncio.to_thread(_drop_tail, tree, path + suffix)
    said = []
    if unread:
        said.append("the end of a log left on the box could not be read: " + "; ".join(unread[:3]))
    if too_long:
        more = f" and {len(too_long) - 1} more" if len(too_long) > 1 else ""
        said.append(
            f"a cell log's name is too long to keep its end here: {printable(too_long[0], 120)}"
            f"{more} — it stays on the box; rename it there to read it"
        )
    return "; ".join(said)


def _fits(tree: HostTree, path: str) -> bool:
    """Room on this disk for the longest record of ``path``'s log (its ``.unread`` while
    it is written)."""
    last = path.rsplit("/", 1)[-1] + UNREAD_SUFFIX + ".part"
    return len(os.fsencode(last)) <= tree.name_max


@dataclass(frozen=True)
class LogsLeft:
    """The cell logs (``cells/NAME.log``) the last pull left on the box: ``tailed``, over
    the caps, their last ``TAIL_BYTES`` here; ``unread``, nothing of them here (their end
    could not be read, or the box's listing refused them: h533 #3 read "only the last
    512K of it is here" for those)."""

    tailed: tuple[str, ...] = ()
    unread: tuple[str, ...] = ()


def logs_left_on_box(host_folder: Path) -> LogsLeft:
    """The cell logs the last pull left on the box, as their records here name them: a
    teardown takes them with the box."""
    records = _records(host_folder / BOX_LOGS_DIR)
    return LogsLeft(
        tuple(p for p, suffix in records.items() if suffix == TAIL_SUFFIX),
        tuple(p for p, suffix in records.items() if suffix == UNREAD_SUFFIX),
    )


def _records(logs_folder: Path) -> dict[str, str]:
    """The cell logs (``cells/NAME.log``) whose end (``.tail``), or why it could not be
    read (``.unread``, which wins), is kept in ``logs_folder``; sorted by name."""
    cells = logs_folder / "cells"
    try:
        names = os.listdir(cells)
    except OSError:
        return {}
    # A log pulled whole drops both (``keep_tails``); an older whole copy beside a tail
    # is the log as it was, not as it is.
    records: dict[str, str] = {}
    for name in sorted(names):
        for suffix in (TAIL_SUFFIX, UNREAD_SUFFIX):
            if name.endswith(".log" + suffix):
                path = f"cells/{name.removesuffix(suffix)}"
                if records.get(path) != UNREAD_SUFFIX:
                    records[path] = suffix
    return dict(sorted(records.items()))


def _tail_stamp(tree: HostTree, rel: str) -> float | None:
    """The listed mtime a tail was stamped with (None: no tail)."""
    try:
        st = tree.lstat(rel)
    except (OSError, LocalConflict):
        return None
    return st.st_mtime if st is not None else None


def _write_tail(tree: HostTree, rel: str, data: bytes, mtime: float) -> None:
    """``data`` as ``rel`` in the logs tree, whole or not at all (tmp, fsync, rename;
    never through a link), stamped ``mtime``."""
    with tree.entry(rel, create=True) as (fd, name):
        part = f"{name}.part"
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        with os.fdopen(os.open(part, flags, 0o600, dir_fd=fd), "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.utime(part, (mtime, mtime), dir_fd=fd, follow_symlinks=False)
        os.replace(part, name, src_dir_fd=fd, dst_dir_fd=fd)


def _drop_tail(tree: HostTree, rel: str) -> None:
    """Remove ``rel`` (rgt-tui's own tail of a log now pulled whole), if it is there: a
    folder in its place is never the pull's failure."""
    with contextlib.suppress(OSError):
        tree.remove(rel)
