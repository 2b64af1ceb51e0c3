"""Verify a host's pulled copy: every file hashed again, and loaded by type where it can be.

``verify_host`` reads the manifest kept with the results, then for each file:

- checks the local SHA-256 against the manifest's (different: a problem; a manifest
  entry without a hash is never verified);
- loads it by type: torch checkpoints with ``weights_only=True`` (a pickle needing
  arbitrary code is *unsafe*, never run) and JSON / JSONL by parsing, both in a separate
  process with memory and time limits (``verify_loader``: a huge or hostile file fails
  that file only); safetensors by header and ranges; anything else counts by hash only
  and is shown as such;
- flags zero-byte files, leftover ``*.tmp`` / ``*.part`` files (on the box, U6, or from
  an interrupted pull), files the manifest refused (symlinks out of the root...), and,
  after a quick re-scan of the box, files changed, added or removed since the manifest;
- reconciles the roster: each queue cell needs a verified artifact in its output folder.

An empty result set is never a success. The outcome is written atomically to
``<results_dir>/<host>/.rgt/verification.json`` (the teardown gate reads it); ``ok``
holds only when everything verified and the roster is complete.

Past 450 lines on purpose: hashes, loads, flags and the roster are one pass over the
manifest into one report (its text is report.py's).
"""

from __future__ import annotations

import asyncio
import errno
import os
import re
import shlex
import stat
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from rgt_tui.agent.secret_paths import skipped_by_rule
from rgt_tui.domain.artifacts import (
    CORRUPT,
    HASH_ONLY,
    HEAD_BYTES,
    MISSING,
    NOT_VERIFIED,
    VERIFIED,
    is_leftover,
    is_marker,
    kind_of,
)
from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.gate_fixes import garbled_fix
from rgt_tui.domain.manifest import (
    RECORDS_DIR,
    Manifest,
    ManifestDiff,
    ManifestEntry,
    ManifestError,
    compare,
)
from rgt_tui.domain.manifest_refusals import refusal_fix
from rgt_tui.domain.queue_file import writes_out
from rgt_tui.domain.queue_state import PENDING, RUNNING
from rgt_tui.domain.roster import (
    EMPTY_RESULTS,
    NEVER_RAN,
    NOT_RUN_AT_PULL,
    RosterCheck,
    in_outputs,
    output_prefixes,
    reconcile,
)
from rgt_tui.domain.teardown_gate import garbled_words, scan_garbled
from rgt_tui.domain.unfinished import UNFINISHED, is_unfinished
from rgt_tui.domain.units import fmt_bytes
from rgt_tui.services.manifest import SCAN_STALL_TIMEOUT_S, take_manifest
from rgt_tui.services.pull.plan import PulledRecord
from rgt_tui.services.reclaimed import lost_lines, reclaimed_here
from rgt_tui.services.records import (
    PARTS_DIR,
    REPLACED_DIR,
    atomic_write_json,
    host_results_dir,
    load_manifest,
    pull_running,
    verification_path,
)
from rgt_tui.services.result_code import ResultCode, load_result_code
from rgt_tui.services.verify import artifacts as checks
from rgt_tui.services.verify.claims import claims_kept
from rgt_tui.services.verify.loader import LoaderInfo, LoaderLimits, VerifyLoader
from rgt_tui.services.verify.report import file_problem, flag_problem, report_to_json
from rgt_tui.services.verify.types import ArtifactCheck, Flag, VerificationReport, VerifyProgress
from rgt_tui.transport.base import Transport

VERIFY_CONCURRENCY = 4


