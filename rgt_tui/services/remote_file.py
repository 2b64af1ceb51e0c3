"""One file on a box, read as an in-order stream of blocks for the pull.

Over SSH it uses the connection's SFTP client with ``read_parallel``: many read requests
stay in flight (``block_size`` x ``max_requests`` bytes) and blocks are handed on in order
as soon as the gap before them fills, so the pull can write and hash while the rest is
still on the wire. Transports without SFTP (this machine) read through ``open_reader``.
Errors come out as the transport maps them: FileNotFoundError / PermissionError / OSError
for the file, TransportError for the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator

import asyncssh

from rgt_tui.transport.base import FileReader, Transport, TransportError

READER_CHUNK = 4 << 20  # read size for transports without SFTP (this machine)
# Reads in flight per file: enough for READ_RATE per file over twice the measured round
# trip (the link's bandwidth-delay product, with room for a round trip that grows under
# load), at least MIN_READS. Not more than that: on loopback, 16 reads of 256 KiB in flight
# instead of 4 cost the client and sshd ~15% more CPU and the large files ~10% more time
# (blocks fall out of cache between decryption, hashing and the write).
READ_RATE = 64e6  # bytes/s per file; four files at once fill a 2 Gbit/s link
MIN_READS = 4


def reads_in_flight(round_trip_s: float | None, block_size: int, most: int) -> int:
    """How many ``block_size`` reads to keep in flight for one file, at most ``most``."""
    if round_trip_s is None:
        return most  # nothing measured: the most the options allow
    wanted = math.ceil(2 * round_trip_s * READ_RATE / block_size)
    return max(min(MIN_READS, most), min(wanted, most))


class RemoteFile:
    """One open file on the box, read in order as blocks (SFTP when the transport has it)."""

    def __init__(self, transport: Transport, path: str) -> None:
        self.transport, self.path = transport, path
        self._sftp_file: asyncssh.SFTPClientFile | None = None
        self._reader: FileReader | None = None

    @classmethod
    async def open(
        cls, transport: Transport, path: str, block_size: int, max_requests: int, lane: int = 0
    ) -> RemoteFile:
        """Open ``path`` on the box over SFTP session ``lane``, with up to ``max_requests``
        reads of ``block_size`` in flight (fewer when the box is near: reads_in_flight)."""
        self = cls(transport, path)
        sftp = getattr(transport, "sftp", None)
        if sftp is None:
            self._reader = await transport.open_reader(path)
            return self
        try:
            client = await sftp(lane)
            block = min(block_size, client.limits.max_read_len or block_size)
            trip = getattr(transport, "sftp_round_trip_s", None)
            requests = reads_in_flight(trip, block, max_requests)
            self._sftp_file = await client.open(path, "rb", block_size=block, max_requests=requests)
        except (OSError, asyncssh.Error) as exc:
            raise self._error(exc) from exc
        return self

    def _error(self, exc: BaseException) -> Exception:
        mapper = getattr(self.transport, "file_error", None)
        if mapper is not None:
            return mapper(exc, self.path)
        return TransportError(self.transport.host, str(exc) or type(exc).__name__)

    async def blocks(self, offset: int, length: int) -> AsyncIterator[bytes]:
        """The bytes of ``[offset, offset + length)`` in order, as they arrive."""
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
