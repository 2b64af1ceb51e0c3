"""One ``.part`` file being written: resumed from its size, hashed as it grows.

The SHA-256 is updated with every block written, and a resumed part is hashed once when
it is opened, so a finished file never has to be read back. Writes and hashing run in a
low-priority worker thread (``io_threads``; hashlib and file writes release the GIL),
keeping the event loop free for the SSH connection. Bytes go to the disk directly where the file system allows it
(``durable.Appender``), so the final fsync is quick and a large pull neither copies every
byte into the page cache nor fills it. Every local ``OSError`` becomes ``LocalWriteError``
so the pull can tell a full local disk from a problem on the box.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
from pathlib import Path

from rgt_tui.services.durable import Appender
from rgt_tui.services.io_threads import run_io
from rgt_tui.services.pull_local import LocalWriteError

HASH_BLOCK = 1 << 20


class PartWriter:
    """Appends to ``path`` (a ``.part`` file) up to ``size`` bytes, hashing as it goes."""

    def __init__(self, path: Path, size: int, *, fsync: bool = True) -> None:
        self.path = Path(path)
        self.size = size
        self.fsync = fsync
        self.offset = 0  # bytes in the part (resumed ones included)
        self.received = 0  # bytes appended through this writer
        self._hasher = hashlib.sha256()
        self._file: Appender | None = None
        self._inflight: asyncio.Future | None = None

    async def open(self) -> None:
        """Create or resume the part: hash what is there, then open it for appending."""
        await asyncio.to_thread(self._open)

    def _open(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                existing = os.fstat(fd).st_size
                if existing > self.size:
                    os.ftruncate(fd, 0)  # rgt-tui's own leftover from another version
                    existing = 0
                if existing:
                    self._hash_existing(existing)
                self._file = Appender(self.path, fd, existing)
            except BaseException:
                os.close(fd)
                raise
        except OSError as exc:
            raise LocalWriteError(self.path, exc) from exc
        self.offset = existing

    def _hash_existing(self, length: int) -> None:
        buf = bytearray(HASH_BLOCK)
        view = memoryview(buf)
        left = length
        with open(self.path, "rb", buffering=0) as f:
            while left:
                n = f.readinto(view[: min(HASH_BLOCK, left)])
                if not n:
                    break
                self._hasher.update(view[:n])
                left -= n

    async def submit(self, chunks: list[bytes]) -> None:
        """Hand ``chunks`` to a worker thread to append and hash, and return at once.

        One batch is in flight at a time (this waits for the previous one), so batches land
        in order while the caller goes on reading: stopping to wait for each write would
        let the pipeline of read requests drain. A write error surfaces at the next
        ``submit`` or ``drain``.
        """
        await self.drain()
        if chunks:
            self._inflight = run_io(self._append, chunks)

    async def drain(self) -> None:
        """Wait for the batch in flight. If cancelled meanwhile, the thread's write is still
        waited for before the cancellation goes on, so nobody closes the file under it."""
        inflight, self._inflight = self._inflight, None
        if inflight is None:
            return
        try:
            await asyncio.shield(inflight)
        except asyncio.CancelledError:
            with contextlib.suppress(BaseException):
                await inflight
            raise

    async def write(self, chunks: list[bytes]) -> None:
        """Append and hash ``chunks`` and wait until they are written."""
        await self.submit(chunks)
        await self.drain()

    def write_now(self, chunks: list[bytes], *, quiet: bool = False) -> None:
        """Append on the calling thread (the error path); ``quiet`` swallows write errors."""
        try:
            self._append(chunks)
        except LocalWriteError:
            if not quiet:
                raise

    def _append(self, chunks: list[bytes]) -> None:
        file = self._file
        if file is None or not chunks:
            return
        # The Appender copies the blocks into one buffer and hashes and writes it in one
        # call each per batch instead of one per SFTP block: each call that releases the
        # GIL has to win it back from the event loop (busy decrypting), so fewer, larger
        # calls mean fewer hand-offs.
        try:
            file.append(chunks, self._hasher.update)
        except OSError as exc:
            raise LocalWriteError(self.path, exc) from exc
        size = sum(len(c) for c in chunks)
        self.offset += size
        self.received += size

    async def finish(self) -> str:
        """Write what is pending, fsync (when asked) and close; returns the part's SHA-256."""
        await self.drain()
        await asyncio.to_thread(self._close)
        return self._hasher.hexdigest()

    def _close(self) -> None:
        file, self._file = self._file, None
        if file is None:
            return
        try:
            file.close(sync=self.fsync)
        except OSError as exc:
            raise LocalWriteError(self.path, exc) from exc

    async def abandon(self) -> None:
        """Close without syncing, keeping the part for a later resume; never raises."""
        if self._inflight is not None:
            with contextlib.suppress(BaseException):
                await self._inflight
        file, self._file = self._file, None
        if file is not None:
            file.abandon()

    async def discard(self) -> None:
        """Remove the part (rgt-tui's own temporary file) so the next try starts from zero."""
        await self.abandon()
        with contextlib.suppress(FileNotFoundError):
            await asyncio.to_thread(self.path.unlink)
