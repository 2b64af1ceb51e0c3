"""Stages 3 and 4, copy and finalise: bytes from the box into parts, then into place.

- Large files: SFTP with many reads in flight (``FileReader.blocks``), several files at
  once over the host's one connection, resumed from the part's size and hashed as the
  bytes are written, in order (out-of-order replies wait in memory: at most the reads in
  flight). From a box in the same datacenter, files of 64 MiB and more stream through
  OpenSSH's ``ssh`` first (``bulk.py``); SFTP brings whatever a stream did not.
- Small files: many per round trip — one ``tar`` on the box reads the asked names
  (NUL-separated, on stdin) and streams them; ``tar_stream.TarReader`` hands out only the
  asked regular files at the manifest's size. What tar cannot bring (no GNU tar on the
  box, a refusal, a file gone) goes the SFTP way.
- Finalise: a file counts only when its SHA-256 is the manifest's (one mismatch: pulled
  again from zero; a second: failed by name); then its data made durable (syncfs on
  Linux, a group of small files at once: ``fsutil.sync_files``), permissions never wider than
  on the box, rename into place, record. A copy started on the walk's listing
  (``early.py``) first waits there for the complete manifest (``_checked``).

A lost connection raises TransportError out of ``copy_files``; the caller reconnects and
calls again with what is left, each part resuming from its size.

A little over 400 lines on purpose: copy and finalise share the part files — what the copy
writes and hashes is what finalise checks and renames — and read as one stage.

Past 450 lines on purpose: the large and small files' copies share the part, the install
gate and finalising (the width is width.py's, reading tar streams tar_stream.py's, the
ssh route's choice and stream bulk.py's).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import os
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.manifest import ManifestEntry
from rgt_tui.fsutil import hash_fd, sync_files
from rgt_tui.services.pull import bulk
from rgt_tui.services.pull.local_tree import LocalConflict, in_thread
from rgt_tui.services.pull.plan import FilePlan
from rgt_tui.services.pull.state import PullRun
from rgt_tui.services.pull.tar_squeeze import (
    Squeeze,
    StreamStats,
    choose,
    inflated,
    tar_command,
    text_heavy,
    zstd_here,
)
from rgt_tui.services.pull.tar_stream import Data, End, Refused, Start, TarReader
from rgt_tui.services.pull.types import FileFailed, LocalWriteError, PulledFile
from rgt_tui.services.pull.width import copy_width
from rgt_tui.transport.openssh import OpenSsh

FLUSH_BYTES = 4 << 20  # in-order bytes handed to a writer thread at once
# A large file is fetched in segments, each through one of the file's SFTP sessions
# (``PullOptions.lanes_per_file``): one session's window cannot fill a far link. Each
# session keeps two segments out, so the next one's reads are asked while the last one's
# answers still arrive: with one, a session idled a round trip at every segment's end
# (far bench, copy stage 3.45-3.52 s with one 16 MiB segment out, 3.33-3.38 s with two of
# 4 MiB, 4.0 s with one of 4 MiB; docs/pulls.md).
SEGMENT = 4 << 20
SEGMENTS_OUT = 2  # per session
LOOK_AHEAD = 16 << 20  # per session: how far past the write position a segment may start
GROUP = 64  # small files made durable and renamed together
SMALL_AT_ONCE = 32  # small files copied at once by SFTP when tar cannot bring them
OPENSSH_BLOCK = 255 << 10  # the reads' size when the options leave it to the server


@dataclass
class _Part:
    """One file being written: its part's descriptor, how far it is, and its hash so far."""

    plan: FilePlan
    fd: int
    at: int
    digest: object  # hashlib's sha256, fed in order
    resumed_from: int

    def write(self, chunks: list, dest: Path) -> None:
        """Append ``chunks`` (blocking: a writer thread, or the loop for small files)."""
        try:
            for chunk in chunks:
                view = memoryview(chunk)
                while view:
                    n = os.pwrite(self.fd, view, self.at)
                    self.at += n
                    view = view[n:]
                self.digest.update(chunk)  # type: ignore[attr-defined]
        except OSError as exc:
            raise LocalWriteError(dest / self.plan.part, exc) from exc


