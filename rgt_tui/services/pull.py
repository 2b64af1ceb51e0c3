"""Pull a host's results: manifest on the box, then resumable, hash-checked file copies.

``pull_host`` takes a manifest on the box (every file under the host's pull roots with
its SHA-256), keeps it in ``<results_dir>/<host>/.rgt/manifest.json``, checks local free
space, then copies what is missing over the host's existing connection:

- each file goes to ``.rgt/parts/<path>.part``, hashed while it is written; an interrupted part is
  resumed from its size (its bytes are hashed first), so a finished file is read once;
- it becomes ``<name>`` only when its SHA-256 equals the manifest's; on a mismatch the part
  is dropped and the file pulled once more from zero, then it fails, by name;
- files under 1 MiB go first, in batches on ``batch_streams`` senders' channels of the same
  connection (``pull_batch``), since per-file round trips, not bytes, would set their
  pace; then up to ``concurrency`` larger files move at once, each streamed by the box's
  sender (``remote_file``; SFTP where it fails);
- the box hashes the small files first, so when the listing's totals already fit the
  local disk (every listed byte counted as still to pull) they are pulled while it hashes
  the large ones; otherwise nothing moves before the complete manifest's exact plan;
- no bytes for ``stall_timeout_s`` → the connection is dropped and re-opened and every
  file resumes; connection failures retry with capped, jittered backoff;
- a full local disk stops the pull (``LocalDiskFull``, naming the file and folder); the
  ``.part`` files stay and the file being written is not marked pulled.

Re-running the same pull skips files already here with a matching hash. Layout and
records: ``rgt_tui.domain.manifest`` and ``rgt_tui.services.records``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import logging
import os
import time
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.manifest import Manifest, ManifestError
from rgt_tui.services.manifest import Listed, take_manifest
from rgt_tui.services.pull_batch import SMALL_FILE, BatchPuller, make_batches
from rgt_tui.services.pull_file import FilePuller
from rgt_tui.services.pull_local import (
    FilePlan,
    LocalDiskFull,
    LocalWriteError,
    PulledRecord,
    PullError,
    PullPlan,
    check_space,
    check_space_for,
    make_links,
    plan_pull,
)
from rgt_tui.services.pull_progress import ProgressTracker, PullProgress
from rgt_tui.services.pull_types import Abort, PulledFile, PullOptions, PullResult
from rgt_tui.services.records import (
    host_results_dir,
    load_manifest,
    records_dir,
    save_manifest,
)
from rgt_tui.services.sender_pool import SenderPool
from rgt_tui.transport.base import HostKeyError, Transport, TransportError

log = logging.getLogger(__name__)

# SFTP sessions a pull opens for its large files at most (more workers share them).
# OpenSSH allows 10 sessions per connection (MaxSessions); the manifest, the small-file
# senders, the telemetry agent and log following need theirs.
SFTP_LANES = 4

__all__ = [
    "LocalDiskFull", "PullError", "PullOptions", "PullProgress", "PullResult", "PulledFile",
    "pull_host",
]  # fmt: skip


async def pull_host(
    host: HostConfig,
    results_dir: Path,
    transport: Transport,
    *,
    options: PullOptions | None = None,
    on_progress: Callable[[PullProgress], None] | None = None,
) -> PullResult:
    """Pull every file under the host's pull roots into ``<results_dir>/<host>/``.

    Raises PullError (``NotEnoughSpace``, ``LocalDiskFull``, another pull running, the
    connection lost for good, the manifest unreadable) with ``message`` and ``fix``;
    its ``result`` holds what was done before, when anything was. Files that fail on
    their own (changed on the box, hash mismatch twice) are listed in ``result.failed``.
    """
    options = options or PullOptions()
    dest = host_results_dir(results_dir, host)
    dest.mkdir(parents=True, exist_ok=True)
    with _pull_lock(dest, host.name):
        return await _Pull(host, dest, transport, options, on_progress).run()


@contextlib.contextmanager
def _pull_lock(dest: Path, host: str):
    """Refuse a second pull of the same host at once: both would write the same .part files."""
    records_dir(dest).mkdir(parents=True, exist_ok=True)
    fd = os.open(records_dir(dest) / "pull.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise PullError(
                f"another pull of {host} into {dest} is running", "wait for it to finish"
            ) from None
        yield
    finally:
        os.close(fd)


class _Pull:
    """One pull run; the workers share its session, tracker and record."""

    def __init__(
        self,
        host: HostConfig,
        dest: Path,
        transport: Transport,
        options: PullOptions,
        on_progress: Callable[[PullProgress], None] | None,
    ) -> None:
        self.host, self.dest, self.transport, self.options = host, dest, transport, options
        self.tracker = ProgressTracker(
            host.name, _guarded(on_progress), interval=options.progress_interval_s
        )
        self.generation = 0  # bumped at each reconnect, so one drop reconnects once
        self._reset_lock = asyncio.Lock()
        self.record = PulledRecord()
        self.record_saved = time.monotonic()
        self.pulled: list[PulledFile] = []
        self.failed: list[tuple[str, str]] = []
        self.manifest: Manifest | None = None
        self.started = time.monotonic()
        self.skipped: list[FilePlan] = []  # already here with a matching hash
        self.conflicts: list[tuple[str, str]] = []  # (path, why) left alone
        self.fallback: list[FilePlan] = []  # small files the batches could not bring
        # When the small files start before the manifest is complete (_start_early):
        self._small: asyncio.Future | None = None  # pulling them
        self._first: Manifest | None = None  # their partial manifest
        # The entries planned before the manifest was complete, as they were then:
        self._early: dict[tuple[int, str], tuple[int, str | None]] = {}  # key: (size, sha256)
        # ... and then the large files, each planned and pulled as the box reports it:
        self._more: asyncio.Queue[Manifest | None] = asyncio.Queue()  # one-file manifests
        self._streamed: asyncio.Queue[FilePlan | None] = asyncio.Queue()  # their plans
        self._streamed_planned = asyncio.Event()  # every file the scan reported is planned
        # The box's sender processes: small-file batches, then large files (one window
        # of bytes in flight each: what a dropped connection can make a resume re-fetch).
        self.senders = SenderPool(
            transport, options.block_size * options.max_requests, lambda: self.generation
        )
        self._sftp_ready: list[asyncio.Future] = []  # SFTP sessions, started early

    # -- connection --------------------------------------------------------------------

    async def _retrying(self, what: str, action: Callable[[], object]) -> object:
        """Run ``action`` (a coroutine factory), retrying connection failures with backoff."""
        attempt = 0
        while True:
            generation = self.generation
            try:
                await self.transport.connect()
                return await action()  # type: ignore[misc]
            except HostKeyError as exc:
                raise PullError(str(exc)) from exc
            except TransportError as exc:
                attempt += 1
                if attempt >= self.options.max_attempts:
                    raise self._connection_lost(exc) from exc
                self.tracker.set_phase(self.tracker.phase, f"{what}: {exc.message}; retrying")
                await self.reset(generation)
                await asyncio.sleep(self.options.backoff.delay(attempt))

    def _connection_lost(self, exc: TransportError) -> PullError:
        return PullError(
            f"lost the connection to {self.host.name} ({exc.message}); partial files are kept",
            exc.fix or "check the box is up, then re-run the same pull to resume",
        )

    def abort_lost(self, reason: str) -> Abort:
        """The error that stops every worker: the connection did not come back."""
        return Abort(self._connection_lost(TransportError(self.host.name, reason)))

    def abort_local(self, exc: LocalWriteError) -> Abort:
        """The error that stops every worker for a local write failure (a full disk)."""
        if exc.disk_full:
            return Abort(LocalDiskFull(exc.path, self.dest))
        return Abort(PullError(str(exc), "check the local folder's permissions and disk"))

    def small_done(self, plan: FilePlan, size: int, digest: str) -> None:
        """A batched small file is in place."""
        self.pulled.append(PulledFile(plan.local, size, digest, 0, size))
        self.tracker.add_done(size)

    async def reset(self, generation: int) -> None:
        """Drop the connection once per failure, however many workers saw it."""
        async with self._reset_lock:
            if generation == self.generation:
                self.generation += 1
                await self.transport.close()

    # -- the run -----------------------------------------------------------------------

    async def run(self) -> PullResult:
        """Manifest, plan, space check, copy, links, record: the whole pull.

        The box hashes its small files first; when the space check can already be passed
        on the listing's totals (every listed byte counted as still to pull), the small
        files are pulled while the box hashes the large ones. Otherwise, and for the large
        files always, the plan waits for the complete manifest.
        """
        self.tracker.set_phase("connecting")
        previous = await asyncio.to_thread(_load_previous, self.dest)
        self.record = await asyncio.to_thread(PulledRecord.load, self.dest)
        try:
            return await self._run(previous)
        finally:
            await self.senders.close()
            # Their failure (no SFTP on the box) showed where a session was used.
            await _cancel(self._sftp_ready)

    async def _run(self, previous: Manifest | None) -> PullResult:
        manifest: Manifest | None = None
        try:
            manifest = await self._manifest(previous)
            self._more.put_nowait(None)  # the scan is complete: no more files to stream
            plan = await self._plan_the_rest(manifest, previous)
            if self._small is None:
                self.tracker.set_phase("pulling")
            else:
                await self._small
                plan = await self._plan_changed(manifest, previous, plan)
            # Early or not, what is left: all of it, or what a retried scan found that the
            # first did not (a file written meanwhile) or found changed.
            await self._pull_small(plan.to_pull, manifest)
            await self._pull_large(plan.to_pull, manifest)
        except PullError as exc:
            await self._stop_small()
            # Best effort: on a full disk even the record may not fit; the files stay.
            with contextlib.suppress(OSError):
                await asyncio.to_thread(self.record.save, self.dest)
            seen = manifest or self._first
            if seen is not None:
                exc.result = self._result(seen)  # type: ignore[assignment]
            self.tracker.set_phase("failed", exc.message)
            raise
        except BaseException:
            await self._stop_small()
            raise
        self.tracker.set_phase("finishing")
        self.conflicts += await asyncio.to_thread(make_links, self.dest, manifest)
        await asyncio.to_thread(self._local_write, self.record.save, self.dest)
        result = self._result(manifest)
        self.tracker.set_phase("done" if result.ok else "failed")
        return result

    async def _manifest(self, previous: Manifest | None) -> Manifest:
        """Take the manifest, starting on the small files meanwhile when they are known
        and the whole pull fits (``_start_early``); saves it with the results."""
        self.tracker.set_phase("manifest", "listing and hashing files on the box")
        early: asyncio.Future[Listed] = asyncio.get_running_loop().create_future()
        scanning = asyncio.ensure_future(self._retrying("manifest", lambda: self._scan(early)))
        try:
            await asyncio.wait({scanning, early}, return_when=asyncio.FIRST_COMPLETED)
            if early.done() and not scanning.done():
                await self._start_early(early.result(), previous)
            waiting = {scanning} if self._small is None else {scanning, self._small}
            while not scanning.done():
                # A failure of the small files (a full disk) does not wait for the box to
                # finish hashing; their success does not hold up planning the rest.
                done, waiting = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                if self._small in done and self._small.exception() is not None:
                    self._small.result()
            manifest = scanning.result()
        except ManifestError as exc:
            raise PullError(str(exc), "re-run the pull; the scan on the box was cut off") from exc
        finally:
            await _cancel([scanning])
        assert isinstance(manifest, Manifest)
        self.manifest = manifest
        if self.host.is_local:
            self._refuse_nested(manifest)
        await asyncio.to_thread(self._local_write, save_manifest, self.dest, manifest)
        return manifest

    async def _plan_the_rest(self, manifest: Manifest, previous: Manifest | None) -> PullPlan:
        """Plan every file not planned early, and check the space it needs."""
        if self._small is None:
            self.tracker.set_phase("planning", "checking files already here")
        else:
            # Every file streamed in early is planned (so its key is known) first.
            planned = asyncio.ensure_future(self._streamed_planned.wait())
            await asyncio.wait({planned, self._small}, return_when=asyncio.FIRST_COMPLETED)
            await _cancel([planned])
            if self._small.done():
                self._small.result()  # a failure (a full disk) stops here
        # Files planned early are not planned again (some are being written right now).
        rest = dataclasses.replace(
            manifest, entries=tuple(e for e in manifest.entries if e.key not in self._early)
        )
        plan = await asyncio.to_thread(plan_pull, self.dest, rest, previous, self.record)
        skipped = self._note_plan(plan)
        self.tracker.plan(
            len(manifest.entries),
            manifest.total_bytes,
            len(skipped),
            sum(p.entry.size for p in skipped),
        )
        await asyncio.to_thread(lambda: check_space(self.dest, plan, **self._margin))
        return plan

    async def _plan_changed(
        self, manifest: Manifest, previous: Manifest | None, plan: PullPlan
    ) -> PullPlan:
        """``plan`` plus the files pulled early that the complete manifest lists differently.

        Only a retried scan (the connection dropped while the box was hashing) can see a
        file change between the entry it was planned from and the manifest that is kept;
        what was pulled of the older version is replaced, as any file changed on the box,
        so that every file is checked against the manifest saved with the results. Called
        once nothing early is in flight, so a file never has two writers."""
        changed = tuple(
            e
            for e in manifest.entries
            if self._early.get(e.key, (e.size, e.sha256)) != (e.size, e.sha256)
        )
        if not changed:
            return plan
        again = await asyncio.to_thread(
            plan_pull,
            self.dest,
            dataclasses.replace(manifest, entries=changed),
            previous,
            self.record,
        )
        # Everything said of the older version goes: its outcome, its count in the
        # progress, and its place in the SFTP queue (a batch that read it mid-change).
        stale = {p.local for p in again.files}
        gone = [(f.path, f.size) for f in self.pulled if f.path in stale]
        gone += [(p.local, p.entry.size) for p in self.skipped if p.local in stale]
        failed = sum(1 for f in self.failed if f[0] in stale)
        self.tracker.take_back(len(gone), sum(size for _, size in gone), failed)
        self.pulled = [f for f in self.pulled if f.path not in stale]
        self.failed = [f for f in self.failed if f[0] not in stale]
        self.skipped = [p for p in self.skipped if p.local not in stale]
        self.conflicts = [c for c in self.conflicts if c[0] not in stale]
        self.fallback = [p for p in self.fallback if p.local not in stale]
        self._note_plan(again)
        await asyncio.to_thread(lambda: check_space(self.dest, again, **self._margin))
        return PullPlan(plan.files + again.files)

    def _note_plan(self, plan: PullPlan) -> list[FilePlan]:
        """Keep the plan's conflicts and skipped files for the result; returns the skipped."""
        self.conflicts += [(p.local, p.note) for p in plan.files if p.action == "conflict"]
        skipped = [p for p in plan.files if p.action == "skip"]
        self.skipped += skipped
        return skipped

    async def _stop_small(self) -> None:
        if self._small is not None:
            await _cancel([self._small])

    async def _scan(self, early: asyncio.Future[Listed]) -> Manifest:
        def on_line(files: int, total: int) -> None:
            self.tracker.message = f"listed {files} files on the box"
            self.tracker.emit()

        def on_first(listed: Listed) -> None:
            if not early.done():  # a retried scan reports again: the first one counts
                early.set_result(listed)

        def on_listed(small: int, files: int) -> None:
            self._start_warm(small, files - small)

        def on_more(part: Manifest) -> None:
            self._more.put_nowait(part)  # used only if the small files started early

        # Over SSH the scan's python3 also shares a socket the senders reach without
        # starting a shell each (sender_pool); elsewhere senders are local commands.
        sockets = hasattr(self.transport, "stream_socket")
        return await take_manifest(
            self.host,
            self.transport,
            on_line=on_line,
            first_below=SMALL_FILE,
            on_first=on_first,
            on_listed=on_listed,
            on_more=on_more,
            on_share=self.senders.offer if sockets else None,
        )

    def _start_warm(self, small: int, large: int) -> None:
        """Start the senders for the first small-file batches, and the SFTP sessions the
        large files will use (one per file in flight), while the box hashes: their
        start-up overlaps it. Unused senders are closed at the end. The first scan only,
        not a retry.

        Senders only when the box has small files, and once its walk is done. Through the
        scan's shared socket a sender is a fork (cheap); where senders fall back to exec
        channels each runs the box's shell, several shells starting at once slow each
        other down (three took 0.33 s here, one 0.09 s), and one nobody needs is a shell
        at risk of being cut off in its start-up scripts if the box goes away (a pyenv
        rehash killed mid-way leaves a lock that stalls every later shell for a minute)."""
        if self.senders.started or self._sftp_ready:
            return
        if small:
            self.senders.warm(self.options.batch_streams)
        sftp = getattr(self.transport, "sftp", None)
        if sftp is not None:
            wanted = max(large, 1 if small else 0)
            if self.options.stream_large:
                # Streamed files need SFTP only as a fallback, but it must be there when it
                # comes to that: a box that refuses more sessions (sshd's MaxSessions) has
                # a stream's channel refused, and that file then shares lane 0.
                wanted = min(wanted, 1)
            lanes = min(self.options.concurrency, SFTP_LANES, wanted)
            self._sftp_ready = [asyncio.ensure_future(sftp(lane)) for lane in range(lanes)]

    async def _start_early(self, listed: Listed, previous: Manifest | None) -> None:
        """Start on the small files (``self._small``) if the listing alone shows that the
        whole pull fits; else leave everything to the exact plan."""
        first = listed.first
        if self.host.is_local:
            self._refuse_nested(first)
        try:
            # Every listed byte counted as still to pull, and a folder per file: if even
            # that fits, the exact plan (which can only need less) fits too.
            await asyncio.to_thread(
                lambda: check_space_for(self.dest, listed.bytes, 2 * listed.files, **self._margin)
            )
        except PullError:
            return  # maybe much is here already: the exact check decides, later
        # Even with every small file already here: the large ones are then pulled as the
        # box reports them (a re-pull of a box still writing checkpoints).
        plan = await asyncio.to_thread(plan_pull, self.dest, first, previous, self.record)
        skipped = self._note_plan(plan)
        self._first = first
        self._early = {p.entry.key: (p.entry.size, p.entry.sha256) for p in plan.files}
        self.tracker.plan(
            listed.files, listed.bytes, len(skipped), sum(p.entry.size for p in skipped)
        )
        self.tracker.set_phase(
            "pulling",
            "small files first; the box is hashing the rest"
            if plan.to_pull
            else "the box is hashing the large files; each moves once it is hashed",
        )
        self._small = asyncio.ensure_future(self._pull_early(plan.to_pull, first, previous))

    async def _pull_early(
        self, small: tuple[FilePlan, ...], first: Manifest, previous: Manifest | None
    ) -> None:
        """The small files, then each large file as soon as the box has hashed it and it is
        planned (``_plan_more``), until the scan is complete.

        A box with many gigabytes of checkpoints hashes for minutes; this way the first
        checkpoint moves while it hashes the next instead of after the last."""

        async def small_then_large() -> None:
            await self._pull_small(small, first)
            await self._pull_files(_take_until_none(self._streamed), first)

        await _run_all([self._plan_more(previous), small_then_large()])

    async def _plan_more(self, previous: Manifest | None) -> None:
        """Plan each file the scan reports after the small ones, for ``_pull_early``."""
        try:
            while (part := await self._more.get()) is not None:
                new = tuple(e for e in part.entries if e.key not in self._early)
                if not new:
                    continue  # a retried scan reports the same files again: the first counts
                part = dataclasses.replace(part, entries=new)
                plan = await asyncio.to_thread(plan_pull, self.dest, part, previous, self.record)
                skipped = self._note_plan(plan)
                self._early |= {p.entry.key: (p.entry.size, p.entry.sha256) for p in plan.files}
                self.tracker.already_here(len(skipped), sum(p.entry.size for p in skipped))
                for file in plan.to_pull:
                    self._streamed.put_nowait(file)
        finally:
            self._streamed_planned.set()
            self._streamed.put_nowait(None)

    @property
    def _margin(self) -> dict[str, float | int]:
        """The free-space margin options, as check_space and check_space_for take them."""
        return {
            "margin_fraction": self.options.margin_fraction,
            "margin_min": self.options.margin_min_bytes,
        }

    def _result(self, manifest: Manifest) -> PullResult:
        return PullResult(
            host=self.host.name,
            dest=self.dest,
            manifest=manifest,
            pulled=tuple(self.pulled),
            skipped=tuple(p.local for p in self.skipped),
            failed=tuple(self.failed),
            conflicts=tuple(self.conflicts),
            bytes_received=self.tracker.bytes_received,
            elapsed_s=time.monotonic() - self.started,
        )

    async def _pull_small(self, files: tuple[FilePlan, ...], manifest: Manifest) -> None:
        """Files under SMALL_FILE, in batches; those the batches cannot bring are kept for
        ``_pull_large`` (one by one, as large files are)."""
        small = sorted((f for f in files if f.entry.size < SMALL_FILE), key=lambda f: f.local)
        batches = deque(make_batches(small, self.options.batch_streams))
        batcher = BatchPuller(self, manifest)

        async def batch_worker() -> None:
            while batches:
                await batcher.run(batches.popleft())

        try:
            await _run_all(
                [batch_worker() for _ in range(min(self.options.batch_streams, len(batches)))]
            )
        finally:
            self.fallback += batcher.fallback

    async def _pull_large(self, files: tuple[FilePlan, ...], manifest: Manifest) -> None:
        """Files of SMALL_FILE and more, largest first; then the small files the
        batches could not bring."""
        big = deque(sorted((f for f in files if f.entry.size >= SMALL_FILE), key=_by_size))
        # Small files first, then the large ones (this runs after ``_pull_small``). Run
        # together, they fight over one event loop and one GIL (every block and every
        # small file passes through both) and each slows the other more than it gains: on
        # the bench's 3 × 300 MiB + 3000 small files the transfer took 6.1-6.4 s together
        # and 4.6-5.2 s one after the other. Small first also gives thousands of finished
        # files (and the roster's outputs, usually small) within seconds.
        big.extend(self.fallback)
        self.fallback = []
        await self._pull_files(_take_from(big), manifest)

    async def _pull_files(
        self, plans: Callable[[], Awaitable[FilePlan | None]], manifest: Manifest
    ) -> None:
        """Pull files one by one (``FilePuller``: streamed by a sender, SFTP where that
        fails), ``concurrency`` at once (worker n on SFTP session n % SFTP_LANES when
        SFTP is used), until ``plans()`` gives None."""
        puller = FilePuller(self, manifest)

        async def worker(n: int) -> None:
            while (plan := await plans()) is not None:
                await puller.run(plan, n % SFTP_LANES)

        await _run_all([worker(n) for n in range(self.options.concurrency)])

    def _refuse_nested(self, manifest: Manifest) -> None:
        """On this machine, refuse a results folder inside a pull root: each pull would copy
        the previous copy again, growing without end."""
        dest = self.dest.resolve()
        for root in manifest.roots:
            if root.error is None and dest.is_relative_to(Path(root.path)):
                raise PullError(
                    f"the results folder {dest} is inside the pull root {root.path}: "
                    "every pull would copy the previous copy again",
                    "set [fleet] results_dir outside it, or narrow the host's pull roots",
                )

    def _local_write(self, write: Callable[..., object], *args: object) -> None:
        """Run a record write; a local failure stops the pull with the file's name."""
        try:
            write(*args)
        except OSError as exc:
            path = Path(exc.filename) if exc.filename else records_dir(self.dest)
            error = LocalWriteError(path, exc)
            raise self.abort_local(error).args[0] from exc

    def drop_later(self, generation: int) -> Callable[[], object]:
        """A stall handler: drop the connection (once) so every blocked read fails and resumes."""
        return lambda: asyncio.ensure_future(self.reset(generation))


