"""A whole pull: manifest → plan → copy → finalise, with reconnects and a stall watch.

One ``PullRun`` carries the state from stage to stage. Connection failures retry by the
fleet connections' one reconnect loop (``connections.connect_with_backoff``: capped,
jittered backoff, the count starting again whenever bytes came in between; ``wait`` is
the host's wakeable wait in the TUI, so ``r`` cuts it short); no bytes for
``stall_timeout_s`` drops the connection so every read fails and resumes from its part.
A full local disk stops the pull with the file and folder named; parts stay.

The stages overlap where a far box makes each wait a round trip (docs/pulls.md,
"Overlap"): the copy's SFTP sessions open with the scan, files start copying when the box
has listed them, while it still hashes (``early.py``), and the box's code records and
queue logs come beside the copy (``_Beside``). Over 450 lines on purpose: the order of
the stages, what overlaps what and how each failure is retried read as one.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import posixpath
import time
from collections.abc import Awaitable, Callable, Iterator
from functools import partial
from pathlib import Path

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.egress import egress_price
from rgt_tui.domain.errors import HostKeyError, TransportError
from rgt_tui.domain.manifest import Manifest, ManifestEntry, ManifestError, moved_roots
from rgt_tui.domain.text import printable
from rgt_tui.domain.units import plural
from rgt_tui.fsutil import LockBusy, file_lock
from rgt_tui.profiles import profile as load_profile
from rgt_tui.services.connections import connect_with_backoff
from rgt_tui.services.manifest import ScanStalled, take_manifest
from rgt_tui.services.pull.box_logs import (
    LOGS_ROOT,
    BoxLogs,
    keep_tails,
    left_out_note,
    logs_folder,
    select_logs,
)
from rgt_tui.services.pull.copy import copy_files, together
from rgt_tui.services.pull.early import EarlyCopy
from rgt_tui.services.pull.local_tree import HostTree, LocalConflict, in_thread
from rgt_tui.services.pull.other_box import other_box_refusal
from rgt_tui.services.pull.plan import (
    FilePlan,
    PulledRecord,
    PullPlan,
    check_space,
    links_made,
    plan_pull,
    set_aside_size,
)
from rgt_tui.services.pull.progress import ProgressTracker, PullProgress
from rgt_tui.services.pull.state import PullRun, stall_watch
from rgt_tui.services.pull.types import (
    LocalWriteError,
    PullBusy,
    PullError,
    PullOptions,
    PullResult,
    unwritable_results,
)
from rgt_tui.services.reclaimed import reclaimed_count
from rgt_tui.services.records import (
    PARTS_DIR,
    REPLACED_DIR,
    host_results_dir,
    load_manifest,
    pull_lock_path,
    records_dir,
    save_manifest,
)
from rgt_tui.services.result_code import ResultCode, read_result_code, save_result_code
from rgt_tui.timeouts import within
from rgt_tui.transport.base import Transport

log = logging.getLogger(__name__)


async def pull_host(
    host: HostConfig,
    results_dir: Path,
    transport: Transport,
    *,
    options: PullOptions | None = None,
    on_progress: Callable[[PullProgress], None] | None = None,
    wait: Callable[[float], Awaitable[object]] = asyncio.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> PullResult:
    """Pull every file under the host's pull roots into ``<results_dir>/<host>/``.

    Raises PullError (``NotEnoughSpace``, ``LocalDiskFull``, another pull running, the
    connection lost for good, the manifest unreadable) with ``message`` and ``fix``; its
    ``result`` holds what was done, when the pull got that far. Files that fail on their
    own (changed on the box, refused, hash mismatch twice) are in ``result.failed``.
    ``wait`` sleeps between reconnect attempts (the TUI passes the host's
    ``FleetConnections.waiter``, which ``wake`` ends early). ``clock`` times the
    progress's rate and ETA (a test gives the bandwidth budget's clock).
    """
    if host.pull_refused:  # no pull folders named, and the default is the whole home
        # Nothing to re-run: the fleet file must name the folders (the message says how).
        raise PullError(host.pull_refused, fix=f"name {host.name}'s pull folders in the fleet file")
    options = options or PullOptions()
    dest = host_results_dir(results_dir, host)
    tracker = ProgressTracker(
        host.name, _guarded(on_progress), interval=options.progress_interval_s, clock=clock
    )
    with _pull_lock(dest, host.name):
        try:  # a mkdir and an open, as the lock above: not worth a thread
            tree = HostTree(dest)
        except OSError as exc:
            raise unwritable_results(dest, exc) from None
        try:
            record = await asyncio.to_thread(PulledRecord.load, dest)
            run = PullRun(host, dest, transport, options, tree, record, tracker, wait=wait)
            run.egress = egress_price(host, load_profile(host.profile))  # U14
            beside = _Beside(run)
            try:
                return await _run(run, beside)
            finally:
                await beside.cancel()
        finally:
            tree.close()


class _Beside:
    """What runs beside the scan and the copy, each a round trip a far box would make the
    pull wait for: the copy's SFTP sessions, the box's code records and the pull of its
    queue logs (once: after a lost connection the pull does again what these did not
    finish)."""

    def __init__(self, run: PullRun) -> None:
        self.run = run
        self.warming: asyncio.Future | None = None
        self.code: asyncio.Future | None = None
        self.logs: asyncio.Future | None = None

    def start(self) -> None:
        """On a connected transport (again after a reconnect, for what ended)."""
        run = self.run
        per_file = run.options.lanes_per_file
        lanes = range(1, 1 + run.options.concurrency * per_file)
        if self.warming is None or self.warming.done():
            self.warming = asyncio.ensure_future(run.transport.open_lanes(lanes))

    def after_scan(self) -> None:
        """The code records and the queue logs' pull, beside the results' copy. Not beside
        the scan: a box allows 10 sessions on a connection by default, and the lanes, the
        scan and the early copies' tar stream take them all until the scan ends."""
        run = self.run
        if self.code is None:
            self.code = _quiet(asyncio.ensure_future(read_result_code(run.host, run.transport)))
        if self.logs is None and run.options.box_logs:
            self.logs = _quiet(asyncio.ensure_future(_pull_box_logs(run, once=True)))

    async def result_code(self) -> ResultCode:
        """The box's code records (U42), read again when the first read could not (a
        drop while the files were copied, or no session for it in time)."""
        code = await self.code if self.code is not None else None
        if code is None or code.problem:
            code = await read_result_code(self.run.host, self.run.transport)
        return code

    async def box_logs(self) -> BoxLogs | None:
        """The queue logs' pull; done again when a lost connection cut it off."""
        if not self.run.options.box_logs:
            return None
        logs = await self.logs if self.logs is not None else None
        return logs if logs is not None else await _pull_box_logs(self.run)

    async def cancel(self) -> None:
        for task in (self.warming, self.code, self.logs):
            if task is not None and not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)


