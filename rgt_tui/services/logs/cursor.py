"""One open log file read forward by byte offset, remembering where complete lines end.

The box's SFTP has no inode (v3), so a file's identity is checked by content: the
``ANCHOR_BYTES`` just before an offset must still be there. The follower (``follow``)
and the one-shot read (``read``) both read through a ``Cursor``.
"""

from __future__ import annotations

from rgt_tui.domain.logscan import MAX_LINE_BYTES, LineSplitter, LogPosition
from rgt_tui.transport.base import FileReader, Transport

ANCHOR_BYTES = 128
READ_CHUNK = 256 * 1024


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


async def open_at(
    transport: Transport, path: str, pos: LogPosition, max_line: int = MAX_LINE_BYTES
) -> tuple[Cursor, bool]:
    """Open ``path`` at ``pos`` if it is still the file ``pos`` was in; else at 0.

    Returns the cursor and whether the offset had to be abandoned. FileNotFoundError
    when the path does not exist.
    """
    reader = await transport.open_reader(path)
    try:
        st = await reader.fstat()
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
        start = LogPosition(pos.offset, anchor, st.inode) if ok else LogPosition(0, b"", st.inode)
        return Cursor(reader, st.inode, start, max_line), not ok
    except BaseException:
        await reader.close()
        raise
