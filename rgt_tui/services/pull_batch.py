"""Small files in batches over one sender's channel of the host's connection.

Over SFTP each file costs an open, a read and a close, each a round trip and a few SSH
packets; for thousands of small files that per-file work, not the bytes, sets the pace.
So files under ``SMALL_FILE`` go in batches through ``rgt_tui/agent/sendfiles.py`` on a
channel of the same connection (to the manifest scan's shared socket, or an exec
channel), framed raw (``FrameParser``), by senders of the pull's ``SenderPool``: the
first ones start while the box is still taking the manifest, and carry the large files
once their batches are done. Each file is checked
against the manifest's SHA-256 before it is written; one that does not match, or that
the box could not read, falls back to the one-file path (``FilePuller``: streamed, SFTP
where that fails; it retries from zero once and names it if it still fails). So does the
rest of a batch whose output stops making sense.

A batch cut off by a dropped connection keeps every file already written; the rest go
again (each is smaller than one SFTP read window, so nothing large is fetched twice).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rgt_tui.agent.sendfiles import START as SENDFILES_START
from rgt_tui.domain.manifest import Manifest
from rgt_tui.services.io_threads import run_io
from rgt_tui.services.pull_local import FilePlan, LocalWriteError, PulledRecord, finalize_many
from rgt_tui.services.stall import Stalled, StallWatch
from rgt_tui.transport.base import TransportError

if TYPE_CHECKING:
    from rgt_tui.services.pull import _Pull

SMALL_FILE = 1 << 20  # files below this size go in batches
BATCH_FILES = 10_000  # caps per batch (the file list travels on stdin)
BATCH_BYTES = 256 << 20
WRITE_GROUP_FILES = 64  # files written (and synced together) per worker-thread call
WRITE_GROUP_BYTES = 8 << 20
MAX_PENDING_WRITES = 3


def make_batches(files: Sequence[FilePlan], streams: int) -> list[list[FilePlan]]:
    """Split small files into as few batches as ``streams`` allow, each within the caps.

    Every batch is one request with its own start-up on the box, so fewer, larger batches
    are faster; a dropped batch re-sends
    only its files that had not arrived yet, so their size costs nothing on a resume.
    """
    if not files:
        return []
    total = sum(f.entry.size for f in files)
    count = max(streams, -(-len(files) // BATCH_FILES), -(-total // BATCH_BYTES))
    per = -(-len(files) // count)
    return [list(files[i : i + per]) for i in range(0, len(files), per)]


class BatchPuller:
    """Pulls batches of small files for one pull run; unmatched files go to ``fallback``."""

    def __init__(self, pull: _Pull, manifest: Manifest) -> None:
        self.pull = pull
        self.manifest = manifest
        self.fallback: list[FilePlan] = []

    async def run(self, batch: list[FilePlan]) -> None:
        """Pull one batch, retrying what a dropped connection cut off."""
        remaining = batch
        attempt = 0
        options = self.pull.options
        while remaining:
            generation = self.pull.generation
            done: set[int] = set()
            try:
                await self.pull.transport.connect()
                await self._stream(remaining, done, generation)
            except (TransportError, Stalled) as exc:
                if isinstance(exc, TransportError) and self.pull.transport.connected:
                    # The connection is fine: the script itself failed (no python3?).
                    self.fallback += [p for i, p in enumerate(remaining) if i not in done]
                    return
                attempt = 0 if done else attempt + 1
                remaining = [p for i, p in enumerate(remaining) if i not in done]
                if attempt >= options.max_attempts:
                    reason = exc.message if isinstance(exc, TransportError) else str(exc)
                    raise self.pull.abort_lost(reason) from exc
                await self.pull.reset(generation)
                await asyncio.sleep(options.backoff.delay(max(1, attempt)))
                continue
            # A clean end without some files (should not happen): the one-file path tries them.
            self.fallback += [p for i, p in enumerate(remaining) if i not in done]
            return

    async def _stream(self, files: list[FilePlan], done: set[int], generation: int) -> None:
        request = [(self.manifest.display(p.entry.root, p.entry.path), p.entry.size) for p in files]
        parser = FrameParser(len(files))
        group: list[tuple[FilePlan, bytes]] = []
        group_bytes = 0
        writes: list[asyncio.Future] = []  # writes run while the next files stream in
        try:
            stall = self.pull.options.stall_timeout_s
            with StallWatch(stall, on_stall=self.pull.drop_later(generation)) as watch:
                stream = self.pull.senders.stream(request, parser.complete)
                async with contextlib.aclosing(stream) as chunks:  # stops the box's process too
                    async for chunk in chunks:
                        watch.kick()
                        for index, data in parser.feed(chunk):
                            done.add(index)
                            if data is None:
                                self.fallback.append(files[index])  # unreadable on the box
                                continue
                            group.append((files[index], data))
                            group_bytes += len(data)
                            if len(group) >= WRITE_GROUP_FILES or group_bytes >= WRITE_GROUP_BYTES:
                                writes.append(asyncio.ensure_future(self._write(group)))
                                group, group_bytes = [], 0
                                if len(writes) >= MAX_PENDING_WRITES:
                                    await writes.pop(0)
                        if parser.error:
                            raise TransportError(self.pull.host.name, parser.error)
        finally:
            # Files that arrived whole are kept even when the stream broke off.
            if group:
                writes.append(asyncio.ensure_future(self._write(group)))
            results = await asyncio.gather(*writes, return_exceptions=True)
            failures = [r for r in results if isinstance(r, BaseException)]
            if failures:
                raise failures[0]

    async def _write(self, group: list[tuple[FilePlan, bytes]]) -> None:
        options = self.pull.options
        try:
            written, mismatched = await run_io(
                _check_write, self.pull.dest, group, self.pull.record, options.fsync
            )
        except LocalWriteError as exc:
            raise self.pull.abort_local(exc) from exc
        self.fallback += mismatched
        for plan, size, digest in written:
            self.pull.small_done(plan, size, digest)


def _check_write(
    dest: Path, group: list[tuple[FilePlan, bytes]], record: PulledRecord, fsync: bool
) -> tuple[list[tuple[FilePlan, int, str]], list[FilePlan]]:
    """Keep the files whose SHA-256 matches the manifest and write them (blocking).

    Returns (written as (plan, size, digest), the plans that did not match).
    """
    ready: list[tuple[FilePlan, bytes, str]] = []
    mismatched: list[FilePlan] = []
    for plan, data in group:
        digest = hashlib.sha256(data).hexdigest()
        if len(data) != plan.entry.size or digest != plan.entry.sha256:
            mismatched.append(plan)
            continue
        ready.append((plan, data, digest))
    finalize_many(dest, ready, record, fsync)
    return [(plan, len(data), digest) for plan, data, digest in ready], mismatched


class FrameError(Exception):
    """The sender's output does not follow its format (the rest of the batch goes one by one)."""