def _quiet(task: asyncio.Future) -> asyncio.Future:
    """A side task whose error, when nobody awaits it (the pull failed first), is not
    reported as never retrieved."""
    task.add_done_callback(lambda t: t.cancelled() or t.exception())
    return task


async def _run(run: PullRun, beside: _Beside) -> PullResult:
    early: EarlyCopy | None = None
    try:
        run.tracker.set_phase("manifest", "listing and hashing files on the box")
        previous = await asyncio.to_thread(_previous, run.dest)
        # On this machine there is no link to save, and the results folder may be under
        # a pull root (refused below, before anything is written).
        early = None if run.host.is_local else EarlyCopy(run, previous)
        # A name this machine cannot write is refused by name, as the box's bad names are.
        run.manifest = await _local(run.tree.writable, await _take_manifest(run, beside, early))
        run.mark("manifest")
        if early is not None:
            await early.until_planned()  # no early copy starts after this
        beside.after_scan()
        if run.host.is_local:
            _refuse_nested(run.dest, run.manifest)
        if (refused := other_box_refusal(previous, run.manifest, run.dest)) is not None:
            raise refused  # no listing came first (a local host): said on the manifest
        await _local(save_manifest, run.dest, run.manifest)
        run.moved = moved_roots(previous, run.manifest)
        final = run.manifest.by_local_path()
        started = early.plans if early is not None else {}
        if not started:
            run.tracker.set_phase("planning", "checking files already here")
        rest = dataclasses.replace(
            run.manifest,
            entries=tuple(e for local, e in final.items() if local not in started),
        )
        plan = await _local(plan_pull, run.tree, rest, previous, run.record)
        _note_plan(run, plan.files)
        # The bytes to move and their egress cost (U14), again: the exact plan's.
        moving = sum(p.entry.size - p.resume_from for p in plan.to_pull)
        moving += sum(final[k].size - p.resume_from for k, p in started.items() if k in final)
        run.announce_move(moving)
        margin = {
            "margin_fraction": run.options.margin_fraction,
            "margin_min": run.options.margin_min_bytes,
        }
        if started:
            # The early copies started because every listed byte fit; a box whose files
            # are larger than it listed (they grew, or it lied) is checked again, exactly,
            # before any file is installed.
            await _local(_check_space_again, run, final, started, plan, margin)
            run.checked.set_result(final)  # type: ignore[union-attr]  # early files may land
            run.tracker.set_phase("pulling")  # no longer "still hashing"
        else:
            await _local(lambda: check_space(run.dest, plan, **margin))
            run.tracker.set_phase("pulling")
        copy_started = early.started if early is not None and early.started else time.monotonic()
        run.mark("copying", copy_started)
        if early is not None:
            # together: a failure of either (a full disk) cancels the other at once.
            await together([_early(run, early), _copy_with_retries(run, list(plan.to_pull))])
            resume, gone = early.unfinished(final)
            await _local(_remove_parts, run, gone)
            if resume:  # cut off by a drop, or the listing was not the manifest
                if run.stalled:
                    run.tracker.all_files_state("retrying", run.stalled)
                await _copy_with_retries(run, await _local(_resume_points, run, resume))
        else:
            await _copy_with_retries(run, list(plan.to_pull))
        _say_dropped_parts(run, [*plan.files, *(p for k, p in started.items() if k in final)])
        for local in final.keys() - run.finished:  # never a file silently left out
            run.failed[local] = "not copied (lost track of it in this run); re-run the pull"
        run.copy_s = time.monotonic() - copy_started
        run.mark("copied", copy_started + run.copy_s)
        run.tracker.set_phase("finishing")
        # The code that made these results (U42), kept beside them for the summary and
        # verify: read while the files were copied.
        code = await beside.result_code()
        await _local(save_result_code, run.dest, code)
        run.conflicts += await _local(_make_links, run.tree, run.manifest, previous)
        # The parts of every listed file, the early copies' too (review h594 #6: their
        # failed files' parts were dropped, and the next pull started them from zero).
        kept = {f.part for f in plan.files} | {p.part for k, p in started.items() if k in final}
        await _local(_drop_stray_parts, run.tree, kept)
        await _local(run.record.save, run.dest)
    except PullError as exc:
        await _settle(run, early)  # what the early copies installed is in the record first
        with contextlib.suppress(OSError):  # on a full disk even the record may not fit
            await asyncio.to_thread(run.record.save, run.dest)
        if run.manifest is not None or run.listing is not None:
            exc.result = run.result()
        run.tracker.set_phase("failed", exc.message)
        raise
    except BaseException:  # Ctrl-C, a cancelled worker: parts stay, the record is kept
        # An early copy past its install gate finishes its install (in_thread) while it is
        # cancelled: saved before it ended, the record missed that file, and the next pull
        # took rgt-tui's own copy for someone else's (a CONFLICT).
        await asyncio.shield(_settle(run, early))
        with contextlib.suppress(OSError):
            await asyncio.shield(asyncio.to_thread(run.record.save, run.dest))
        raise
    finally:
        await _settle(run, early)
    logs = await beside.box_logs()
    reclaimed = await asyncio.to_thread(reclaimed_count, run.dest, run.manifest)
    result = dataclasses.replace(run.result(), code=code, box_logs=logs, reclaimed=reclaimed)
    if any(f.replaced for f in result.pulled):
        aside = await asyncio.to_thread(set_aside_size, records_dir(run.dest) / REPLACED_DIR)
        result = dataclasses.replace(result, set_aside=aside)
    run.tracker.set_phase(_final_phase(result))
    return result