async def verify_host(
    host: HostConfig,
    results_dir: Path,
    *,
    transport: Transport | None = None,
    roster: Sequence[str] | None = None,
    on_progress: Callable[[VerifyProgress], None] | None = None,
    write_record: bool = True,
    python: str | None = None,
    limits: LoaderLimits | None = None,
    safe_globals: tuple[str, ...] = (),
    stall_timeout_s: float = SCAN_STALL_TIMEOUT_S,
    pulled_by: str | None = None,
) -> VerificationReport:
    """Verify ``<results_dir>/<host>/`` and record the outcome (see the module docstring).

    ``pulled_by``: the host whose pull brings this folder, where it is not ``host``
    itself (a group's further rank, ``pair.rank1``, is pulled by ``rgt-tui pull pair``:
    "run rgt-tui pull pair.rank1" named no host, a Slurm/groups hour s39 #9).

    ``transport`` (connected or not) is used for the quick re-scan of the box; without one
    the re-scan is skipped and the report says so. ``roster`` is the list of cell names;
    when None, the host's ``queue`` file is read for it. ``python`` is the interpreter that
    loads checkpoints and JSON (``Fleet.verify_python``; None: this one); ``limits`` bound
    what one file may cost it (None: limits from each file's size); ``safe_globals`` the
    globals a checkpoint may name (``Fleet.verify_safe_globals``). A re-scan that
    prints nothing for ``stall_timeout_s`` is stopped, and the report says why.
    """
    folder = host_results_dir(results_dir, host)
    if await asyncio.to_thread(pull_running, folder):
        # Its parts and manifest are half-way: a verdict now would be of a copy in the
        # making ("left by an interrupted pull"), and recorded for the gate. None is.
        problem = (
            f"a pull of {host.name} into {folder} is running: nothing was verified or "
            "recorded; verify once it ends"
        )
        report = await _finish(host, folder, None, (), (), None, False, [problem], False)
        return replace(report, recordable=False)
    try:
        manifest = await asyncio.to_thread(load_manifest, folder)
    except (ManifestError, OSError, ValueError, RecursionError) as exc:
        why = str(exc) if isinstance(exc, ManifestError) else f"cannot read the manifest: {exc}"
        return await _finish(host, folder, None, (), (), None, False, [why], write_record)
    if manifest is None:
        problem = (
            f"no manifest in {folder}: nothing was pulled — run "
            f"`rgt-tui pull {pulled_by or host.name}`"
        )
        return await _finish(host, folder, None, (), (), None, False, [problem], write_record)
    loader = VerifyLoader(python, limits, safe_globals)
    try:
        results = await _check_all(
            host.name, folder, manifest, on_progress, loader, pulled_by or host.name
        )
    finally:
        await asyncio.to_thread(loader.close)
    flags = await asyncio.to_thread(_flags, folder, manifest, results)  # walks the folder
    remote_checked = False
    added: set[str] | None = None  # local paths of files new on the box since the manifest
    if transport is not None:
        remote_flags, remote_checked, new = await _rescan(
            host, transport, manifest, stall_timeout_s
        )
        flags += remote_flags
        added = new if remote_checked else None
    cells, roster_problem = await asyncio.to_thread(_roster, host, roster)  # reads queue files
    statuses = {c.path: c.status for c in results}
    # What a reclaim deleted on the box after it verified has its only copy here: counted
    # for its cell while that copy still hashes as it did, named when it does not.
    here = await asyncio.to_thread(reclaimed_here, folder, manifest, time.time())
    statuses.update({f.local: f.status for f in here.intact})
    code = await asyncio.to_thread(load_result_code, folder)  # what made them (U42)
    if cells is None and code is not None and not code.problem and code.cells:
        # No queue file here (a block re-added, a queue launched from another checkout):
        # the cells the box's own records say ran there each need their results, or a
        # narrower pull opened the gate with a cell's results left behind (hour s19a #2).
        cells = [c.name for c in code.cells]
    rost = None
    if cells is not None:
        work = await _open_work(host, transport if remote_checked else None, code, cells)
        rost = reconcile(
            cells, manifest, host.durable_dir, statuses, work, writes_out=writes_out(host.run)
        )
    # A reclaimed file whose only copy is gone here: its cell is missing (the roster line,
    # which its acknowledgement settles), not "present" beside a problem line that no
    # acknowledgement settled (hour s20c #9); one of no cell is a problem of its own.
    others = []
    for path, line in lost_lines(here):
        cell = _cell_of(path, cells or (), manifest, host.durable_dir)
        if rost is not None and cell:
            rost = _lost_cell(rost, cell, line)
        else:
            others.append(line)
    if rost is not None and rost.present:
        # Its log, pulled after the listing, may name a save the listing predates (h491 #4).
        rost = await asyncio.to_thread(
            claims_kept,
            folder,
            manifest,
            rost,
            set(statuses),
            added=added,
            workdir=None if writes_out(host.run) else host.workdir,
        )
    problems = problem_lines(manifest, results, flags, rost, reclaimed=len(here.intact))
    problems += others
    if roster_problem:
        problems.append(roster_problem)
    return await _finish(
        host, folder, manifest, results, flags, rost, remote_checked, problems, write_record,
        loader.info, code, len(here.intact),
    )  # fmt: skip


