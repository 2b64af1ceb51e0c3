"""One file on a box, read as an in-order stream of blocks for the pull.

Over SSH the bytes come from ``rgt_tui/agent/sendfiles.py`` (``send_one``:
``os.sendfile`` on the box, raw bytes on the channel, the pull's window of
``block_size`` x ``max_requests`` bytes in flight), from a sender of the pull's
``SenderPool`` on a channel of the host's connection (to the manifest scan's shared
socket, or an exec channel). Against SFTP reads of the same files that took a third less
CPU on both sides (no read requests to send, parse and answer; sshd only moves a pipe's
or socket's bytes): bench large files 2.6-2.7 s -> 1.8-2.1 s with hashing
(docs/pulls.md). Where the sender cannot run or its output makes no sense while the
connection is up, the rest of the file is read over SFTP, with many read requests in
flight and blocks handed on in order as the gap before them fills. Transports without
SFTP (this machine) read through ``open_reader``. Errors come out as the transport maps
them: FileNotFoundError / PermissionError / OSError for the file, TransportError for the
connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import math
from collections.abc import AsyncIterator, Callable

import asyncssh

from rgt_tui.agent.sendfiles import START as SENDFILES_START
from rgt_tui.transport.base import FileReader, SessionRefused, Transport, TransportError

log = logging.getLogger(__name__)

READER_CHUNK = 4 << 20  # read size for transports without SFTP (this machine)
# Reads in flight per file: enough for READ_RATE per file over twice the measured round
# trip (the link's bandwidth-delay product, with room for a round trip that grows under
# load), at least MIN_READS. Not more than that: on loopback, 16 reads of 256 KiB in flight
# instead of 4 cost the client and sshd ~15% more CPU and the large files ~10% more time
# (blocks fall out of cache between decryption, hashing and the write).
READ_RATE = 64e6  # bytes/s per file; four files at once fill a 2 Gbit/s link
MIN_READS = 4
NOISE_LIMIT = 64 << 10  # output before the sender's start line (a login script's) at most


def reads_in_flight(round_trip_s: float | None, block_size: int, most: int) -> int:
    """How many ``block_size`` reads to keep in flight for one file, at most ``most``."""
    if round_trip_s is None:
        return most  # nothing measured: the most the options allow
    wanted = math.ceil(2 * round_trip_s * READ_RATE / block_size)
    return max(min(MIN_READS, most), min(wanted, most))


class RemoteFile:
    """One file on the box, read in order as blocks: streamed by the box's sender where the
    transport can run it, else over SFTP, else through ``open_reader``."""

    def __init__(self, transport: Transport, path: str) -> None:
        self.transport, self.path = transport, path
        self._sftp_file: asyncssh.SFTPClientFile | None = None
        self._reader: FileReader | None = None
        self._sender: Callable[..., AsyncIterator[bytes]] | None = None  # for streaming
        self._sftp_args: tuple[int, int, int] = (0, 0, 0)

    @classmethod
    async def open(
        cls,
        transport: Transport,
        path: str,
        block_size: int,
        max_requests: int,
        lane: int = 0,
        *,
        sender: Callable[..., AsyncIterator[bytes]] | None = None,
    ) -> RemoteFile:
        """Open ``path`` on the box. ``sender`` (``SenderPool.stream``: request and a
        reply-is-whole test -> byte stream) streams it over a sender's channel; without one,
        or where the transport has no SFTP to fall back on, it is read over SFTP session
        ``lane`` with up to ``max_requests`` reads of ``block_size`` in flight (fewer when
        the box is near: reads_in_flight)."""
        self = cls(transport, path)
        self._sftp_args = (block_size, max_requests, lane)
        if getattr(transport, "sftp", None) is None:
            self._reader = await transport.open_reader(path)
        elif sender is not None:
            self._sender = sender
        else:
            await self._open_sftp()
        return self

    async def _open_sftp(self) -> None:
        block_size, max_requests, lane = self._sftp_args
        try:
            client = await self.transport.sftp(lane)  # type: ignore[attr-defined]
            block = min(block_size, client.limits.max_read_len or block_size)
            trip = getattr(self.transport, "sftp_round_trip_s", None)
            requests = reads_in_flight(trip, block, max_requests)
            self._sftp_file = await client.open(
                self.path, "rb", block_size=block, max_requests=requests
            )
        except (OSError, asyncssh.Error) as exc:
            raise self._error(exc) from exc

    def _error(self, exc: BaseException) -> Exception:
        mapper = getattr(self.transport, "file_error", None)
        if mapper is not None:
            return mapper(exc, self.path)
        return TransportError(self.transport.host, str(exc) or type(exc).__name__)

    async def blocks(self, offset: int, length: int) -> AsyncIterator[bytes]:
        """The bytes of ``[offset, offset + length)`` in order, as they arrive."""
        if self._sender is not None:
            sent = 0
            try:
                async for chunk in self._streamed(offset, length):
                    sent += len(chunk)
                    yield chunk
                return
            except TransportError as exc:
                if isinstance(exc, SessionRefused) or not self.transport.connected:
                    raise  # the pull waits for a session, or reconnects
                # The connection is fine: the box's sender failed (or its output made no
                # sense). The rest of this file goes over SFTP.
                log.info("%s: streaming %s failed (%s); SFTP takes over", exc.host, self.path, exc)
            offset, length = offset + sent, length - sent
            self._sender = None
            await self._open_sftp()
        if self._sftp_file is None:
            async for chunk in self._reader_blocks(offset, length):
                yield chunk
            return
        # read_parallel keeps many requests in flight and yields blocks as they land,
        # possibly out of order; hold the early ones until the gap before them fills.
        try:
            parallel = (await self._sftp_file.read_parallel(length, offset)).__aiter__()
            pending: dict[int, bytes] = {}
            expected = offset
            while True:
                try:
                    at, data = await parallel.__anext__()
                except StopAsyncIteration:
                    return
                pending[at] = data
                while expected in pending:
                    data = pending.pop(expected)
                    if not data:
                        break
                    expected += len(data)
                    yield data
        except (OSError, asyncssh.Error) as exc:
            raise self._error(exc) from exc

    async def _streamed(self, offset: int, length: int) -> AsyncIterator[bytes]:
        """The sender's bytes for ``[offset, offset + length)`` (fewer if the file is shorter
        now); FileNotFoundError / PermissionError / OSError when the box cannot read it."""
        request = {"path": self.path, "offset": offset, "size": offset + length}
        frames = _OneFile(self.transport.host, self.path)
        assert self._sender is not None
        reply = self._sender(request, frames.complete)
        async with contextlib.aclosing(reply) as stream:  # stops the box's process if cut off
            async for chunk in stream:
                data = frames.feed(chunk)
                if data:
                    yield data
        frames.finish()

    async def _reader_blocks(self, offset: int, length: int) -> AsyncIterator[bytes]:
        end = offset + length
        while offset < end:
            data = await self._reader.read(offset, min(READER_CHUNK, end - offset))
            if not data:
                return
            offset += len(data)
            yield data

    async def close(self) -> None:
        """Release the handle; never raises (the connection may be gone)."""
        handle, self._sftp_file = self._sftp_file, None
        if handle is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(handle.close(), 5)
        if self._reader is not None:
            await self._reader.close()


class _OneFile:
    """Parses ``send_one``'s output, fed in chunks cut anywhere: skips what comes before
    the start line, reads the frame header, then passes the file's bytes through."""

    def __init__(self, host: str, path: str) -> None:
        self.host, self.path = host, path
        self._head = bytearray()  # until the header line is complete
        self._left: int | None = None  # file bytes still to come, once the header is read
        self._tail = b""  # what followed the file's bytes (its DONE line)

    def feed(self, chunk: bytes) -> bytes:
        """The file's bytes in ``chunk`` (b"" while the header is still coming)."""
        if self._left is None:
            self._head += chunk
            chunk = self._header()
            if self._left is None:
                return b""
        take = min(self._left, len(chunk))
        self._left -= take
        if take == len(chunk):
            return chunk
        self._tail = (self._tail + chunk[take:])[:8]
        return chunk[:take]

    def complete(self) -> bool:
        """Whether the reply is whole: every byte of the file, then its DONE line."""
        return self._left == 0 and self._tail.startswith(b"DONE\n")

    def finish(self) -> None:
        """After a clean end: the header must have come (a file that is shorter now simply
        ends early; the pull reports it)."""
        if self._left is None:
            raise TransportError(self.host, f"the box's sender sent no data for {self.path}")

    def _header(self) -> bytes:
        at = self._head.find(SENDFILES_START)
        if at < 0:
            if len(self._head) > NOISE_LIMIT:
                raise TransportError(self.host, "the box's sender printed no start line")
            return b""
        end = self._head.find(b"\n", at + len(SENDFILES_START))
        if end < 0:
            if len(self._head) - at > NOISE_LIMIT:
                raise TransportError(self.host, "the box's sender sent a broken header")
            return b""
        header = bytes(self._head[at + len(SENDFILES_START) : end]).decode("ascii", "replace")
        rest = bytes(self._head[end + 1 :])
        self._head = bytearray()
        fields = header.split(" ", 3)
        if len(fields) == 2 and fields[0] == "0" and fields[1].isdigit():
            self._left = int(fields[1])
            return rest
        if len(fields) == 4 and fields[:2] == ["0", "E"] and fields[2].isdigit():
            raise _file_error(int(fields[2]), _reason(fields[3]), self.host, self.path)
        raise TransportError(self.host, f"the box's sender sent a broken header: {header[:80]!r}")


def _reason(text: str) -> str:
    try:
        reason = json.loads(text)
    except ValueError:
        return text
    return reason if isinstance(reason, str) else text


def _file_error(code: int, reason: str, host: str, path: str) -> OSError:
    """The exception SFTP's errors map to (``SshTransport.file_error``), from an errno."""
    if code == errno.ENOENT:
        return FileNotFoundError(errno.ENOENT, f"no such file on {host}", path)
    if code in (errno.EACCES, errno.EPERM):
        return PermissionError(code, f"permission denied on {host}", path)
    return OSError(code or errno.EIO, f"{host}: {reason}", path)