def _by_size(plan: FilePlan) -> int:
    return -plan.entry.size


def _take_from(plans: deque[FilePlan]) -> Callable[[], Awaitable[FilePlan | None]]:
    """Plans from a deque, then None."""

    async def take() -> FilePlan | None:
        return plans.popleft() if plans else None

    return take


def _take_until_none(
    plans: asyncio.Queue[FilePlan | None],
) -> Callable[[], Awaitable[FilePlan | None]]:
    """Plans from a queue as they come, until a None (left there for every other taker)."""

    async def take() -> FilePlan | None:
        plan = await plans.get()
        if plan is None:
            plans.put_nowait(None)
        return plan

    return take


def _load_previous(dest: Path) -> Manifest | None:
    try:
        return load_manifest(dest)
    except ManifestError:
        return None  # unreadable: only used to spot stale .part files


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


async def _run_all(coros: list) -> None:
    """Run the workers together; the first error cancels the others and is raised."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    if not tasks:
        return
    try:
        done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    except BaseException:
        await _cancel(tasks)
        raise
    await _cancel(list(pending))
    for task in done:
        exc = task.exception()
        if isinstance(exc, Abort):
            raise exc.args[0]
        if exc is not None:
            raise exc


async def _cancel(tasks: list[asyncio.Future]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