def _final_phase(result: PullResult) -> str:
    """The last phase a pull that ran to its end shows: ``done`` when complete,
    ``failed`` when a file failed, else ``incomplete`` (nothing failed, yet something is
    not here: a refused name, a local conflict; ux-i 7: it said "failed 19/19")."""
    if result.ok:
        return "done"
    return "failed" if result.failed else "incomplete"


async def _settle(run: PullRun, early: EarlyCopy | None) -> None:
    """End the early copies: the install gate's waiters end (nothing more lands), and
    each copy is over, its install recorded or its part kept. Idempotent."""
    if run.checked is not None and not run.checked.done():
        run.checked.cancel()
    if early is not None:
        await early.cancel()  # nothing unchecked was installed: the parts stay


async def _early(run: PullRun, early: EarlyCopy) -> None:
    """Until the early copies are over; a local write failure among them stops the pull."""
    try:
        await early.wait()
    except LocalWriteError as exc:
        raise exc.to_pull_error(run.dest) from exc


def _check_space_again(
    run: PullRun,
    final: dict[str, ManifestEntry],
    started: dict[str, FilePlan],
    rest: PullPlan,
    margin: dict,
) -> None:
    """NotEnoughSpace / NotEnoughInodes when the complete manifest holds more than the
    listing the early copies were let start on, and what is left no longer fits."""
    assert run.listing is not None
    listed = run.listing.by_local_path()
    if all(local in listed and e.size <= listed[local].size for local, e in final.items()):
        return  # nothing grew: the check made on the listing holds
    left = list(rest.to_pull)
    for local, plan in started.items():
        entry = final.get(local)
        if entry is None:
            continue
        try:
            part = run.tree.lstat(plan.part)
        except LocalConflict:
            part = None
        done = part.st_size if part is not None and part.st_size <= entry.size else 0
        left.append(dataclasses.replace(plan, entry=entry, resume_from=done))
    check_space(run.dest, PullPlan(tuple(left)), **margin)


