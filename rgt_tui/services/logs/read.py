"""A one-shot read of a log as it is now (``rgt-tui logs`` without ``--follow``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

from rgt_tui.domain.logscan import CrashScanner, LogChunk, LogLine, LogPosition
from rgt_tui.services.logs.cursor import ANCHOR_BYTES, READ_CHUNK, Cursor, not_a_log, tail_offset
from rgt_tui.transport.base import Transport


@dataclass(frozen=True)
class LogRead:
    """A one-shot read of a log: its lines, the unfinished last line, where it ended."""

    lines: tuple[LogLine, ...]
    partial: str
    position: LogPosition


async def iter_log(
    transport: Transport,
    path: str,
    *,
    tail_lines: int | None = None,
    highlight: bool = False,
    chunk_size: int = READ_CHUNK,
) -> AsyncIterator[LogChunk]:
    """Read a log once, to its current end, as chunks (the last one carries ``partial``).

    ``tail_lines`` starts at the last N complete lines. FileNotFoundError when missing.
    """
    reader = await transport.open_reader(path)
    try:
        st = await reader.fstat()
        not_a_log(st)
        start = 0 if tail_lines is None else await tail_offset(reader, st.size, tail_lines)
        anchor = await reader.read(max(0, start - ANCHOR_BYTES), min(ANCHOR_BYTES, start))
        cursor = Cursor(reader, st.inode, LogPosition(start, anchor, st.inode))
        scanner = CrashScanner()
        while True:
            outcome, texts = await cursor.read_more(chunk_size)
            if outcome != "data":
                break
            lines = tuple(LogLine(t, scanner.scan(t) if highlight else None) for t in texts)
            yield LogChunk(lines, cursor.position, partial=cursor.splitter.partial)
        yield LogChunk((), cursor.position, partial=cursor.splitter.partial)
    finally:
        await reader.close()


async def read_log(
    transport: Transport, path: str, *, tail_lines: int | None = None, highlight: bool = False
) -> LogRead:
    """The whole log (or its last ``tail_lines`` lines) as it is now."""
    lines: list[LogLine] = []
    last: LogChunk | None = None
    async for chunk in iter_log(transport, path, tail_lines=tail_lines, highlight=highlight):
        lines += chunk.lines
        last = chunk
    assert last is not None
    return LogRead(tuple(lines), last.partial, last.position)