class FrameParser:
    """Splits the sender's stdout, fed in chunks cut anywhere, into ``(index, bytes)``
    per file (``bytes`` None for a file the box could not read). See ``sendfiles.py``.

    Output that breaks the format sets ``error``; the files parsed before it still come
    back, and nothing after it is parsed.
    """

    MAX_HEADER = 4096  # a frame header is short; a longer line means the stream is lost

    def __init__(self, count: int) -> None:
        self.count = count
        self._buf = bytearray()
        self._started = False
        self._file: tuple[int, int] | None = None  # (index, size) of the file being read
        self._done = False  # the DONE line came: the reply is whole
        self.error = ""

    def complete(self) -> bool:
        """Whether the whole reply (up to its DONE line) has been parsed."""
        return self._done

    def feed(self, chunk: bytes) -> list[tuple[int, bytes | None]]:
        """The frames completed by ``chunk`` (none once ``error`` is set)."""
        frames: list[tuple[int, bytes | None]] = []
        if not self.error:
            self._buf += chunk
            try:
                self._parse(frames)
            except FrameError as exc:
                self.error = str(exc)
        return frames

    def _parse(self, frames: list[tuple[int, bytes | None]]) -> None:
        buf = self._buf
        pos = 0
        try:
            while True:
                if self._file is not None:
                    index, size = self._file
                    if len(buf) - pos < size:
                        break
                    frames.append((index, bytes(buf[pos : pos + size])))
                    pos += size
                    self._file = None
                    continue
                end = buf.find(b"\n", pos)
                if end < 0:
                    if len(buf) - pos > self.MAX_HEADER and self._started:
                        raise FrameError("small-file sender: a frame header is far too long")
                    break
                line = bytes(buf[pos:end])
                pos = end + 1
                if len(line) > self.MAX_HEADER and self._started:
                    raise FrameError("small-file sender: a frame header is far too long")
                if not self._started:
                    # Whatever a login script printed comes before the start line.
                    self._started = line + b"\n" == SENDFILES_START
                    continue
                frame = self._header(line)
                if frame is not None:
                    frames.append(frame)
        finally:
            del buf[:pos]  # cheap: a bytearray drops its front without copying the rest

    def _header(self, line: bytes) -> tuple[int, None] | None:
        """Parse one header: a file's size starts its bytes; an error is a frame itself."""
        head, _, rest = line.partition(b" ")
        if line == b"DONE":
            self._done = True
            return None
        if head.isdigit() and int(head) < self.count:
            if rest.isdigit():
                self._file = (int(head), int(rest))
                return None
            if rest.startswith(b"E "):
                return int(head), None
        raise FrameError(f"small-file sender: unexpected output {line[:60]!r}")


__all__ = ["SMALL_FILE", "BatchPuller", "FrameError", "FrameParser", "make_batches"]