# Why a part kept from a cut pull was thrown away by the plan (an AGAIN line's words).
DROPPED_PART = "the box's file changed since the part was kept"


def _say_dropped_parts(run: PullRun, plans: list[FilePlan]) -> None:
    """A part a cut pull kept that the plan threw away (the box's file changed since) is
    said on an AGAIN line once its file came whole, as docs/pulls.md ("Files that came
    again") promises; it went unsaid, "1 pulled (0 resumed)" (h616 #2). Its bytes are the
    plan's already (from zero), so they leave ``to_move`` for the AGAIN line: what left
    the box (``PullResult.moved``) counts them once. A file the copy pulled again itself
    (a hash mismatch) keeps that line: its bytes did cross twice."""
    came = {f.path: f.size for f in run.pulled}
    for plan in plans:
        if plan.part_dropped and plan.local in came and plan.local not in run.again:
            run.again[plan.local] = (came[plan.local], DROPPED_PART)
            run.to_move -= came[plan.local]


def _remove_parts(run: PullRun, plans: list[FilePlan]) -> None:
    """The parts of files an early copy started and the complete manifest does not list."""
    for plan in plans:
        run.tree.remove(plan.part)
        run.tracker.drop_file(plan.local)


def _drop_stray_parts(tree: HostTree, kept: set[str]) -> None:
    """Once every copy has ended, remove the parts (rgt-tui's own, in ``.rgt/parts/``)
    that no file of the box has now: an earlier pull cut short left one of a file the
    box deleted since (a rotated checkpoint), and verify flagged it "left by an
    interrupted pull — re-run the pull" at every run, the gate locked for good, while
    the pull that fix named never touched it (h591 #2). A part of a listed file that
    failed stays, for the next pull to resume."""
    for dirpath, _, filenames in os.walk(tree.root / PARTS_DIR):
        for name in filenames:
            rel = str((Path(dirpath) / name).relative_to(tree.root))
            if rel not in kept:
                tree.remove(rel)