def _lost_cell(rost: RosterCheck, cell: str, line: str) -> RosterCheck:
    """``rost`` with ``cell`` missing because the only copy of one of its files is gone."""
    why = f"its only copy of {line}"
    if any(name == cell for name, _ in rost.unfinished):
        return rost  # its run's state is the cause to say
    if any(name == cell for name, _ in rost.missing):
        # "no output directory … in the pulled copy" of a cell whose only copy was here
        # says neither what happened nor that a pull cannot bring it back.
        return replace(rost, missing=tuple((n, why if n == cell else w) for n, w in rost.missing))
    return replace(
        rost,
        present=tuple(n for n in rost.present if n != cell),
        missing=(*rost.missing, (cell, why)),
    )


def _cell_of(path: str, cells: Sequence[str], manifest: Manifest, durable_dir: str) -> str:
    """The cell whose outputs hold local ``path`` ("" for none)."""
    for name in cells:
        if path and in_outputs(path, name, output_prefixes(manifest, durable_dir, name)):
            return name
    return ""


async def _finish(
    host: HostConfig,
    folder: Path,
    manifest: Manifest | None,
    results: Sequence[ArtifactCheck],
    flags: Sequence[Flag],
    roster: RosterCheck | None,
    remote_checked: bool,
    problems: list[str],
    write_record: bool,
    loader: LoaderInfo | None = None,
    code: ResultCode | None = None,
    reclaimed: int = 0,
) -> VerificationReport:
    report = VerificationReport(
        host.name, folder, time.time(), manifest, tuple(results), tuple(flags), roster,
        remote_checked, tuple(problems), loader, code, reclaimed,
    )  # fmt: skip
    return await record_verification(report) if write_record else report


async def record_verification(report: VerificationReport) -> VerificationReport:
    """``report`` written as its folder's verification record, which the teardown gate
    reads; when it cannot be, the report says so among its problems. One that is not
    ``recordable`` is returned as it is."""
    if not report.recordable:
        return report
    folder = report.folder
    try:
        await asyncio.to_thread(
            atomic_write_json, verification_path(folder), report_to_json(report)
        )
    except OSError as exc:
        # With its fix, as a pull's unwritable folder has (s36 faults #5); a full disk's
        # is space, not permissions (hour s45b #3).
        fix = (
            "free space on that disk"
            if exc.errno in (errno.ENOSPC, errno.EDQUOT)
            else f"make {folder} writable (or set results_dir to a folder this login can write)"
        )
        why = (
            f"could not write the verification record {verification_path(folder)} "
            f"({exc.strerror or exc}): the verdict above is not kept, and the teardown "
            f"gate reads none — {fix}, then verify again"
        )
        report = replace(report, problems=(*report.problems, why))
    return report


async def _check_all(
    host: str,
    folder: Path,
    manifest: Manifest,
    on_progress: Callable[[VerifyProgress], None] | None,
    loader: VerifyLoader,
    puller: str,
) -> list[ArtifactCheck]:
    entries = sorted(manifest.entries, key=lambda e: manifest.local_relpath(e.root, e.path))
    total = sum(e.size for e in entries)
    done = [0, 0]
    sem = asyncio.Semaphore(VERIFY_CONCURRENCY)
    record = await asyncio.to_thread(PulledRecord.load, folder)
    here = _Folder(folder, manifest, loader, record, puller)

    async def one(entry: ManifestEntry) -> ArtifactCheck:
        async with sem:
            result = await asyncio.to_thread(_check_file, here, entry)
        done[0] += 1
        done[1] += entry.size
        if on_progress is not None:
            on_progress(VerifyProgress(host, done[0], len(entries), done[1], total))
        return result

    return list(await asyncio.gather(*(one(e) for e in entries)))


@dataclass(frozen=True)
class _Folder:
    """What every file's check of one folder reads: its manifest, the loader, the pull's
    record of what it wrote, and ``puller``, the host whose pull brings the folder (a
    group's, for its rank's)."""

    path: Path
    manifest: Manifest
    loader: VerifyLoader
    record: PulledRecord
    puller: str


