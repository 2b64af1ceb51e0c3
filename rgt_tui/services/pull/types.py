"""What a pull takes and returns, and how it fails (shared by the stages)."""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rgt_tui.domain.egress import EgressPrice
from rgt_tui.domain.manifest import Manifest
from rgt_tui.domain.manifest_refusals import unpulled, unpulled_line
from rgt_tui.domain.text import printable
from rgt_tui.domain.units import fmt_bytes, plural
from rgt_tui.services.records import RECORDS_DIR, REPLACED_DIR
from rgt_tui.transport.backoff import Backoff

if TYPE_CHECKING:
    from rgt_tui.services.pull.box_logs import BoxLogs
    from rgt_tui.services.pull.budget import Bandwidth
    from rgt_tui.services.result_code import ResultCode

DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
BULK_SSH = "through OpenSSH's ssh"  # PullResult.bulk: every large file came that way


@dataclass(frozen=True)
class PullOptions:
    """Tuning of a pull; the defaults suit a rented box across an ocean."""

    concurrency: int = 4  # large files copied at once over the host's one connection
    lanes_per_file: int = 2  # SFTP sessions fetching one large file's segments at once
    # Fewer of both on a link whose round trip does not need them (``width``); off: the
    # width above whatever the link (``pull --jobs N``).
    adapt_width: bool = True
    # SFTP reads in flight per large file: with OpenSSH's 255 KiB reads, 32 fill the 8 MiB
    # window of the file's own session (transport.ssh WINDOW_BYTES), and 4 files keep
    # ~32 MB in flight: a 200 ms round trip then does not cap a 1 Gbit/s link (25 MB).
    # It is also what replies out of order can hold in memory, per file.
    max_requests: int = 32
    block_size: int | None = None  # bytes per SFTP read; None: the server's largest
    small_file: int = 1 << 20  # below this, files travel many per round trip (tar)
    # The box's scan printing no line for this long fails the pull (it is stuck); the
    # copy receiving no byte for this long reconnects and resumes.
    stall_timeout_s: float = 30.0
    max_attempts: int = 8  # consecutive connection failures without progress
    backoff: Backoff = Backoff(base=0.5, cap=20.0)
    margin_fraction: float = 0.05  # free space must cover remaining + max(5 %, 1 GiB)
    margin_min_bytes: int = 1 << 30
    progress_interval_s: float = 0.2
    fsync: bool = True  # flush each file to disk before it counts as pulled
    # The bandwidth budget this pull shares with every other pull of the process
    # (``budget.shared_budget``: --bwlimit, [fleet] pull_rate_mbit); None: unlimited.
    budget: Bandwidth | None = None
    # Also bring the box's queue and cell logs into ``.rgt/box-logs/`` (``box_logs``).
    box_logs: bool = True
    # The small files' tar stream compressed on the box (U15, ``tar_squeeze``): "auto"
    # when it pays (text-heavy, a link slower than the codec), "on" always, "off" never.
    compress: str = "auto"
    # Large files through OpenSSH's ``ssh`` where it is sound (``bulk``): "auto" from a
    # near box, "ssh" whatever the round trip, "sftp" never (``pull --bulk``).
    bulk: str = "auto"


@dataclass(frozen=True)
class PulledFile:
    """One file this run brought in."""

    path: str  # relative to the host's results folder
    size: int
    sha256: str
    resumed_from: int  # bytes that were already in its part
    received: int  # bytes read from the box for it in this run (restarts included)
    # Where rgt-tui's earlier copy of it went (``.rgt/replaced/…``, relative to the host's
    # results folder), when this pull replaced one; None: nothing was there.
    replaced: str | None = None


@dataclass(frozen=True)
class TarStream:
    """One tar stream of small files: its codec (``none``: plain tar), the bytes that
    crossed the wire and the tar bytes they made here, and why that codec (U15)."""

    codec: str
    wire: int
    tar: int
    reason: str