async def _take_manifest(run: PullRun, beside: _Beside, early: EarlyCopy | None) -> Manifest:
    def listed(files: int) -> None:
        run.tracker.message = f"listed {plural(files, 'file')} on the box"
        run.tracker.emit()

    async def scan() -> Manifest:
        beside.start()  # while the box scans and hashes
        return await take_manifest(
            run.host,
            run.transport,
            on_file=listed,
            on_listing=early.on_listing if early is not None else None,
            stall_timeout_s=run.options.stall_timeout_s,  # --stall-timeout: the scan's too
        )

    try:
        if early is None:
            return await _retrying(run, scan)
        return await _unless_early_fails(run, _retrying(run, scan), early)
    except ManifestError as exc:
        raise PullError(str(exc), "re-run the pull; the box's listing could not be used") from exc


async def _unless_early_fails(
    run: PullRun, scanning: Awaitable[Manifest], early: EarlyCopy
) -> Manifest:
    """The scan's manifest; or, when an early copy stops the pull first (a full disk),
    that error at once, not after the box has hashed everything."""
    scan = asyncio.ensure_future(scanning)
    ended = asyncio.ensure_future(early.ended.wait())
    try:
        await asyncio.wait({scan, ended}, return_when=asyncio.FIRST_COMPLETED)
        if not scan.done() and early.failure() is not None:
            await _early(run, early)
        return await scan
    finally:
        ended.cancel()
        if not scan.done():
            scan.cancel()
            await asyncio.gather(scan, return_exceptions=True)


async def _copy_with_retries(run: PullRun, plans: list[FilePlan]) -> None:
    """Copy until every file is done; reconnect and resume after each lost connection."""
    todo, attempts = plans, 0

    async def copy() -> None:
        nonlocal todo, attempts
        todo = [p for p in todo if p.local not in run.finished]
        if attempts:  # the plan measured the parts; after a drop they have grown
            todo = await _local(_resume_points, run, todo)
        attempts += 1
        if todo:
            await copy_files(run, todo)

    if not run.retry:  # a side task: the pull's own copies watch the connection
        await _retrying(run, copy)
        return
    async with stall_watch(run):
        await _retrying(run, copy)


async def _retrying(run: PullRun, action: Callable) -> object:
    """``action()`` on a connected transport, again after each lost connection."""
    failures = 0
    while True:
        received = run.tracker.bytes_received
        try:
            if not run.retry and not run.transport.connected:  # the pull's to reconnect
                raise TransportError(run.host.name, "the connection was lost")
            await _connect(run)  # at once when connected (a reconnect just happened)
            return await action()
        except HostKeyError as exc:  # its words and fix apart: str() says both, host first
            raise PullError(exc.message, exc.fix) from exc
        except LocalWriteError as exc:
            raise exc.to_pull_error(run.dest) from exc
        except TransportError as exc:
            # The command failed, not the connection (a scan that printed nothing on a
            # link that still answers: a stuck mount, reported with its fix).
            if run.transport.connected and not await _link_stalled(run, exc):
                raise PullError(exc.message, exc.fix) from exc
            if not run.retry:
                raise  # a side task: the pull does it again after its own reconnect
            failures = 1 if run.tracker.bytes_received > received else failures + 1
            await run.transport.close()
            failures = await _reconnect(run, failures, exc)


async def _link_stalled(run: PullRun, exc: TransportError) -> bool:
    """Whether the box's scan fell silent because the whole link did (a frozen box, a dead
    route): then nothing answers an SFTP stat of ``/`` either, and the pull reconnects as
    after a drop; a link that answers leaves the stuck scan (a hung mount) to report."""
    if not isinstance(exc, ScanStalled) or not run.retry:
        return False
    try:
        await within(run.transport.stat("/"), run.options.stall_timeout_s)
    except (asyncio.TimeoutError, TransportError, OSError):
        return True
    return False


