"""One open log file read forward by byte offset, remembering where complete lines end.

The box's SFTP has no inode (v3), so a file's identity is checked by content: the
``ANCHOR_BYTES`` just before an offset must still be there. The follower (``follow``)
and the one-shot read (``read``) both read through a ``Cursor``.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass

from rgt_tui.domain.logscan import MAX_LINE_BYTES, LineSplitter, LogPosition
from rgt_tui.transport.base import FileReader, FileStat, Transport

ANCHOR_BYTES = 128
READ_CHUNK = 256 * 1024
TAIL_BLOCK = 64 * 1024  # the first read back from a log's end; each next one doubles
TAIL_BLOCK_MAX = 1024 * 1024


@dataclass(frozen=True)
class Tail:
    """Begin a long log near its end: at its last ``lines`` complete lines, reading back
    at most ``max_bytes`` (fewer lines when they take more)."""

    lines: int
    max_bytes: int


class Cursor:
    """Reads one open file forward, splitting lines and remembering where lines end."""

    def __init__(
        self,
        reader: FileReader,
        inode: int | None,
        start: LogPosition,
        max_line: int = MAX_LINE_BYTES,
    ) -> None:
        self.reader = reader
        self.inode = inode
        self.max_line = max_line
        self.splitter = LineSplitter(max_line)
        self.read_end = start.offset  # bytes of the file read so far
        self.committed = start.offset  # end of the last complete line
        self.read_anchor = start.anchor  # the bytes just before read_end
        self.commit_anchor = start.anchor  # the bytes just before committed

    @property
    def position(self) -> LogPosition:
        return LogPosition(self.committed, self.commit_anchor, self.inode)

    async def read_more(self, size: int) -> tuple[str, list[str]]:
        """One read: ("data", lines), ("eof", []) or ("truncated", []).

        The read starts ``len(read_anchor)`` bytes early: if those bytes changed, the
        file was truncated or rewritten under the handle (copytruncate).
        """
        k = len(self.read_anchor)
        data = await self.reader.read(self.read_end - k, k + size)
        if data[:k] != self.read_anchor:
            return "truncated", []
        new = data[k:]
        if not new:
            return "eof", []
        start = self.read_end - k
        texts = self.splitter.feed(new)
        self.read_end += len(new)
        combined = self.read_anchor + new
        self.read_anchor = combined[-ANCHOR_BYTES:]
        self._commit(start, combined)
        return "data", texts

    def flush(self) -> list[str]:
        """The file is finished: its partial last line becomes a line."""
        texts = self.splitter.flush()
        self.committed, self.commit_anchor = self.read_end, self.read_anchor
        return texts

    def restart(self) -> None:
        """Read the same handle again from offset 0 (after a truncation)."""
        self.splitter = LineSplitter(self.max_line)
        self.read_end = self.committed = 0
        self.read_anchor = self.commit_anchor = b""

    def _commit(self, start: int, combined: bytes) -> None:
        committed = self.read_end - self.splitter.pending_bytes
        if committed != self.committed:
            rel = committed - start
            self.commit_anchor = combined[max(0, rel - ANCHOR_BYTES) : rel]
            self.committed = committed


@dataclass(frozen=True)
class Opened:
    """An open cursor; ``abandoned``: the offset asked for belonged to a file that is gone;
    ``skipped``: bytes between where reading would have begun and the cursor, left unread
    (a ``Tail``)."""

    cursor: Cursor
    abandoned: bool
    skipped: int = 0


def unreadable_why(exc: OSError, host: str) -> str:
    """Why the box's file could not be read, in its own words: the transport's error
    carries the host and an errno (EIO for every SFTP failure) that are no part of it
    ("[Errno 5] box3: Is a directory: '…'", h555 #5)."""
    return str(exc.strerror or exc).removeprefix(f"{host}: ")


def not_a_log(st: FileStat) -> None:
    """OSError for a file that is no regular file: a box's log linked to /dev/zero was
    read forever, at a quarter of a core on each side (h552 #5)."""
    if not st.regular:
        raise OSError(errno.EINVAL, "not a regular file (a device, a pipe): not read as a log")


async def open_at(
    transport: Transport,
    path: str,
    pos: LogPosition,
    max_line: int = MAX_LINE_BYTES,
    tail: Tail | None = None,
) -> Opened:
    """Open ``path`` at ``pos`` if it is still the file ``pos`` was in; else at 0. With
    ``tail``, at the file's tail instead when more than it asks for lies past that.

    FileNotFoundError when the path does not exist.
    """
    reader = await transport.open_reader(path)
    try:
        st = await reader.fstat()
        not_a_log(st)
        ok = True
        anchor = pos.anchor
        if pos.offset > 0:
            ok = st.size >= pos.offset and (
                pos.inode is None or st.inode is None or pos.inode == st.inode
            )
            k = min(ANCHOR_BYTES, pos.offset)
            if ok:
                there = await reader.read(pos.offset - k, k)
                ok = not anchor or there[-len(anchor) :] == anchor
                anchor = there
        offset = pos.offset if ok else 0
        skipped = 0
        if tail is not None:
            # A resume offset (or 0) is a line start: a tail that reaches it begins there.
            floor = max(offset, st.size - tail.max_bytes)
            begin = await tail_offset(
                reader, st.size, tail.lines, floor=floor, aligned=floor == offset
            )
            if begin > offset:
                skipped, offset = begin - offset, begin
                anchor = await reader.read(max(0, begin - ANCHOR_BYTES), min(ANCHOR_BYTES, begin))
        start = LogPosition(offset, anchor if offset else b"", st.inode)
        return Opened(Cursor(reader, st.inode, start, max_line), not ok, skipped)
    except BaseException:
        await reader.close()
        raise


async def tail_offset(
    reader: FileReader, size: int, lines: int, *, floor: int = 0, aligned: bool = True
) -> int:
    """Where the last ``lines`` complete lines of the file begin, never before ``floor``
    (it reads back no further). When they reach below it: ``floor`` if a line starts
    there (``aligned``), else the first line that starts after it, else ``floor``."""
    found, pos, block = 0, size, TAIL_BLOCK
    first: int | None = None  # the earliest line start seen
    while pos > floor:
        block_start = max(floor, pos - block)
        data = await reader.read(block_start, pos - block_start)
        idx = len(data)
        while (idx := data.rfind(b"\n", 0, idx)) >= 0:
            found += 1
            if found == lines + 1:
                return block_start + idx + 1
            first = block_start + idx + 1
        pos = block_start
        block = min(2 * block, TAIL_BLOCK_MAX)  # fewer round trips to a far box
    # ``first`` at ``size``: the window's only newline ends the file, so the window lies
    # inside the last line — begin in it (the line is shown cut, as any long line is),
    # not past it (h503 #6: a 30 MB line opened the tab on nothing but the skipped note).
    if aligned or first is None or first >= size:
        return floor
    return first