@dataclass(frozen=True)
class PullResult:
    """What a pull did; ``ok`` only when every manifest file is here with its hash and
    nothing under the pull roots was refused but what is skipped by rule."""

    host: str
    dest: Path
    manifest: Manifest
    pulled: tuple[PulledFile, ...]
    skipped: tuple[str, ...]  # already here with a matching hash
    failed: tuple[tuple[str, str], ...]  # (path, why)
    conflicts: tuple[tuple[str, str], ...]  # local things in the way, left alone
    bytes_received: int
    elapsed_s: float
    copy_s: float = 0.0  # of which the copy stage (bytes_received / copy_s: its rate)
    # Which code each queue cell ran, read from the box at the pull (U42; result_code).
    code: ResultCode | None = None
    # The box's queue and cell logs, brought into .rgt/box-logs/ (box_logs; never results).
    box_logs: BoxLogs | None = None
    # Files a reclaim deleted on the box after they verified, whose only copy is here
    # (services.reclaimed): results, though the box no longer lists them.
    reclaimed: int = 0
    # The plan's bytes to move (files not here yet, less what their parts hold) and the
    # price per GB they leave the box at (U14: the plan's cost line).
    to_move: int = 0
    # Files pulled again from zero after a hash mismatch: (local path, bytes, why). They
    # crossed the link twice; ``moved`` counts them (h521 #2: the summary read low).
    again: tuple[tuple[str, int, str], ...] = ()
    egress: EgressPrice | None = None

    @property
    def moved(self) -> int:
        """What left the box: the plan's bytes and those pulled again from zero; of a
        pull where files failed, no more than what came (h563 #3: a pull cut at half
        said the whole plan was transferred, and its resume counted the rest again)."""
        planned = self.to_move + sum(n for _, n, _ in self.again)
        return min(planned, self.bytes_received) if self.failed else planned

    tar_streams: tuple[TarStream, ...] = ()  # the small files' streams (U15)
    # (remote root, local folder before, now) of roots whose files moved here since the
    # last pull (the pull list changed): the earlier copies stay, the files came again.
    moved_roots: tuple[tuple[str, str, str], ...] = ()
    # Where the pull's time went, in order (issue 44): ("handshake", s) until the box first
    # answered, ("listing", s) until the first copy started, ("copy", s), ("tail", s) for
    # the records and the box logs after it; ("manifest", s) is when the box's hashes were
    # whole, counted from the start (it overlaps the copy). Empty when a stage never began.
    stages: tuple[tuple[str, float], ...] = ()
    # Large files copied at once × SFTP sessions each, and the round trip that chose it
    # (``width``); None when no large file was copied.
    width: tuple[int, int] | None = None
    width_rtt_s: float | None = None
    # How the large files came: ``BULK_SSH``, through it until one failed ("through
    # OpenSSH's ssh until PATH (why), then SFTP"), or why not through it (``bulk``); None
    # when no file large enough was copied.
    bulk: str | None = None
    # The round trip that decided it (the quickest of a few stats; None: not probed).
    bulk_rtt_s: float | None = None
    # (copies, bytes) that .rgt/replaced/ holds after this pull, counted only when the
    # pull set a copy aside there: kept for good, so a checkpoint pulled again and again
    # fills the disk unless the summary says how much is there (a user's hour).
    set_aside: tuple[int, int] | None = None

    @property
    def shortfalls(self) -> tuple[str, ...]:
        """What the pull was asked for and did not get, though no file failed: a pull
        root the box refused (no such folder, a secret), a file under a root refused by
        name (a control character in its name, unreadable: ``manifest_refusals``; never
        one skipped by rule, a secret or rgt-tui's own records) and a manifest with no
        file. Each says how to settle it."""
        m = self.manifest
        out = [
            f"pull root {r.given}: {r.error}; nothing under it was pulled (fix the host's "
            "pull list in the fleet file, or the folder on the box)"
            for r in m.roots
            if r.error
        ]
        out += [unpulled_line(m, r) for r in unpulled(m)]
        if not m.entries and not self.reclaimed:
            roots = ", ".join(r.given for r in m.roots) or "(no pull roots)"
            out.append(
                f"nothing was pulled: the box lists no file under {roots} (an empty result "
                "set is never a success)"
            )
        return tuple(out)

    @property
    def growing(self) -> tuple[tuple[str, int], ...]:
        """(local path, bytes here) of each file the box was still writing when it hashed
        it: here up to that size, its hash matched; the next pull brings the rest."""
        m = self.manifest
        here = {f.path for f in self.pulled} | set(self.skipped)
        return tuple(
            (local, e.size) for local, e in m.by_local_path().items() if e.growing and local in here
        )

    @property
    def notices(self) -> tuple[tuple[str, str], ...]:
        """(label, text) of what a user must know though nothing failed: rgt-tui's earlier
        copy of a file the box changed (kept, never deleted: REPLACED) and each file pulled
        only up to what the box had written when it hashed it (GROWING), a file pulled
        again whole after a hash mismatch (AGAIN). One wording for the command's summary
        and the Pulls tab."""
        replaced = [
            ("REPLACED", f"{f.path}: changed on the box; your earlier copy is kept in {f.replaced}")
            for f in self.pulled
            if f.replaced
        ]
        growing = [
            (
                "GROWING",
                f"{path}: still being written on the box; pulled up to {fmt_bytes(size)} (as "
                "it was when hashed; the next pull brings the rest)",
            )
            for path, size in self.growing
        ]
        if replaced and self.set_aside is not None:
            count, size = self.set_aside
            replaced.append(
                (
                    "KEPT",
                    f"{RECORDS_DIR}/{REPLACED_DIR}/ holds {plural(count, 'earlier copy', 'earlier copies')} "
                    f"({fmt_bytes(size)}) in all, never deleted by rgt-tui: delete those "
                    "you no longer need",
                )
            )
        moved = [
            (
                "MOVED",
                f"{root}: its files now land in {_folder(now)} (was {_folder(was)}): the "
                "host's pull list changed, so they came again; the earlier copies stay "
                f"in {_folder(was)} — delete them once you no longer need them",
            )
            for root, was, now in self.moved_roots
        ]
        failed = {path for path, _ in self.failed}  # its FAILED line says what became of it
        again = [  # a part thrown away is said, never silent (h521 #2)
            ("AGAIN", f"{path} ({fmt_bytes(nbytes)}) came again whole: {why}")
            for path, nbytes, why in self.again
            if path not in failed
        ]
        return (*moved, *replaced, *again, *growing)

    @property
    def ok(self) -> bool:
        """Every file asked for is here: none failed or in conflict, no shortfall."""
        return not self.failed and not self.conflicts and not self.shortfalls