async def _reconnect(run: PullRun, failures: int, lost: TransportError) -> int:
    """Wait and reconnect by the one reconnect loop, showing "retrying"; PullError once
    ``max_attempts`` attempts in a row failed. Returns the failures counted."""

    def retrying(attempt: int, delay: float, exc: TransportError) -> None:
        why, run.stalled = run.stalled or exc.message, None
        run.tracker.all_files_state("retrying", why)
        run.tracker.set_phase(run.tracker.phase, f"{why}; retrying")

    phase, message = run.tracker.phase, run.tracker.message
    try:
        failures = await connect_with_backoff(
            run.transport,
            run.options.backoff,
            retrying,
            run.wait,
            failed=failures,
            failure=lost,
            max_attempts=run.options.max_attempts,
        )
        # Back: the phase says what it said before the drop, not "refused …; retrying"
        # on every line while the bytes flow again (h543 #6).
        run.tracker.set_phase(phase, message)
        return failures
    except HostKeyError as exc:
        raise PullError(exc.message, exc.fix) from exc
    except TransportError as exc:
        # Where, as Ctrl-C's message says it: "partial files are kept" named no folder
        # (s36 faults #5).
        raise PullError(
            f"lost the connection to {run.host.name} ({exc.message}); partial files are kept "
            f"in {records_dir(run.dest) / 'parts'}/",
            exc.fix or "check the box is up, then re-run the same pull to resume",
        ) from exc


async def _connect(run: PullRun) -> None:
    """Connect; a box never reached in this run fails the pull at once, with the reason
    (retrying a refused or unknown address only makes the user wait, and nothing has
    started that a retry could resume)."""
    try:
        await run.transport.connect()
    except HostKeyError:
        raise
    except TransportError as exc:
        if not run.reached:
            raise PullError(
                f"cannot reach {run.host.name}: {exc.message}; nothing was pulled",
                exc.fix or "check that the box is up (rgt-tui status), then pull again",
            ) from exc
        raise
    run.reached = True
    run.mark("connected")


def _resume_points(run: PullRun, plans: list[FilePlan]) -> list[FilePlan]:
    """The plans with each part's size now (bytes a lost connection already brought)."""
    out = []
    for plan in plans:
        try:
            st = run.tree.lstat(plan.part) if plan.local not in run.mismatched else None
        except LocalConflict:
            st = None  # an old part of ours in its way: the copy names it
        size = st.st_size if st is not None and st.st_size <= plan.entry.size else 0
        out.append(dataclasses.replace(plan, resume_from=size))
    return out


async def _pull_box_logs(run: PullRun, *, once: bool = False) -> BoxLogs | None:
    """The box's queue and cell logs into ``.rgt/box-logs/`` (``box_logs``, U20), by the
    same manifest, plan and resumable copy as results, in a tree of their own. Never
    fails the pull: what went wrong is the returned ``note``. ``once``: beside the
    results' copy, never reconnecting (that is the pull's to do); None when the
    connection was lost meanwhile, so the pull does it again."""
    host = dataclasses.replace(run.host, pull=(LOGS_ROOT,))
    folder = run.dest / "(not made)"
    try:
        folder = await _local(logs_folder, run.tree)
        tree = HostTree(folder)
    except PullError as exc:
        return BoxLogs(folder, note=f"the logs were not pulled: {exc}")
    try:
        record = await asyncio.to_thread(PulledRecord.load, folder)
        tracker = ProgressTracker(run.host.name, None)  # the results' progress is shown
        sub = PullRun(host, folder, run.transport, run.options, tree, record, tracker)
        sub.reached, sub.wait, sub.retry = True, run.wait, not once
        scan = partial(
            take_manifest, host, run.transport, stall_timeout_s=run.options.stall_timeout_s
        )
        listing = await _retrying(sub, scan)
        if listing.roots and listing.roots[0].error:
            return BoxLogs(folder, note=f"no queue logs on the box ({listing.roots[0].error})")
        sub.manifest, left_out = select_logs(await _local(tree.writable, listing))
        plan = await _local(plan_pull, tree, sub.manifest, None, record)
        _note_plan(sub, plan.files)
        await _copy_with_retries(sub, list(plan.to_pull))
        await _local(record.save, folder)
        root = listing.roots[0].path if listing.roots else LOGS_ROOT
        tails = await keep_tails(
            run.transport, root, tree, listing, sub.manifest, left_out, set(sub.failed)
        )
    except (PullError, ManifestError) as exc:
        return BoxLogs(folder, note=f"the logs were not pulled: {exc}")
    except TransportError:
        if once:
            return None
        raise
    except OSError as exc:  # this disk's (full, a name it refuses): the results still count
        return BoxLogs(folder, note=f"the logs were not pulled: {printable(exc, 300)}")
    finally:
        tree.close()
    return BoxLogs(
        folder,
        listed=len(sub.manifest.entries),
        pulled=len(sub.pulled),
        bytes_received=tracker.bytes_received,
        failed=tuple(sub.failed.items()),
        left_out=left_out,
        note="; ".join(n for n in (left_out_note(left_out), tails) if n),
    )