def _check_file(here: _Folder, entry: ManifestEntry) -> ArtifactCheck:
    """Hash one local file and load it by type (blocking); no file's content can raise."""
    manifest = here.manifest
    rel = manifest.local_relpath(entry.root, entry.path)
    try:
        return _check_one(here, entry)
    except Exception as exc:  # a bug or an unforeseen file must cost that file only
        why = f"not verified: could not check it ({type(exc).__name__}: {exc})"
        remote = manifest.display(entry.root, entry.path)
        return ArtifactCheck(rel, remote, kind_of(rel), NOT_VERIFIED, why, entry.size, None)


def _check_one(here: _Folder, entry: ManifestEntry) -> ArtifactCheck:
    folder, manifest, loader, record, puller = (
        here.path,
        here.manifest,
        here.loader,
        here.record,
        here.puller,
    )
    rel = manifest.local_relpath(entry.root, entry.path)
    remote = manifest.display(entry.root, entry.path)
    path = folder / rel
    kind = kind_of(rel)

    def result(status: str, detail: str, sha: str | None = None, k: str = kind) -> ArtifactCheck:
        return ArtifactCheck(rel, remote, k, status, detail, entry.size, sha)

    move = f"mv {shlex.quote(str(path))} {shlex.quote(str(path) + '.mine')}"
    if path.is_symlink() or path.is_dir():
        # What the pull names as a CONFLICT, named alike: "run rgt-tui pull" could never
        # settle it (hour s34 CLI #7).
        what = "a link" if path.is_symlink() else "a folder"
        return result(
            MISSING,
            f"{what} is in the way here, and a pull never replaces it — move it away "
            f"({move}), then pull {remote} again",
        )
    if not path.is_file():
        # The command as it is pasted (h535 #4: "run `rgt-tui pull` for /…" was refused
        # as "name one HOST").
        return result(
            MISSING, f"not in the local copy — run `rgt-tui pull {puller}` (it brings {remote})"
        )
    # The pull checked each file's SHA-256 as it landed: a local copy that differs now
    # is not the box's (changed here, or written by something else), and a pull never
    # writes over it ("pull it again" looped against the pull's CONFLICT: hour s19a #5;
    # "changed here since it was pulled" of a file rgt-tui never wrote: hour s34 CLI #7).
    aside = (
        "this copy is not the box's (changed here, or written by something other than a "
        f"pull), and a pull never writes over it — move it away ({move}), then pull again"
    )
    st = path.stat()
    size = st.st_size
    if record.vouches(rel, st) not in (None, entry.sha256):
        # As an earlier pull left it, and the box's file changed since: the last pull did
        # not replace it (cut short, or the file was rewritten on the box while it came).
        # Not "changed here, move it away" (h533 #2): the next pull replaces it.
        aside = (
            "this copy is an earlier pull's, and the box's file changed since; the last "
            "pull did not bring the new one (cut short, or rewritten on the box while it "
            "came) — pull again (once the run stops rewriting it, if it still runs)"
        )
    if size != entry.size:
        return result(CORRUPT, f"local size {size} differs from the box's {entry.size}: {aside}")
    try:
        sha = checks.sha256_file(path)
        with open(path, "rb") as f:
            kind = kind_of(rel, f.read(HEAD_BYTES))
    except OSError as exc:
        return result(CORRUPT, f"cannot read it: {exc.strerror or exc}")
    if entry.sha256 is None:
        # Nothing ties this copy to the box's file: loading it would prove nothing.
        return result(
            NOT_VERIFIED,
            "not verified: the manifest has no SHA-256 for it, so this copy cannot be "
            "matched to the box's — pull again for a hashed manifest",
            sha,
            kind,
        )
    if sha != entry.sha256:
        return result(CORRUPT, f"SHA-256 differs from the box's: {aside}", sha, kind)
    try:
        if kind in ("torch", "json", "jsonl"):
            status, detail = loader.check(kind, path, size)
        elif kind == "safetensors":
            status, detail = checks.check_safetensors(path, size)
        else:
            status, detail = "hash-only", "checked by SHA-256 only (no loader for this type)"
    except OSError as exc:
        status, detail = CORRUPT, f"cannot read it: {exc.strerror or exc}"
    if status == CORRUPT and in_retry_aside(rel):
        # The box's bytes (its SHA-256 matched) of an attempt a retry set aside: not the
        # cell's results, so a load failure there is no gate problem (hour s23b #5: the
        # retry meant to fix a truncated checkpoint moved it into an aside folder, which
        # was pulled and failed verify again, and nothing settled it but a hand rm).
        return result(
            HASH_ONLY,
            f"does not load ({detail}), in a folder a retry set aside (an earlier attempt, "
            "not the cell's results): its bytes are the box's, so it counts by its hash",
            sha,
            kind,
        )
    if status == CORRUPT and kind == "torch":
        detail, earlier = _damaged(folder, rel, detail, loader)
        return replace(result(status, detail, sha, kind), earlier=earlier)
    return result(status, detail, sha, kind)