class PullError(Exception):
    """A pull stopped: ``message`` says what happened, ``fix`` what the user can do."""

    def __init__(self, message: str, fix: str | None = None) -> None:
        self.message = message
        self.fix = fix
        self.result: PullResult | None = None  # what was done, when the pull got that far
        super().__init__(message + (f" — {fix}" if fix else ""))


class PullBusy(PullError):
    """Another pull of the same host into the same folder is running (any process)."""


class NotEnoughSpace(PullError):
    """Free local space does not cover what remains to pull plus the margin."""

    def __init__(
        self,
        folder: Path,
        needed: int,
        available: int,
        remaining: int,
        aside: tuple[int, int] = (0, 0),
        biggest: tuple[str, int] | None = None,
    ) -> None:
        self.folder, self.needed, self.available = folder, needed, available
        self.remaining = remaining
        # The file that needs most, when it is most of it: one sparse or runaway file of
        # 1 TB among thousands read as "free 1016G" with nothing to say which (h591 #4).
        big = ""
        if biggest is not None and biggest[1] * 2 >= needed:
            name, size = biggest
            big = f"; of it, {printable(name, 200)} alone is {fmt_bytes(size)}"
        count, size = aside
        kept = (
            f" ({RECORDS_DIR}/{REPLACED_DIR}/ there holds "
            f"{plural(count, 'earlier copy', 'earlier copies')}, {fmt_bytes(size)}, that pulls "
            "set aside and never delete: delete those you no longer need)"
            if count
            else ""
        )
        super().__init__(
            f"not enough local space in {folder}: the pull needs {fmt_bytes(needed)} "
            f"({fmt_bytes(remaining)} still to pull plus the safety margin{big}), "
            f"{fmt_bytes(available)} is free; nothing was pulled",
            f"free at least {fmt_bytes(needed - available)} there{kept}, or expand the disk, "
            "then re-run (a subset is never pulled silently)"
            + (
                " — or, if that file is not a result, move it out of the pull on the box"
                if big
                else ""
            ),
        )


