"""SFTP reads whose every request belongs to the read that made it.

asyncssh's parallel reader (``SFTPClientFile.read`` with a block size, ``read_parallel``)
runs each request as a task of its own and leaves them running when the read is cut off
(a log follower or a pull cancelled at quit, a consumer that stops early). Those tasks
then end in an error nobody reads — past the end of a log (``SFTPEOFError``), or the
connection closed under them (``SFTPConnectionLost``) — and asyncio prints "Task
exception was never retrieved" on the user's terminal as rgt-tui exits.

So handles are opened without asyncssh's parallel reader (``block_size=0``: one request
per ``read``), and the parallelism is here, where a read that ends, however it ends,
cancels and awaits every request it still has out.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

# One SFTP read request: (size, offset) -> the bytes the box answered; b"" at the end.
ReadOnce = Callable[[int, int], Awaitable[bytes]]

# asyncssh's own default for reads in flight: enough to fill 4 MiB, 16 to 128 of them.
_FILL_BYTES = 4 * 1024 * 1024


def default_in_flight(block: int) -> int:
    """Reads kept in flight when the caller names no number (asyncssh's default)."""
    return max(16, min(_FILL_BYTES // max(block, 1), 128))


async def read_serially(read_once: ReadOnce, offset: int, length: int, block: int) -> bytes:
    """Up to ``length`` bytes from ``offset``, one request of at most ``block`` bytes at a
    time, asking again after a short answer until the end of the file. Cut off, it leaves
    nothing running: the one request out is cancelled with it."""
    parts: list[bytes] = []
    at, left = offset, length
    while left > 0:
        data = await read_once(min(left, block), at)
        if not data:
            break
        parts.append(data)
        at += len(data)
        left -= len(data)
    return b"".join(parts)


async def parallel_blocks(
    read_once: ReadOnce, offset: int, length: int, block: int, in_flight: int
) -> AsyncIterator[tuple[int, bytes]]:
    """``(offset, bytes)`` pieces of ``[offset, offset + length)``, in any order, with up to
    ``in_flight`` requests of ``block`` bytes out; a short answer asks again for the rest,
    an empty one (the end of the file) asks nothing more after it. The pieces are the
    box's answers, unchecked (``checked_blocks`` checks them).

    However the iteration ends (done, an error, cancelled, closed early), every request
    still out is cancelled and awaited, so none ends later in an error nobody reads.
    """
    pending: dict[asyncio.Task[bytes], tuple[int, int]] = {}
    at, end = offset, offset + length

    def ask(start: int, size: int) -> None:
        pending[asyncio.ensure_future(read_once(size, start))] = (start, size)

    try:
        while True:
            while at < end and len(pending) < in_flight:
                size = min(block, end - at)
                ask(at, size)
                at += size
            if not pending:
                return
            done, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                start, size = pending.pop(task)
                data = task.result()  # an error: the finally retrieves the others
                if not data:
                    at = end  # the file ends before here
                    continue
                if len(data) < size:
                    ask(start + len(data), size - len(data))
                yield start, data
    finally:
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