async def copy_files(run: PullRun, plans: list[FilePlan]) -> None:
    """Copy every plan until each is pulled, failed or in conflict (``run.finished``)."""
    small = [p for p in plans if p.entry.size < run.options.small_file and not p.resume_from]
    chosen = {p.local for p in small}
    large = deque(sorted((p for p in plans if p.local not in chosen), key=lambda p: -p.entry.size))

    # Worker n reads through SFTP sessions of its own (lanes; lane 0 serves stats): each
    # is a channel with its own window, and one cannot fill a far link (WINDOW_BYTES);
    # a near one needs fewer (``width``): decided once, when the first lane is open.
    if large and run.width is None:
        run.width_rtt_s = await run.transport.lane_round_trip(1)
        run.width = copy_width(run.options, run.width_rtt_s)
    workers, per = run.width or (run.options.concurrency, run.options.lanes_per_file)
    streamed = deque(p for p in large if p.entry.size >= bulk.MIN_BYTES)
    if streamed and run.bulk is None:  # decided once a pull, by the first such file
        await bulk.choose(run)
    if isinstance(run.bulk, OpenSsh):
        large = deque(p for p in large if p.entry.size < bulk.MIN_BYTES)
    else:
        streamed.clear()

    def lanes(worker: int) -> tuple[int, ...]:
        worker %= workers  # a streaming worker's file goes by SFTP if ssh fails
        return tuple(range(1 + worker * per, 1 + (worker + 1) * per))

    async def sftp_worker(worker: int) -> None:
        while large:
            await _copy_one(run, large.popleft(), lanes(worker))

    async def stream_worker(worker: int) -> None:
        while streamed:
            await _copy_one(run, streamed.popleft(), lanes(worker))

    async def small_files() -> None:
        leftover = deque(await _copy_small(run, small) if small else [])
        lanes_in_all = run.options.concurrency * run.options.lanes_per_file

        # What tar did not bring (no GNU tar on the box, a refusal): many small files at
        # once, each a few round trips, spread over the sessions already open.
        async def small_worker(n: int) -> None:
            while leftover:
                await _copy_one(run, leftover.popleft(), (1 + n % lanes_in_all,))

        await together(small_worker(n) for n in range(min(SMALL_AT_ONCE, len(leftover))))

    at_once = min(bulk.FILES_AT_ONCE, run.options.concurrency) if streamed else 0  # --jobs
    streams = (stream_worker(n) for n in range(at_once))
    await together([small_files(), *(sftp_worker(n) for n in range(workers)), *streams])


async def _copy_one(run: PullRun, plan: FilePlan, lanes: tuple[int, ...]) -> None:
    """One file over SFTP: a hash mismatch pulls it once more from zero, then fails it."""
    while plan.local not in run.finished and plan.local not in run.leftover:
        again = plan.local in run.mismatched
        try:
            # The plan as checked: the complete manifest's, when it started early.
            pulled, plan = await _sftp_copy(run, plan, lanes, from_zero=again)
        except _NotListed:
            run.leftover.add(plan.local)
            run.tracker.drop_file(plan.local)
        except FileFailed as exc:
            run.fail(plan, str(exc))
        except LocalConflict as exc:
            run.conflict(plan, exc.told)
        except OSError as exc:  # the box's file: gone, unreadable
            run.fail(plan, f"cannot read it on the box: {exc.strerror or exc}")
        except TransportError as exc:
            if not run.transport.connected:
                raise  # the caller reconnects and resumes
            run.fail(plan, exc.message)  # refused by the transport (a hostile reply)
        else:
            if pulled is not None:
                run.done(plan, pulled)
                run.tracker.finish_file(plan.local, True)
            elif again:
                run.fail(
                    plan,
                    "its SHA-256 still differs from the manifest's after a second pull from "
                    "zero: it was rewritten on the box while it came (a running cell's "
                    "checkpoint?); a later pull takes it whole once it is written less "
                    "often, or once the cell ends",
                )
            else:
                run.mismatched.add(plan.local)
                # A part kept from an earlier pull was of another version (the file was
                # rewritten on the box since): the likely cause, not the route, which was
                # blamed and dropped (hour s17b #12). Pulled again from zero either way.
                resumed = plan.resume_from > 0
                why = "its kept part was of another version" if resumed else "hash mismatch"
                run.again[plan.local] = (plan.entry.size, why)
                run.tracker.file_state(plan.local, "retrying", why, attempt=2)
                if plan.local in run.streamed and not resumed:  # again by SFTP
                    run.bulk_off(plan.local, "its bytes through ssh did not match its SHA-256")