class NotEnoughInodes(PullError):
    """The local file system cannot create as many files as the pull needs (U7)."""

    def __init__(self, folder: Path, needed: int, available: int) -> None:
        super().__init__(
            f"not enough free inodes in {folder}: the pull creates up to {needed} files and "
            f"folders, {plural(available, 'inode is', 'inodes are')} free; nothing was pulled",
            "free inodes (delete many small files) or pull to another disk (results_dir)",
        )


class LocalDiskFull(PullError):
    """The local disk filled up while a file was being written."""

    def __init__(self, path: Path, folder: Path) -> None:
        self.path, self.folder = path, folder
        # rgt-tui's own record (the manifest): "this file" read as a result (hour s45b #8).
        what = (
            "this pull's record is not written, so nothing of it counts as pulled"
            if path.parent.name == ".rgt"  # its records; a result's part is in .rgt/parts
            else "this file is NOT marked pulled"
        )
        inodes = _out_of_inodes(folder)
        super().__init__(
            f"local disk {'out of inodes' if inodes else 'full'} while writing {path} (in "
            f"{folder}); partial files are kept and {what}",
            # `df -h` showed free space, and "free space" misled the user (h563 #4).
            "delete many small files on that disk (df -i shows its inodes), then re-run the "
            "same pull to resume"
            if inodes
            else "free space on that disk (or expand it), then re-run the same pull to resume",
        )


def disk_of(folder: Path) -> os.statvfs_result | None:
    """statvfs of the disk ``folder`` is or will be on: its nearest folder that exists.

    A pull's folders may not exist yet (the first pull of a host), so the space and
    inode checks before it and the words after a full disk both read the nearest one.
    """
    for place in (folder, *folder.parents):
        try:
            return os.statvfs(place)
        except OSError:
            continue
    return None


def _out_of_inodes(folder: Path) -> bool:
    """Whether the disk of ``folder`` has no inode left for us (with blocks to spare)."""
    st = disk_of(folder)
    return st is not None and st.f_files > 0 and st.f_favail == 0 and st.f_bavail > 0


class LocalWriteError(Exception):
    """A local file operation failed (kept apart from the box's errors)."""

    def __init__(self, path: Path, exc: OSError) -> None:
        self.path, self.exc = path, exc
        super().__init__(f"cannot write {path}: {exc.strerror or exc}")

    @property
    def disk_full(self) -> bool:
        return self.exc.errno in DISK_FULL_ERRNOS

    def to_pull_error(self, dest: Path) -> PullError:
        if self.disk_full:
            return LocalDiskFull(self.path, dest)
        return PullError(str(self), "check the local folder's permissions and disk")


def unwritable_results(dest: Path, exc: OSError) -> PullError:
    """The host's results folder cannot be made or written: nothing was asked of the box."""
    if exc.errno in DISK_FULL_ERRNOS:
        return LocalDiskFull(Path(exc.filename or dest), dest)
    elsewhere = "or set results_dir under [fleet] in the fleet file to a folder you can write"
    if isinstance(exc, NotADirectoryError | FileExistsError):  # a file where a folder goes
        path = Path(exc.filename) if exc.filename else dest
        blocker = next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), None)
        if blocker is not None:
            return PullError(
                f"cannot write to {dest}: {blocker} is a file, not a folder; nothing was pulled",
                f"move that file away, {elsewhere}",
            )
    where = exc.filename or dest  # the very folder or file refused (the lock, its folder)
    return PullError(
        f"cannot write to {where}: {exc.strerror or exc}; nothing was pulled",
        f"make that folder writable, {elsewhere}",
    )


class FileFailed(Exception):
    """One file cannot be pulled (the box's copy changed, a refusal): named, the rest go on."""


def _folder(label: str) -> str:
    """A pull root's local folder, as a notice names it."""
    return f"{label}/" if label else "the host's folder"
