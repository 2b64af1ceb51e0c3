"""The log follower: new lines of one file on a box, across drops and rotations.

The guarantees are in the package docstring (``services.logs``); the reading itself is
``cursor.Cursor``'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace

from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.logscan import MAX_LINE_BYTES, CrashScanner, LogChunk, LogLine, LogPosition
from rgt_tui.services.connections import OnAttempt, connect_with_backoff
from rgt_tui.services.logs.cursor import READ_CHUNK, Cursor, Tail, open_at
from rgt_tui.transport.backoff import Backoff
from rgt_tui.transport.base import FileStat, Transport

MAX_READS_PER_POLL = 16  # 4 MiB, then the UI gets a turn before the rest of a backlog


class LogFollower:
    """Follows one log file on a box; iterate it (``async for chunk in follower``).

    ``start_offset`` or ``resume`` (a ``LogChunk.position``, safer: it is checked
    against the file) say where to begin. ``highlight`` flags crash lines: use it for a
    cell's own log only, since the queue log concatenates cells and would pin an earlier
    cell's crash on a healthy one. ``reconnect`` is awaited after a TransportError and
    must return once the transport is connected again; without it the error propagates
    and the caller restarts a follower with ``resume=follower.position``. ``max_line``:
    no line handed out is longer (in bytes, before the note saying what was dropped),
    however the box writes it. ``tail``: the first file opened is begun at its tail when
    more than that lies past the start (``tail -n``); ``skipped`` then says how many
    bytes were left unread, before any line is handed out.
    """

    def __init__(
        self,
        transport: Transport,
        path: str,
        *,
        start_offset: int = 0,
        resume: LogPosition | None = None,
        poll: float = 0.5,
        highlight: bool = False,
        reconnect: Callable[[], Awaitable[None]] | None = None,
        chunk_size: int = READ_CHUNK,
        max_line: int = MAX_LINE_BYTES,
        tail: Tail | None = None,
    ) -> None:
        self.transport = transport
        self.path = path
        self.max_line = max_line
        self.poll = poll
        self.highlight = highlight
        self.reconnect = reconnect
        self.chunk_size = chunk_size
        self.skipped = 0  # bytes the tail left unread at the first open
        self._tail = tail  # None once a file was opened
        self._cursor: Cursor | None = None
        self._resume = resume or LogPosition(start_offset)
        self._scanner = CrashScanner()
        self._error: TransportError | None = None  # raised by the next poll
        self._verified: FileStat | None = None  # the path's stat when last seen to be ours
        self._status = ""
        self._partial = ""
        self._busy = False
        self._out: list[LogChunk] = []
        self._lines: list[LogLine] = []
        self._rotated = self._gap = False
        self._saw_truncation = False

    @property
    def position(self) -> LogPosition:
        """The resume position of everything delivered so far."""
        return self._resume

    def __aiter__(self) -> AsyncIterator[LogChunk]:
        return self.chunks()

    async def chunks(self) -> AsyncIterator[LogChunk]:
        """Poll forever: yield every chunk with lines or news; reconnect on drops."""
        while True:
            try:
                out = await self.poll_once()
            except TransportError as exc:
                if self.reconnect is None:
                    raise
                self._status = "reconnecting"
                yield LogChunk((), self.position, status="reconnecting", error=exc.message)
                await self.reconnect()
                continue
            for chunk in out:
                yield chunk
            if not self._busy:
                await asyncio.sleep(self.poll)

    async def run(self, on_chunk: Callable[[LogChunk], object]) -> None:
        """Callback form of ``chunks()``: runs until cancelled; ``on_chunk`` may be async."""
        try:
            async for chunk in self.chunks():
                result = on_chunk(chunk)
                if inspect.isawaitable(result):
                    await result
        finally:
            await self.close()

    async def close(self) -> None:
        """Release the open handle."""
        cursor, self._cursor = self._cursor, None
        if cursor is not None:
            await cursor.reader.close()

    async def poll_once(self) -> list[LogChunk]:
        """One poll: read what is new, check the path still names our file, handle rotation.

        On a drop, the lines already read are returned and the next call raises the
        TransportError; a call that read nothing raises at once. Either way ``position``
        covers exactly the lines returned.
        """
        if self._error is not None:
            exc, self._error = self._error, None
            raise exc
        self._out, self._lines, self._busy = [], [], False
        try:
            if self._cursor is None and not await self._open():
                status = "waiting"
            else:
                status = "following"
                cursor = self._cursor
                assert cursor is not None
                before = cursor.read_end
                self._busy = await self._read_available(MAX_READS_PER_POLL)
                if not await self._still_ours(active=cursor.read_end != before):
                    await self._switch()
        except TransportError as exc:
            await self._drop()
            if not (self._lines or self._out or self._rotated or self._gap):
                raise
            self._error = exc
            status = self._status or "following"
        self._finish(status)
        return self._out

    # -- internals ---------------------------------------------------------------------

    async def _open(self) -> bool:
        try:
            opened = await open_at(
                self.transport, self.path, self._resume, self.max_line, self._tail
            )
        except FileNotFoundError:
            return False
        if self._tail is not None:
            self._tail, self.skipped = None, opened.skipped
        self._cursor, self._verified = opened.cursor, None
        if opened.abandoned:
            # The offset belonged to a file that is gone (rotated while we were away).
            self._mark(rotated=True, gap=True)
        return True

    async def _read_available(self, max_reads: int | None) -> bool:
        """Read until end of file (or ``max_reads``); True when more is probably waiting."""
        cursor = self._cursor
        assert cursor is not None
        reads = 0
        while max_reads is None or reads < max_reads:
            outcome, texts = await cursor.read_more(self.chunk_size)
            if outcome == "truncated":
                self._add(cursor.flush())  # the writer's stream goes on at offset 0
                cursor.restart()
                self._verified = None
                self._saw_truncation = True
                self._mark(rotated=True)
                continue
            if outcome == "eof":
                return False
            self._add(texts)
            reads += 1
        return True

    async def _still_ours(self, active: bool) -> bool:
        """Whether the path still names the file the handle is reading (or names nothing).

        Without inodes: cheap size/mtime checks every poll, and the content check (the
        bytes before our offset, read through the path) once the handle's file goes
        quiet. A miss while it is active only delays the switch to a later poll.
        """
        cursor = self._cursor
        assert cursor is not None
        st = await self.transport.stat(self.path)
        if st is None:
            return True  # renamed away and not recreated yet: the handle is all there is
        if st.inode is not None and cursor.inode is not None:
            return st.inode == cursor.inode
        if st == self._verified:
            return True
        if st.size < cursor.read_end:
            return False  # shorter than what we read: another file (or a truncation)
        # For one file, size and mtime only grow: the path's stat, taken first, cannot
        # exceed the handle's, taken second.
        mine = await cursor.reader.fstat()
        if st.size > mine.size or st.mtime > mine.mtime:
            return False
        if active:
            return True  # not verified: the content check runs once the writes pause
        if cursor.read_anchor:
            k = len(cursor.read_anchor)
            try:
                there = await self.transport.read_range(self.path, cursor.read_end - k, k)
            except FileNotFoundError:
                return True
            if there != cursor.read_anchor:
                return False
        self._verified = st
        return True

    async def _switch(self) -> None:
        """The path names a new file: drain the old one through its handle, then move on."""
        cursor = self._cursor
        assert cursor is not None
        self._saw_truncation = False
        await self._read_available(None)
        if self._saw_truncation:
            return  # copytruncate, not a rename: the handle reads its file again from 0
        self._add(cursor.flush())
        self._cursor, self._resume = None, LogPosition(0)  # the old file is done with
        self._mark(rotated=True)
        await cursor.reader.close()
        if await self._open():
            await self._read_available(MAX_READS_PER_POLL)

    async def _drop(self) -> None:
        """After a TransportError: forget the dead handle, keep the position of what was read."""
        cursor, self._cursor = self._cursor, None
        if cursor is not None:
            self._resume = cursor.position
            self._partial = ""  # the reader is gone; the partial will be read again
            with contextlib.suppress(Exception):
                await cursor.reader.close()

    def _add(self, texts: list[str]) -> None:
        scan = self._scanner.scan if self.highlight else None
        self._lines += [LogLine(t, scan(t) if scan else None) for t in texts]

    def _mark(self, *, rotated: bool = False, gap: bool = False) -> None:
        """Start a new chunk whose lines come after a rotation (and maybe a gap)."""
        self._cut()
        self._rotated |= rotated
        self._gap |= gap

    def _cut(self) -> None:
        if not (self._lines or self._rotated or self._gap):
            return
        cursor = self._cursor
        pos = cursor.position if cursor is not None else self._resume
        self._out.append(
            LogChunk(
                tuple(self._lines),
                pos,
                rotated=self._rotated,
                gap=self._gap,
                partial=cursor.splitter.partial if cursor is not None else "",
                status=self._status or "following",
            )
        )
        self._lines, self._rotated, self._gap = [], False, False

    def _finish(self, status: str) -> None:
        cursor = self._cursor
        partial = cursor.splitter.partial if cursor is not None else ""
        self._cut()
        if not self._out and (status != self._status or partial != self._partial):
            pos = cursor.position if cursor is not None else self._resume
            self._out.append(LogChunk((), pos, partial=partial, status=status))
        elif self._out:
            self._out[-1] = replace(self._out[-1], partial=partial, status=status)
        self._status, self._partial = status, partial
        if cursor is not None:
            self._resume = cursor.position


def reconnect_with_backoff(
    transport: Transport,
    backoff: Backoff = Backoff(),
    on_attempt: OnAttempt | None = None,
) -> Callable[[], Awaitable[None]]:
    """A ``reconnect`` for LogFollower over a transport of its own (the CLI): the one
    reconnect loop, ``connections.connect_with_backoff``, on it (a host-key refusal is
    raised, not retried). The TUI passes ``FleetConnections.connect_with_backoff`` for
    the host instead, whose waits ``wake`` ends."""

    async def reconnect() -> None:
        await connect_with_backoff(transport, backoff, on_attempt)

    return reconnect