async def _sftp_copy(
    run: PullRun, plan: FilePlan, lanes: tuple[int, ...], *, from_zero: bool
) -> tuple[PulledFile | None, FilePlan]:
    """Copy one file into its part and finalise it (None when its hash is not the
    manifest's), with the plan it was checked against. A large file from a near box
    streams through OpenSSH's ``ssh`` first (``bulk``); SFTP brings what it did not."""
    size = plan.entry.size
    if plan.resume_from and not from_zero:
        # The kept part is hashed before a byte comes (0.6 s a GB here): shown meanwhile,
        # or a resumed pull of large checkpoints read "0/11 files" and nothing in flight.
        run.tracker.start_file(
            plan.local,
            size,
            plan.resume_from,
            state="checking",
            note="the part kept from the last pull",
        )
    part = await in_thread(_open_part, run, plan, 0 if from_zero else plan.resume_from)
    readers: list = []
    try:
        run.tracker.start_file(plan.local, size, part.at, 2 if from_zero else 1)
        while True:
            if isinstance(run.bulk, OpenSsh) and size >= bulk.MIN_BYTES and part.at < size:
                await bulk.stream_part(run, part, run.bulk, size)
            if part.at < size:
                if not readers:
                    readers = await _open_readers(run, plan, lanes, size - part.at)
                await _fetch_in_order(run, part, readers, size)
            checked = await _checked(run, plan, grown=True)
            if checked is None:
                await in_thread(_drop, run, part)
                raise _NotListed
            part.plan = checked
            if checked.entry.size == size:
                return await in_thread(_finish, run, part), checked
            # It grew between the walk's listing and its hash (a log, a checkpoint being
            # written): the part's bytes stay and the rest comes on top of them; the
            # manifest's SHA-256 decides (a file rewritten, not grown, is pulled again).
            plan, size = checked, checked.entry.size
            run.tracker.start_file(plan.local, size, part.at, 1)
    finally:
        _close_later(run, readers)
        if part.fd >= 0:
            os.close(part.fd)


async def _open_readers(run: PullRun, plan: FilePlan, lanes: tuple[int, ...], left: int) -> list:
    """The file's readers, one per lane (one for what one look-ahead holds), opened at once:
    a session costs a few round trips to start, a far box's 200 ms each; every one that
    opened is closed when another fails."""
    opening = [
        run.transport.open_reader(
            run.remote_path(plan),
            block_size=run.options.block_size,
            max_requests=run.options.max_requests,
            lane=lane,
        )
        # One session for what one session's look-ahead holds (16 MiB), as before segments
        # shrank to 4 MiB: more readers would also reserve twice the bandwidth budget ahead,
        # and under --bwlimit a box starts late behind another's reservations.
        for lane in (lanes if left > LOOK_AHEAD else lanes[:1])
    ]
    opened = await asyncio.gather(*opening, return_exceptions=True)
    readers = [r for r in opened if not isinstance(r, BaseException)]
    for outcome in opened:
        if isinstance(outcome, BaseException):
            _close_later(run, readers)
            raise outcome
    return readers