def _note_plan(run: PullRun, plans: tuple[FilePlan, ...]) -> None:
    skipped = [p for p in plans if p.action == "skip"]
    run.skipped += [p.local for p in skipped]
    run.conflicts += [(p.local, p.note) for p in plans if p.action == "conflict"]
    run.finished |= {p.local for p in plans if p.action in ("skip", "conflict")}
    assert run.manifest is not None
    run.tracker.plan(
        len(run.manifest.entries),
        run.manifest.total_bytes,
        len(skipped),
        sum(p.entry.size for p in skipped),
    )


def _make_links(
    tree: HostTree, manifest: Manifest, previous: Manifest | None
) -> list[tuple[str, str]]:
    """Recreate the box's symlinks whose target, resolved under their root, stays inside
    it; returns (path, why) for each one left alone (a link here that the last pull did
    not make among them: ``previous``, its manifest)."""
    ours = links_made(previous)
    conflicts = []
    for link in manifest.links:
        rel = manifest.local_relpath(link.root, link.path)
        target = posixpath.normpath(link.target)  # the scan gives it relative to the root
        if target.startswith(("/", "../")) or target in ("..", "."):
            conflicts.append((rel, f"its target {link.target!r} leaves the pull root: not made"))
            continue
        local_target = manifest.local_relpath(link.root, target)
        relative = posixpath.relpath(local_target, posixpath.dirname(rel) or ".")
        try:
            why = tree.symlink(rel, relative, ours=rel in ours)
        except (OSError, LocalConflict) as exc:
            why = f"cannot create symlink: {exc}"
        if why:
            conflicts.append((rel, why))
    return conflicts


def _refuse_nested(dest: Path, manifest: Manifest) -> None:
    """On this machine, refuse a results folder inside a pull root: each pull would copy
    the previous copy again, growing without end."""
    resolved = dest.resolve()
    for root in manifest.roots:
        if root.error is None and resolved.is_relative_to(Path(root.path)):
            raise PullError(
                f"the results folder {resolved} is inside the pull root {root.path}: "
                "every pull would copy the previous copy again",
                "set [fleet] results_dir outside it, or narrow the host's pull roots",
            )


async def _local(func: Callable, *args: object) -> object:
    """A blocking local step in a thread; a local write failure stops the pull, named."""
    try:
        return await in_thread(func, *args)  # they use the tree's descriptor: see in_thread
    except LocalWriteError as exc:
        raise exc.to_pull_error(Path(exc.path).parent) from exc
    except OSError as exc:
        path = Path(exc.filename) if exc.filename else Path(".")
        raise LocalWriteError(path, exc).to_pull_error(path.parent) from exc


def _previous(dest: Path) -> Manifest | None:
    try:
        return load_manifest(dest)
    except ManifestError:
        return None  # unreadable: only used to spot parts of an older version


@contextlib.contextmanager
def _pull_lock(dest: Path, host: str) -> Iterator[None]:
    """Refuse a second pull of the same host at once: both would write the same parts.
    A results folder that cannot be written (read-only, another user's, a full disk) is
    named before anything is asked of the box."""
    held = contextlib.ExitStack()
    try:  # one try (deadline 0): a second pull is refused, never queued behind the first
        records_dir(dest).mkdir(parents=True, exist_ok=True)
        held.enter_context(file_lock(pull_lock_path(dest), 0, mode=0o644))
    except LockBusy:
        raise PullBusy(
            f"another pull of {host} into {dest} is running", "wait for it to finish"
        ) from None
    except OSError as exc:
        raise unwritable_results(dest, exc) from None
    with held:
        yield


def _guarded(callback: Callable[[PullProgress], None] | None) -> Callable | None:
    """A progress callback whose exceptions are logged, never allowed to stop a pull."""
    if callback is None:
        return None

    def call(progress: PullProgress) -> None:
        try:
            callback(progress)
        except Exception:
            log.exception("pull progress callback failed")

    return call