_RETRY_ASIDE = re.compile(r".+\.before-retry-\d{8}-\d{6}")


def in_retry_aside(rel: str) -> bool:
    """``rel`` lies in a folder a retry renamed aside (``<out>.before-retry-<time>``)."""
    return any(_RETRY_ASIDE.fullmatch(part) for part in rel.split("/")[:-1])


def _damaged(
    folder: Path, rel: str, why: str, loader: VerifyLoader
) -> tuple[str, tuple[str, str, int] | None]:
    """A checkpoint whose bytes are the box's (its SHA-256 matched) and does not load: the
    box's file is truncated or damaged (an interrupted save, a full disk there). Names the
    earlier copy a pull set aside in ``.rgt/replaced/`` when there is one, and whether it
    loads (issue ux-e 12); one that loads and still hashes to the name the pull gave it
    is returned too, as (path, SHA-256, size), for a resume move to start from."""
    text = (
        f"truncated or damaged on the box: it does not load as a checkpoint ({why}); this "
        "copy is the box's bytes (its SHA-256 matches) — if the run is still saving it, "
        "pull again once it is saved"
    )
    earlier = _set_aside(folder, rel)
    if earlier is None:
        return text, None
    shown = str(earlier.relative_to(folder))
    size = earlier.stat().st_size
    status, _ = loader.check("torch", earlier, size)
    if status != VERIFIED:
        return (
            f"{text}; an earlier copy is kept in {shown} (it does not load either: {status})",
            None,
        )
    sha = checks.sha256_file(earlier)
    # The pull named it <rel>.<the first 12 hex of its SHA-256>: a copy that no longer
    # hashes to its name changed here since, and is not offered to a resume.
    kept = (shown, sha, size) if earlier.name.endswith("." + sha[:12]) else None
    return f"{text}; your earlier copy, which loads, is kept in {shown}", kept


def _set_aside(folder: Path, rel: str) -> Path | None:
    """The copy of ``rel`` a pull set aside last in ``.rgt/replaced/`` (``<rel>.<sha12>``),
    or None. Never through a link: each is a regular file rgt-tui moved there."""
    aside = folder / RECORDS_DIR / REPLACED_DIR / rel
    try:
        names = [p for p in aside.parent.iterdir() if p.name.startswith(aside.name + ".")]
    except OSError:
        return None
    copies = []
    for path in names:
        try:
            st = path.lstat()
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            copies.append((st.st_ctime_ns, path))  # the rename that set it aside moved ctime
    return max(copies)[1] if copies else None


EMPTY_WORDS = (
    "zero-byte file: a save that wrote nothing — save it again on the box, or remove it "
    "there if it is no result, then pull and verify again"
)


def _flags(folder: Path, manifest: Manifest, results: Sequence[ArtifactCheck]) -> list[Flag]:
    # A marker's emptiness is its content (hour s25a #4: a `_SUCCESS` locked the gate
    # with no way out but deleting it on the box); its hash is checked as any file's.
    flags = [
        Flag("empty", c.path, EMPTY_WORDS) for c in results if c.size == 0 and not is_marker(c.path)
    ]
    flags += [
        Flag(
            "leftover",
            c.path,
            "an unfinished write left on the box (*.tmp / *.part; U6): no result — once "
            "nothing writes it, delete it on the box and here, then pull and verify again",
        )
        for c in results
        if is_leftover(c.path)
    ]
    known = {c.path for c in results}
    for rel in _local_leftovers(folder):
        if rel in known:
            continue
        if rel.startswith(PARTS_DIR + "/"):
            flags.append(Flag("unfinished", rel, "left by an interrupted pull — re-run the pull"))
        else:  # re-running never touches it: parts live in .rgt/parts/ now
            # Not this pull's (the manifest does not list it): most often a box's leftover
            # an earlier pull brought, whose folder moved since (a retry's set-aside); it
            # read "an older rgt-tui's part?" (hour s17a #7).
            why = (
                "a *.tmp / *.part here that the last pull did not bring (an earlier pull's "
                "copy of a box leftover, or put here by hand): no result — delete it here"
            )
            flags.append(Flag("unfinished", rel, why))
    flags += [
        # A secret (or rgt-tui's own state) skipped by rule is the pull doing its job:
        # shown, never a problem.
        Flag(
            "skipped" if skipped_by_rule(r.reason) else "refused",
            manifest.display(r.root, r.path),
            r.reason if skipped_by_rule(r.reason) else f"{r.reason} — {refusal_fix(r.reason)}",
        )
        for r in manifest.refused
    ]
    return flags