def _close_later(run: PullRun, readers: list) -> None:
    """Close ``readers`` in the background: each handle's close is a round trip (200 ms
    on a far box) nothing needs to wait for; the connection's end closes them anyway."""
    if not readers:
        return
    closing = asyncio.ensure_future(asyncio.gather(*(r.close() for r in readers)))
    run.closing.add(closing)
    closing.add_done_callback(_closed)
    closing.add_done_callback(run.closing.discard)


async def _fetch_in_order(run: PullRun, part: _Part, readers: list, size: int) -> None:
    """The rest of the file, in segments the readers (each through its own SFTP session)
    fetch at once; bytes are written and hashed in order as soon as they are contiguous.
    A reader keeps ``SEGMENTS_OUT`` segments out and starts one only within
    ``LOOK_AHEAD`` per reader of the write position, so what waits in memory is bounded
    by that and the reads in flight.

    Under a bandwidth budget the segments are chunks of ``Bandwidth.chunk_bytes`` (a tenth
    of a second of the rate), each asked for only once the budget grants it, in the
    file's order, by enough fetchers per reader to keep its ``max_requests`` reads in
    flight (as without a budget): the box sends what the budget allows, and the part grows at the
    budget's rate instead of waiting on one lane's 16 MiB segment while another's fills
    memory (see ``budget``)."""
    plan = part.plan
    budget = run.options.budget
    step = SEGMENT if budget is None else budget.chunk_bytes()
    todo = deque(range(part.at, size, step))
    waiting: dict[int, bytes] = {}  # pieces not yet written, by offset
    waiting_bytes = 0
    arrived, written = asyncio.Event(), asyncio.Event()
    ahead = len(readers) * LOOK_AHEAD
    writing = False  # the writer thread has a batch (popped from ``waiting``) in hand

    async def segment(reader, offset: int) -> None:  # noqa: ANN001
        nonlocal waiting_bytes
        length, got = min(step, size - offset), 0
        async for at, data in reader.blocks(offset, length):
            run.last_byte = time.monotonic()
            run.tracker.moved(plan.local, len(data))
            waiting[at] = data
            waiting_bytes += len(data)
            got += len(data)
            arrived.set()
            # The writer has a full batch to write, or is writing one: wait for it, so
            # what a drop can lose is the reads in flight and two batches, not all that
            # came meanwhile (a slow disk or a loaded machine let the lanes run on while a
            # batch was written: 10 MB held, seen in a loaded run). Not while a gap holds
            # the writer: the lane that fills it must go on.
            while waiting_bytes >= FLUSH_BYTES and (writing or part.at in waiting):
                written.clear()
                await written.wait()
        if got != length:
            raise FileFailed(
                f"the box's copy ends at {offset + got} of the manifest's {size} bytes: "
                "it changed after the scan; re-run the pull"
            )

    async def fetch(reader) -> None:  # noqa: ANN001
        while todo:
            if todo[0] >= part.at + ahead:
                written.clear()
                await written.wait()
                continue
            offset = todo.popleft()
            if budget is not None:
                # Reserved at once, in the order the chunks were claimed: the file's order.
                await budget.take(min(step, size - offset), tick=run.touch)
            await segment(reader, offset)

    async def write() -> None:
        nonlocal waiting_bytes, writing
        while part.at < size:
            batch, start = [], part.at
            at = start
            while at in waiting and at - start < FLUSH_BYTES:
                batch.append(waiting.pop(at))
                at += len(batch[-1])
            if not batch:
                arrived.clear()
                await arrived.wait()
                continue
            waiting_bytes -= at - start
            writing = True
            try:
                await in_thread(part.write, batch, run.dest)
            finally:
                writing = False
            run.tracker.advance(plan.local, at - start)
            written.set()

    # Under a budget: as many chunks out per reader as fill its reads in flight.
    block = run.options.block_size or OPENSSH_BLOCK
    per_reader = (
        SEGMENTS_OUT if budget is None else max(1, run.options.max_requests * block // step)
    )
    await together([write(), *(fetch(r) for r in readers for _ in range(per_reader))])


async def _copy_small(run: PullRun, plans: list[FilePlan]) -> list[FilePlan]:
    """The small files, by one tar stream per pull root; returns those tar did not bring."""
    by_root: dict[int, list[FilePlan]] = {}
    for plan in plans:
        by_root.setdefault(plan.entry.root, []).append(plan)
    leftover = []
    for root, group in by_root.items():
        leftover += await _tar_root(run, root, group)
    return leftover


async def _tar_root(run: PullRun, root: int, plans: list[FilePlan]) -> list[FilePlan]:
    manifest = run.manifest or run.listing  # the listing, when it starts early
    assert manifest is not None
    wanted = {p.entry.path: p for p in plans}
    reader = TarReader({name: p.entry.size for name, p in wanted.items()})
    squeeze = await _squeeze(run, manifest.roots[root].path, plans)
    command = tar_command(manifest.roots[root].path, squeeze.codecs)
    names = "".join(f"./{name}\0" for name in wanted)
    part: _Part | None = None
    ready: list[_Part] = []
    received: set[str] = set()
    stats = StreamStats()
    run.tar_streams.append((stats, squeeze.reason))
    stream = run.transport.stream_bytes(command, input=names)

    async def wire() -> AsyncIterator[bytes]:
        async for chunk in stream:
            run.last_byte = time.monotonic()
            run.tracker.moved(None, len(chunk))
            stats.wire += len(chunk)
            if run.options.budget is not None:  # the stream is read as consumed
                await run.options.budget.take(len(chunk), tick=run.touch)
            yield chunk

    try:
        async with (
            contextlib.aclosing(stream),
            contextlib.aclosing(wire()) as sent,
            contextlib.aclosing(inflated(run.host.name, sent, squeeze.codecs, stats)) as chunks,
        ):
            async for chunk in chunks:
                for event in reader.feed(chunk):
                    if isinstance(event, Start):
                        try:
                            part = _open_part(run, wanted[event.name], 0)
                        except FileFailed as exc:  # its bytes are read past, not written
                            run.fail(wanted[event.name], str(exc))
                        except LocalConflict as exc:
                            run.conflict(wanted[event.name], exc.told)
                    elif isinstance(event, Data) and part is not None:
                        part.write([event.chunk], run.dest)
                    elif isinstance(event, End) and part is not None:
                        ready.append(part)
                        received.add(event.name)
                        part = None
                    elif (
                        isinstance(event, Refused)
                        and not event.resized  # a log that grew: the SFTP way (listed size)
                        and event.name in wanted.keys() - received
                    ):
                        run.fail(wanted[event.name], f"refused: {event.reason}")  # not twice
                if len(ready) >= GROUP:
                    group, ready = ready, []  # handed over: never finished twice
                    await _finish_small(run, group)
                if reader.finished:
                    break
    except TransportError:
        if not run.transport.connected:
            raise
        # tar failed or is missing on the box: what it did not bring goes by SFTP.
    finally:
        if part is not None:
            os.close(part.fd)  # cut off mid-file: the SFTP way starts it again
        await _finish_small(run, ready)
    over = run.finished | run.leftover  # once: not a new set per file (3,000 files: 9M steps)
    return [p for p in plans if p.local not in over]


async def _squeeze(run: PullRun, root: str, plans: list[FilePlan]) -> Squeeze:
    """Whether the stream is compressed (``tar_squeeze.choose``); the round trip is
    measured (two SFTP stats of the root, the second a pure round trip) only for a
    text-heavy stream, once per pull."""
    files = [(p.entry.path, p.entry.size) for p in plans]
    budget = run.options.budget
    limit = budget.rate if budget is not None else None  # bytes/s
    auto = run.options.compress == "auto"
    if auto and run.rtt_s is None and not run.host.is_local and text_heavy(files):
        times = []
        for _ in range(2):
            start = time.monotonic()
            await run.transport.stat(root)
            times.append(time.monotonic() - start)
        run.rtt_s = min(times)
    here = zstd_here() is not None
    return choose(
        files, mode=run.options.compress, rtt_s=run.rtt_s, limit_bps=limit, zstd_here=here
    )


async def _finish_small(run: PullRun, parts: list[_Part]) -> None:
    """Finalise a group of small files together; a mismatch leaves its file for SFTP."""
    if not parts:
        return
    try:
        checked = [await _checked(run, part.plan) for part in parts]
    except BaseException:  # cancelled while the box still hashed: parts stay, closed
        for part in parts:
            os.close(part.fd)
        raise
    for part, plan in zip(parts, checked, strict=True):
        if plan is None:
            await in_thread(_drop, run, part)
            run.leftover.add(part.plan.local)
        else:
            part.plan = plan
    parts = [part for part, plan in zip(parts, checked, strict=True) if plan is not None]
    outcomes = await in_thread(_finish_group, run, parts)
    for part, outcome in zip(parts, outcomes, strict=True):
        plan = part.plan
        if isinstance(outcome, PulledFile):
            run.done(plan, outcome)
            run.tracker.add_done(plan.entry.size)
        elif isinstance(outcome, str):
            run.conflict(plan, outcome)
        else:
            run.mismatched.add(plan.local)  # pulled again, from zero, by SFTP
            run.again[plan.local] = (plan.entry.size, "hash mismatch in the small files' stream")


def _closed(closing: asyncio.Future) -> None:
    """A background close ended: its outcome is retrieved, so a close cut off when the
    event loop ends (Ctrl-C) is not reported as an exception never retrieved."""
    if not closing.cancelled():
        closing.exception()


class _NotListed(Exception):
    """The complete manifest does not list the file at the size its copy started on."""


async def _checked(run: PullRun, plan: FilePlan, *, grown: bool = False) -> FilePlan | None:
    """The plan as the complete manifest has it: a copy started on the walk's listing
    (no SHA-256 yet) waits here until the box has hashed everything, and is checked
    against that manifest only. None: it no longer lists the file at that size (or,
    ``grown``, at that size or larger: the caller copies the rest)."""
    if not plan.early:
        return plan
    assert run.checked is not None  # set before any early copy starts
    while not run.checked.done():
        run.touch()  # waiting for the box's hashes, not for a stalled link
        await asyncio.wait({run.checked}, timeout=1.0)
    entry = run.checked.result().get(plan.local)
    if entry is None or entry.size < plan.entry.size:
        return None
    if entry.size != plan.entry.size and not grown:
        return None
    return dataclasses.replace(plan, entry=entry, early=False)


# -- blocking helpers (worker threads) ----------------------------------------------------


def _drop(run: PullRun, part: _Part) -> None:
    """Close and remove a part the manifest does not vouch for (a version it no longer
    lists): the pull plans that file again from the complete manifest."""
    if part.fd >= 0:
        os.close(part.fd)
        part.fd = -1
    run.tree.remove(part.plan.part)


def _open_part(run: PullRun, plan: FilePlan, at: int) -> _Part:
    """The plan's part, cut to ``at`` bytes, with the hash of those bytes."""
    try:
        fd = run.tree.open_part(plan.part)
        os.ftruncate(fd, at)
        # Re-hashing a large resumed part takes a while: the stall watch must not take it
        # for a dead connection.
        digest = hash_fd(fd, at, on_block=lambda: setattr(run, "last_byte", time.monotonic()))
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:  # this file only: the rest can still land
            raise FileFailed(f"its name is too long for this file system ({exc.strerror})") from exc
        raise LocalWriteError(run.dest / plan.part, exc) from exc
    return _Part(plan, fd, at, digest, at)


def _finish(run: PullRun, part: _Part, *, grouped: bool = False) -> PulledFile | None:
    """Check the part's hash; put it in place. None (part dropped) on a mismatch.
    ``grouped``: ``_finish_group`` has made the data durable and syncs the folders."""
    plan = part.plan
    if part.digest.hexdigest() != plan.entry.sha256:  # type: ignore[attr-defined]
        os.close(part.fd)
        part.fd = -1
        run.tree.remove(plan.part)
        return None
    try:
        if run.options.fsync and not grouped:
            sync_files([part.fd])
        os.fchmod(part.fd, local_mode(plan.entry, run.umask))
        st = os.fstat(part.fd)
        os.close(part.fd)
        part.fd = -1
        sync = run.options.fsync and not grouped
        replaced = run.tree.install(
            plan.part, plan.local, plan.set_aside, sync=sync, over_link=plan.over_our_link
        )
    except OSError as exc:
        raise LocalWriteError(run.dest / plan.local, exc) from exc
    # The rename moved the file's ctime, so the record takes the installed file's stat;
    # it vouches only if that is still the file just checked (same inode, size, mtime).
    now = run.tree.lstat(plan.local)
    if now is not None and (now.st_ino, now.st_size, now.st_mtime_ns) == (
        st.st_ino,
        st.st_size,
        st.st_mtime_ns,
    ):
        run.record.put(plan.local, plan.entry.sha256 or "", now)
    else:
        run.record.forget(plan.local)
    received = part.at - part.resumed_from
    return PulledFile(
        plan.local,
        plan.entry.size,
        plan.entry.sha256 or "",
        part.resumed_from,
        received,
        replaced=replaced,
    )


def _finish_group(run: PullRun, parts: list[_Part]) -> list[PulledFile | str | None]:
    """``_finish`` for many small files: their data made durable at once (one syncfs on
    Linux, ``sync_files``), then each renamed, then the renames made durable at once."""
    outcomes: list[PulledFile | str | None] = []
    folders = set()
    try:
        if run.options.fsync:  # every part's data durable before any is renamed into place
            sync_files([part.fd for part in parts if part.fd >= 0])
        for part in parts:
            try:
                outcomes.append(done := _finish(run, part, grouped=True))
                if done is not None:
                    # Only where a file was renamed into place: a part that no longer
                    # hashes (rewritten at the same size) installs nothing, and its folder
                    # may never have been made; syncing it failed the whole pull (h571 #1).
                    folders.add(part.plan.local.rpartition("/")[0])
            except LocalConflict as exc:
                outcomes.append(exc.told)
    finally:  # a full disk stops the group: every part's descriptor is closed all the same
        for part in parts:
            if part.fd >= 0:
                os.close(part.fd)
                part.fd = -1
    if run.options.fsync and folders:  # the renames durable: one syncfs covers every folder
        fds: list[int] = []
        try:
            for folder in folders:
                fds.append(run.tree.folder(folder, create=False))
            sync_files(fds)
        finally:
            for fd in fds:
                os.close(fd)
    return outcomes


def local_mode(entry: ManifestEntry, umask: int) -> int:
    """The local permissions: never wider than the box's (no setuid, setgid, sticky, or
    group/other write; 0600 when the box did not say), nor than the user's ``umask``
    lets a new file be (the part is made 0600, so its final mode is set by hand)."""
    return (0o600 if entry.mode is None else entry.mode) & 0o755 & ~umask


async def together(coros) -> None:  # noqa: ANN001
    """Run coroutines together; the first error cancels the rest and is raised."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    if not tasks:
        return
    try:
        done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    for task in done:
        if task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
