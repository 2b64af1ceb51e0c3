"""A whole pull: manifest → plan → copy → finalise, with reconnects and a stall watch.

One ``PullRun`` carries the state from stage to stage. Connection failures retry by the
fleet connections' one reconnect loop (``connections.connect_with_backoff``: capped,
jittered backoff, the count starting again whenever bytes came in between; ``wait`` is
the host's wakeable wait in the TUI, so ``r`` cuts it short); no bytes for
``stall_timeout_s`` drops the connection so every read fails and resumes from its part. A full local disk stops the pull with the file and folder named; parts stay.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import logging
import os
import posixpath
import time
from collections.abc import Awaitable, Callable, Iterator
from functools import partial
from pathlib import Path

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.errors import HostKeyError, TransportError
from rgt_tui.domain.manifest import Manifest, ManifestError
from rgt_tui.services.connections import connect_with_backoff
from rgt_tui.services.manifest import take_manifest
from rgt_tui.services.pull.box_logs import LOGS_ROOT, BoxLogs, logs_folder, select_logs
from rgt_tui.services.pull.copy import copy_files
from rgt_tui.services.pull.local_tree import HostTree, LocalConflict, in_thread
from rgt_tui.services.pull.plan import FilePlan, PulledRecord, check_space, plan_pull
from rgt_tui.services.pull.progress import ProgressTracker, PullProgress
from rgt_tui.services.pull.state import PullRun
from rgt_tui.services.pull.types import (
    LocalWriteError,
    PullBusy,
    PullError,
    PullOptions,
    PullResult,
)
from rgt_tui.services.records import host_results_dir, load_manifest, records_dir, save_manifest
from rgt_tui.services.result_code import read_result_code, save_result_code
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
) -> PullResult:
    """Pull every file under the host's pull roots into ``<results_dir>/<host>/``.

    Raises PullError (``NotEnoughSpace``, ``LocalDiskFull``, another pull running, the
    connection lost for good, the manifest unreadable) with ``message`` and ``fix``; its
    ``result`` holds what was done, when the pull got that far. Files that fail on their
    own (changed on the box, refused, hash mismatch twice) are in ``result.failed``.
    ``wait`` sleeps between reconnect attempts (the TUI passes the host's
    ``FleetConnections.waiter``, which ``wake`` ends early).
    """
    if host.pull_refused:  # no pull folders named, and the default is the whole home
        raise PullError(host.pull_refused)
    options = options or PullOptions()
    dest = host_results_dir(results_dir, host)
    tracker = ProgressTracker(
        host.name, _guarded(on_progress), interval=options.progress_interval_s
    )
    with _pull_lock(dest, host.name):
        tree = HostTree(dest)  # a mkdir and an open, as the lock above: not worth a thread
        try:
            record = await asyncio.to_thread(PulledRecord.load, dest)
            run = PullRun(host, dest, transport, options, tree, record, tracker, wait=wait)
            try:
                return await _run(run)
            finally:
                if run.warming is not None:
                    run.warming.cancel()
        finally:
            tree.close()


async def _run(run: PullRun) -> PullResult:
    try:
        run.tracker.set_phase("manifest", "listing and hashing files on the box")
        previous = await asyncio.to_thread(_previous, run.dest)
        run.manifest = await _take_manifest(run)
        if run.host.is_local:
            _refuse_nested(run.dest, run.manifest)
        await _local(save_manifest, run.dest, run.manifest)
        # The code that made these results (U42), kept beside them for the summary and verify.
        code = await read_result_code(run.host, run.transport)
        await _local(save_result_code, run.dest, code)
        run.tracker.set_phase("planning", "checking files already here")
        plan = await _local(plan_pull, run.tree, run.manifest, previous, run.record)
        _note_plan(run, plan.files)
        margin = {
            "margin_fraction": run.options.margin_fraction,
            "margin_min": run.options.margin_min_bytes,
        }
        await _local(lambda: check_space(run.dest, plan, **margin))
        run.tracker.set_phase("pulling")
        copy_started = time.monotonic()
        await _copy_with_retries(run, list(plan.to_pull))
        run.copy_s = time.monotonic() - copy_started
        run.tracker.set_phase("finishing")
        run.conflicts += await _local(_make_links, run.tree, run.manifest)
        await _local(run.record.save, run.dest)
    except PullError as exc:
        with contextlib.suppress(OSError):  # on a full disk even the record may not fit
            await asyncio.to_thread(run.record.save, run.dest)
        if run.manifest is not None:
            exc.result = run.result()
        run.tracker.set_phase("failed", exc.message)
        raise
    except BaseException:  # Ctrl-C, a cancelled worker: parts stay, the record is kept
        with contextlib.suppress(OSError):
            await asyncio.shield(asyncio.to_thread(run.record.save, run.dest))
        raise
    logs = await _pull_box_logs(run) if run.options.box_logs else None
    result = dataclasses.replace(run.result(), code=code, box_logs=logs)
    run.tracker.set_phase("done" if result.ok else "failed")
    return result


async def _take_manifest(run: PullRun) -> Manifest:
    def listed(files: int) -> None:
        run.tracker.message = f"listed {files} files on the box"
        run.tracker.emit()

    async def scan() -> Manifest:
        # The SFTP sessions the copy will use start while the box scans and hashes.
        per_file = run.options.lanes_per_file
        lanes = range(1, 1 + run.options.concurrency * per_file)
        if run.warming is None or run.warming.done():  # again after a reconnect
            run.warming = asyncio.ensure_future(run.transport.open_lanes(lanes))
        return await take_manifest(
            run.host,
            run.transport,
            on_file=listed,
            stall_timeout_s=run.options.stall_timeout_s,  # --stall-timeout: the scan's too
        )

    try:
        return await _retrying(run, scan)
    except ManifestError as exc:
        raise PullError(str(exc), "re-run the pull; the box's listing could not be used") from exc


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

    watch = asyncio.ensure_future(_watch_stalls(run))
    try:
        await _retrying(run, copy)
    finally:
        watch.cancel()


async def _retrying(run: PullRun, action: Callable) -> object:
    """``action()`` on a connected transport, again after each lost connection."""
    failures = 0
    while True:
        received = run.tracker.bytes_received
        try:
            await _connect(run)  # at once when connected (a reconnect just happened)
            return await action()
        except HostKeyError as exc:
            raise PullError(str(exc)) from exc
        except LocalWriteError as exc:
            raise exc.to_pull_error(run.dest) from exc
        except TransportError as exc:
            if run.transport.connected:  # the command failed, not the connection
                raise PullError(exc.message, exc.fix) from exc
            failures = 1 if run.tracker.bytes_received > received else failures + 1
            await run.transport.close()
            failures = await _reconnect(run, failures, exc)


async def _reconnect(run: PullRun, failures: int, lost: TransportError) -> int:
    """Wait and reconnect by the one reconnect loop, showing "retrying"; PullError once
    ``max_attempts`` attempts in a row failed. Returns the failures counted."""

    def retrying(attempt: int, delay: float, exc: TransportError) -> None:
        why, run.stalled = run.stalled or exc.message, None
        run.tracker.all_files_state("retrying", why)
        run.tracker.set_phase(run.tracker.phase, f"{why}; retrying")

    try:
        return await connect_with_backoff(
            run.transport,
            run.options.backoff,
            retrying,
            run.wait,
            failed=failures,
            failure=lost,
            max_attempts=run.options.max_attempts,
        )
    except HostKeyError as exc:
        raise PullError(str(exc)) from exc
    except TransportError as exc:
        raise PullError(
            f"lost the connection to {run.host.name} ({exc.message}); partial files are kept",
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


async def _watch_stalls(run: PullRun) -> None:
    """No bytes for ``stall_timeout_s``: drop the connection, so every read fails and the
    retry loop resumes each file from its part."""
    limit = run.options.stall_timeout_s
    run.last_byte = time.monotonic()
    while True:
        await asyncio.sleep(min(1.0, limit / 4))
        if time.monotonic() - run.last_byte > limit:
            run.stalled = f"stalled: no bytes for {limit:g} s"
            run.last_byte = time.monotonic()
            await run.transport.close()


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


async def _pull_box_logs(run: PullRun) -> BoxLogs:
    """The box's queue and cell logs into ``.rgt/box-logs/`` (``box_logs``, U20), by the
    same manifest, plan and resumable copy as results, in a tree of their own. Never
    fails the pull: what went wrong is the returned ``note``."""
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
        sub.reached, sub.wait = True, run.wait
        scan = partial(
            take_manifest, host, run.transport, stall_timeout_s=run.options.stall_timeout_s
        )
        listing = await _retrying(sub, scan)
        if listing.roots and listing.roots[0].error:
            return BoxLogs(folder, note=f"no queue logs on the box ({listing.roots[0].error})")
        sub.manifest, left_out = select_logs(listing)
        plan = await _local(plan_pull, tree, sub.manifest, None, record)
        _note_plan(sub, plan.files)
        await _copy_with_retries(sub, list(plan.to_pull))
        await _local(record.save, folder)
    except (PullError, ManifestError) as exc:
        return BoxLogs(folder, note=f"the logs were not pulled: {exc}")
    finally:
        tree.close()
    return BoxLogs(
        folder,
        listed=len(sub.manifest.entries),
        pulled=len(sub.pulled),
        bytes_received=tracker.bytes_received,
        failed=tuple(sub.failed.items()),
        left_out=left_out,
        note=f"{len(left_out)} older log files left on the box (over the cap)" if left_out else "",
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


def _make_links(tree: HostTree, manifest: Manifest) -> list[tuple[str, str]]:
    """Recreate the box's symlinks whose target, resolved under their root, stays inside
    it; returns (path, why) for each one left alone."""
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
            why = tree.symlink(rel, relative)
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
    """Refuse a second pull of the same host at once: both would write the same parts."""
    records_dir(dest).mkdir(parents=True, exist_ok=True)
    fd = os.open(records_dir(dest) / "pull.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise PullBusy(
                f"another pull of {host} into {dest} is running", "wait for it to finish"
            ) from None
        yield
    finally:
        os.close(fd)


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