def _local_leftovers(folder: Path) -> list[str]:
    """Unfinished local files: the parts an interrupted pull keeps in ``.rgt/parts/``
    (by that path), and any ``*.part`` / ``*.tmp`` outside ``.rgt``."""
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        if Path(dirpath) == folder and RECORDS_DIR in dirnames:
            dirnames.remove(RECORDS_DIR)
        for name in filenames:
            if is_leftover(name):
                found.append(str((Path(dirpath) / name).relative_to(folder)))
    for dirpath, _, filenames in os.walk(folder / PARTS_DIR):
        found += [str((Path(dirpath) / name).relative_to(folder)) for name in filenames]
    return sorted(found)


async def rescan_box(
    host: HostConfig,
    transport: Transport,
    manifest: Manifest,
    stall_timeout_s: float = SCAN_STALL_TIMEOUT_S,
) -> ManifestDiff:
    """What changed on the box since ``manifest``: a quick re-scan by size and mtime.

    Raises TransportError when the box cannot be reached (ScanStalled, one, when the scan
    printed nothing for ``stall_timeout_s``) and ManifestError when the re-scan output is
    incomplete.
    """
    await transport.connect()
    now = await take_manifest(host, transport, hash_files=False, stall_timeout_s=stall_timeout_s)
    return compare(manifest, now)


async def _rescan(
    host: HostConfig, transport: Transport, manifest: Manifest, stall_timeout_s: float
) -> tuple[list[Flag], bool, set[str]]:
    """Flags for what changed on the box since the manifest (sizes and mtimes), whether
    the box was re-scanned, and the local paths of the files new there since."""
    try:
        diff = await rescan_box(host, transport, manifest, stall_timeout_s)
    except (TransportError, ManifestError) as exc:
        why = str(exc)
        if scan_garbled(why):
            # The box answered: its own output is at fault, and re-running settles nothing
            # (h618 #6). Said as the gate says it, without the host twice.
            why = f"{garbled_words(why)} — {garbled_fix(host.name, tui=False, then='verify again')}"
        return (
            [Flag("not-rechecked", host.name, f"could not re-scan the box: {why}")],
            False,
            set(),
        )
    flags = [
        Flag(
            "remote-changed",
            manifest.display(new.root, new.path),
            f"still being written on the box: pulled up to {fmt_bytes(old.size)} — pull "
            "again once it is finished"
            if old.growing
            # Each with its next step, as every other flag (h591 #5).
            else "changed on the box since the manifest — pull again for the box's version "
            "(the copy here is set aside in .rgt/replaced/, not lost), then verify",
        )
        for old, new in diff.changed
    ]
    # A file the manifest refused is flagged as refused already, with its fix: not "new".
    # (The re-scan walks the same pull list: its root indices are the manifest's.)
    refused = {(r.root, r.path) for r in manifest.refused}
    flags += [
        Flag(
            "remote-added",
            manifest.display(e.root, e.path),
            "new on the box since the manifest; not pulled — pull again, then verify",
        )
        for e in diff.added
        if (e.root, e.path) not in refused
    ]
    flags += [
        Flag(
            "remote-removed",
            manifest.display(e.root, e.path),
            "removed from the box since the manifest — the copy here is the only one now",
        )
        for e in diff.removed
    ]
    flags += [
        # A secret written after the pull (a .netrc) is skipped by rule, as the gate has it.
        Flag(
            "skipped" if skipped_by_rule(r.reason) else "refused",
            manifest.display(r.root, r.path),
            f"new since the manifest: {r.reason}"
            + ("" if skipped_by_rule(r.reason) else f" — {refusal_fix(r.reason)}"),
        )
        for r in diff.newly_refused
    ]
    return flags, True, {manifest.local_relpath(e.root, e.path) for e in diff.added}


