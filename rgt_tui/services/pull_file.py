"""One large file, streamed by a sender of the pull's pool (SFTP where that fails): resume
from its ``.part``, retry, check the hash, move into place.

``FilePuller.run`` loops until the file is in place or fails on its own:

- the ``.part`` is resumed from its size (``PartWriter`` hashes what is there first);
- blocks arrive in order from ``RemoteFile`` and are written and hashed in a thread;
- a dropped or stalled connection (``StallWatch``) is reset once for all workers, then
  the file resumes after a capped, jittered backoff; attempts that made progress do not
  count towards ``max_attempts``;
- a SHA-256 different from the manifest's drops the part and pulls once more from zero,
  then fails naming the file; a full local disk stops the whole pull (``Abort``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING

from rgt_tui.domain.manifest import Manifest
from rgt_tui.services.pull_local import FilePlan, LocalWriteError, PullError, finalize
from rgt_tui.services.pull_part import PartWriter
from rgt_tui.services.pull_types import Abort, PulledFile
from rgt_tui.services.records import pulled_path
from rgt_tui.services.remote_file import RemoteFile
from rgt_tui.services.stall import Stalled, StallWatch
from rgt_tui.transport.base import HostKeyError, SessionRefused, TransportError

if TYPE_CHECKING:
    from rgt_tui.services.pull import _Pull

WRITE_BATCH = 4 << 20  # bytes gathered before one threaded write + hash
RECORD_EVERY_S = 2.0  # pulled.json is saved at most this often while files finish


class ShortRead(Exception):
    """The box's file ended before the manifest's size."""


class FilePuller:
    """Pulls large files one at a time for a pull run (several pullers run at once)."""

    def __init__(self, pull: _Pull, manifest: Manifest) -> None:
        self.pull = pull
        self.manifest = manifest
        self._running = 0  # files of this puller in flight
        self._one_done = asyncio.Condition()  # notified as each of them ends

    async def run(self, plan: FilePlan, lane: int = 0) -> None:
        """Pull one file over SFTP session ``lane`` (each worker has its own), or streamed by
        the box's sender; failures of the file alone are recorded, others raise _Abort."""
        self._running += 1
        try:
            await self._run(plan, lane)
        finally:
            self._running -= 1
            async with self._one_done:
                self._one_done.notify_all()

    async def _session_freed(self) -> bool:
        """After a refused session: wait until another file ends (its sender is then idle
        in the pool, for this file); False when no other file is in flight."""
        if self._running <= 1:
            return False
        async with self._one_done:
            await self._one_done.wait()
        return True

    async def _run(self, plan: FilePlan, lane: int) -> None:
        remote = self.manifest.display(plan.entry.root, plan.entry.path)
        attempt, restarted, received = 0, False, 0
        stream = self.pull.options.stream_large
        while True:
            writer = PartWriter(
                self.pull.dest / plan.part, plan.entry.size, fsync=self.pull.options.fsync
            )
            generation = self.pull.generation
            before = received
            try:
                await writer.open()
                self.pull.tracker.start_file(
                    plan.local, plan.entry.size, writer.offset, attempt + 1
                )
                resumed_from = writer.offset if not restarted else 0
                if writer.offset < plan.entry.size:
                    await self.pull.transport.connect()  # a no-op unless a drop closed it
                received += await self._copy(remote, writer, plan.local, generation, lane, stream)
                digest = await writer.finish()
            except SessionRefused:
                # The box allows no more sessions now (MaxSessions): once another file is
                # done its sender is free; with none in flight, SFTP's shared lane 0.
                await writer.abandon()
                received += writer.received
                stream = await self._session_freed()
                continue
            except LocalWriteError as exc:
                await writer.abandon()
                if exc.disk_full:
                    raise self.pull.abort_local(exc) from exc
                return self._fail(plan, f"cannot write locally: {exc}")
            except (TransportError, Stalled) as exc:
                await writer.abandon()
                received += writer.received
                attempt = 0 if received > before else attempt + 1
                if isinstance(exc, HostKeyError):
                    raise Abort(PullError(str(exc))) from exc
                if attempt >= self.pull.options.max_attempts:
                    reason = exc.message if isinstance(exc, TransportError) else str(exc)
                    raise self.pull.abort_lost(reason) from exc
                delay = self.pull.options.backoff.delay(max(1, attempt))
                why = str(exc) if isinstance(exc, Stalled) else exc.message
                self.pull.tracker.file_state(
                    plan.local, "retrying", f"{why}; again in {delay:.0f} s"
                )
                await self.pull.reset(generation)
                await asyncio.sleep(delay)
                continue
            except FileNotFoundError:
                await writer.abandon()
                return self._fail(
                    plan, f"{remote} is no longer on the box (removed after the manifest)"
                )
            except ShortRead as exc:
                await writer.abandon()
                return self._fail(plan, f"{remote} shrank on the box after the manifest ({exc})")
            except OSError as exc:
                await writer.abandon()
                return self._fail(plan, f"cannot read {remote} on the box: {exc.strerror or exc}")
            except BaseException:
                await writer.abandon()
                raise
            if digest != plan.entry.sha256:
                if not restarted:
                    # A part from an older version, or a corrupted transfer: once from zero.
                    restarted = True
                    self.pull.tracker.restart_file(plan.local)
                    await writer.discard()
                    continue
                return self._fail(
                    plan,
                    f"SHA-256 still differs from the box's after a fresh pull from zero "
                    f"(box {plan.entry.sha256[:12]}…, local {digest[:12]}…): the file is "
                    "changing on the box, or data is corrupted in transit",
                )
            await asyncio.to_thread(self._finalize, plan, digest)
            self.pull.pulled.append(
                PulledFile(plan.local, plan.entry.size, digest, resumed_from, received)
            )
            self.pull.tracker.finish_file(plan.local, ok=True)
            return None

    def _finalize(self, plan: FilePlan, digest: str) -> None:
        final = finalize(self.pull.dest, plan)
        self.pull.record.put(plan.local, digest, final)
        if time.monotonic() - self.pull.record_saved > RECORD_EVERY_S:
            self.pull.record_saved = time.monotonic()
            try:
                self.pull.record.save(self.pull.dest)
            except OSError as exc:
                raise LocalWriteError(pulled_path(self.pull.dest), exc) from exc

    def _fail(self, plan: FilePlan, why: str) -> None:
        self.pull.failed.append((plan.local, why))
        self.pull.tracker.finish_file(plan.local, ok=False)

    async def _copy(
        self, remote: str, writer: PartWriter, local: str, generation: int, lane: int, stream: bool
    ) -> int:
        """Append the rest of ``remote`` to the part; returns the bytes written."""
        size = writer.size
        if writer.offset >= size:
            return 0
        options = self.pull.options
        source = await RemoteFile.open(
            self.pull.transport,
            remote,
            options.block_size,
            options.max_requests,
            lane,
            sender=self.pull.senders.stream if stream else None,
        )
        batch: list[bytes] = []
        batched = 0
        try:
            stall = self.pull.options.stall_timeout_s
            with StallWatch(stall, on_stall=self.pull.drop_later(generation)) as watch:
                async for chunk in source.blocks(writer.offset, size - writer.offset):
                    watch.kick()
                    batch.append(chunk)
                    batched += len(chunk)
                    if batched >= WRITE_BATCH:
                        full, batch, n, batched = batch, [], batched, 0
                        await writer.submit(full)  # written while the next blocks arrive
                        self.pull.tracker.advance(local, n)
        except BaseException:
            # Keep what arrived in order: a resume then re-sends only what was in flight.
            with contextlib.suppress(BaseException):
                await writer.drain()
            writer.write_now(batch, quiet=True)
            raise
        finally:
            await source.close()
        await writer.write(batch)
        self.pull.tracker.advance(local, batched)
        if writer.offset != size:
            raise ShortRead(f"{writer.offset} of {size} bytes")
        return writer.received