async def _open_work(
    host: HostConfig, transport: Transport | None, code: ResultCode | None, cells: Sequence[str]
) -> dict[str, str]:
    """The cells whose run is unfinished or running, name → state, by the teardown gate's
    rule (``domain.unfinished.is_unfinished``, or running): from the box's queue records
    now, as the gate reads them; without the box, from the pull's record of them
    (``code.json``). Neither counts for the roster, whatever of it verified. Also the
    ``cells`` that never started (``NEVER_RAN``; offline, ``NOT_RUN_AT_PULL``), which
    the roster says so of, not "no output directory"."""
    if transport is not None:
        from rgt_tui.services.box_ctl import QueueError
        from rgt_tui.services.queue.view import read_queue_view

        try:
            view = await read_queue_view(host, transport)
        except (TransportError, QueueError, OSError, ValueError):
            view = None  # the pull's record below
        if view is not None:
            never = {
                c.name: NEVER_RAN
                for c in view.cells
                if c.status == PENDING and not c.attempts and not view.runner_alive
            }
            return never | {
                c.name: c.label for c in view.cells if c.status == RUNNING or is_unfinished(c, view)
            }
    if code is None:
        return {}
    # A cell with an attempt then (``read_result_code``); with none at all, no queue ran
    # there (outputs made by hand), and "no output directory" says what is known.
    ran = {c.name for c in code.cells}
    never = {n: NOT_RUN_AT_PULL for n in cells if n not in ran} if ran and not code.problem else {}
    return never | {c.name: c.status for c in code.cells if c.status in (*UNFINISHED, RUNNING)}


def _roster(host: HostConfig, roster: Sequence[str] | None) -> tuple[list[str] | None, str | None]:
    if roster is not None:
        return list(roster), None
    if host.queue is None:
        return None, None
    from rgt_tui.services.queue.check import read_queue_file

    source = read_queue_file(host.queue, host=host.name, default_epochs=host.epochs)
    problem = None
    if source.parsed.problems:
        problem = "queue file problems, roster may be incomplete: " + "; ".join(
            str(p) for p in source.parsed.problems[:3]
        )
    return [c.name for c in source.parsed.cells], problem


def problem_lines(
    manifest: Manifest,
    results: Sequence[ArtifactCheck],
    flags: Sequence[Flag],
    roster: RosterCheck | None,
    *,
    reclaimed: int = 0,
) -> list[str]:
    """A report's problems, one line each (``news_problems`` lists a subset of them);
    ``reclaimed``: files whose only copy is here (a reclaim deleted the box's), which
    make a manifest of no file no empty result set (hour s20c #1)."""
    problems = []
    if not manifest.entries and not reclaimed:
        roots = ", ".join(r.given for r in manifest.roots) or "(no pull roots)"
        problems.append(
            f"{EMPTY_RESULTS} under {roots} — an empty result set is never a success (with a "
            "queue: unless every cell is accepted, by name, as having none)"
        )
    problems += [file_problem(c) for c in results if not c.ok]
    problems += [flag_problem(f) for f in flags if f.kind != "skipped"]
    if roster is not None:
        problems += [f"cell {name} missing: {why}" for name, why in roster.missing]
    return problems


def news_problems(report: VerificationReport) -> list[str]:
    """The problems a periodic pull's news lists: while the queue runs, a running cell's
    files still change on the box and a pending one has none yet, so neither the box's
    changes since the manifest nor those cells are news (``verify`` and the teardown gate
    still count them: this only keeps a notification from crying wolf each pull)."""
    roster, manifest = report.roster, report.manifest
    if roster is None or manifest is None:
        return list(report.problems)
    waiting = {name for name, state in roster.unfinished if state in (RUNNING, PENDING)}
    if not any(state == RUNNING for _, state in roster.unfinished):
        return list(report.problems)
    flags = [f for f in report.flags if not f.kind.startswith("remote-")]
    missing = tuple((n, why) for n, why in roster.missing if n not in waiting)
    kept = problem_lines(
        manifest, report.checks, flags, replace(roster, missing=missing), reclaimed=report.reclaimed
    )
    every = problem_lines(manifest, report.checks, report.flags, roster, reclaimed=report.reclaimed)
    dropped = set(every) - set(kept)
    return [p for p in report.problems if p not in dropped]
