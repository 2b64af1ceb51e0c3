"""A remote command's stdout (or a box socket's output) as raw bytes, over one SSH channel,
with little work per packet.

asyncssh's process streams (``create_process`` and ``SSHReader``) run several layers of
Python for every packet that arrives (32 KiB from OpenSSH): the reader's buffer, its
waiter and an ``await`` per read. On the bench's large files that was 0.25-0.35 CPU-s per
GB more than a bare session (docs/pulls.md). Here the session's ``data_received`` only
appends to a queue, and the reader, woken at most once per socket read, hands over
whatever has queued.

Flow control: when more than ``HIGH_WATER`` bytes wait for the reader, the channel stops
reading, so its window is not replenished and the box stops sending; a slow local disk
bounds memory instead of filling it. ``window`` sets the channel's receive window, which
is also the most a dropped connection can have in flight (what a resume fetches twice).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import asyncssh

from rgt_tui.domain.text import printable
from rgt_tui.timeouts import within
from rgt_tui.transport.base import (
    CommandFailed,
    CommandResult,
    OutputCap,
    SessionRefused,
    TransportError,
)

# A box refusing one more session on a connection (sshd's MaxSessions, 10 by default)
# is asked again for this long, as the connection's other sessions end: a pull's SFTP
# lanes, its scan, the box's code records and tar streams can meet the limit together.
SESSION_WAIT_S = 10.0
HIGH_WATER = 8 << 20  # bytes queued for the reader before the channel stops reading
LOW_WATER = 2 << 20  # ... and below which it reads again
STDERR_KEEP = 4096  # the tail of stderr kept for an error message


class ByteStreamSession(asyncssh.SSHClientSession):
    """Queues stdout chunks for one reader; keeps the tail of stderr. Also the session of
    a socket channel (asyncssh calls the same methods; nothing arrives as stderr there)."""

    def __init__(self) -> None:
        self.chunks: deque[bytes] = deque()
        self.queued = 0
        self.stderr = b""
        self.closed = False
        self.error: Exception | None = None
        self.paused = False
        self._channel: asyncssh.SSHClientChannel | None = None
        self._waiter: asyncio.Future[None] | None = None

    def connection_made(self, chan: asyncssh.SSHClientChannel) -> None:
        self._channel = chan

    def data_received(self, data: bytes, datatype: int | None) -> None:
        if datatype == asyncssh.EXTENDED_DATA_STDERR:
            self.stderr = (self.stderr + data)[-STDERR_KEEP:]
            return
        self.chunks.append(data)
        self.queued += len(data)
        if self.queued >= HIGH_WATER and not self.paused and self._channel is not None:
            self.paused = True
            self._channel.pause_reading()
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.error = exc
        self._wake()

    def take(self) -> bytes | None:
        """The oldest queued chunk, or None when nothing is queued."""
        if not self.chunks:
            return None
        chunk = self.chunks.popleft()
        self.queued -= len(chunk)
        if self.paused and self.queued < LOW_WATER and self._channel is not None:
            self.paused = False
            self._channel.resume_reading()
        return chunk

    async def wait(self) -> None:
        """Until something is queued or the channel closed."""
        if self.chunks or self.closed:
            return
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class CappedRunSession(asyncssh.SSHClientSession):
    """Keeps what an ``OutputCap`` allows of a command's stdout and stderr, and closes the
    channel the moment a stream goes over: the box then stops being read at all (what
    is still in flight is dropped by asyncssh once the channel is closing)."""

    def __init__(self, cap: OutputCap) -> None:
        self.cap = cap
        self.error: Exception | None = None
        self.finished = asyncio.get_running_loop().create_future()
        self._channel: asyncssh.SSHClientChannel | None = None

    def connection_made(self, chan: asyncssh.SSHClientChannel) -> None:
        self._channel = chan

    def data_received(self, data: bytes, datatype: int | None) -> None:
        if self.cap.over:
            return  # over already: the channel is closing
        stream = "stderr" if datatype == asyncssh.EXTENDED_DATA_STDERR else "stdout"
        if not self.cap.add(stream, data) and self._channel is not None:
            self._channel.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.error = exc
        if not self.finished.done():
            self.finished.set_result(None)


async def run_capped(
    conn: asyncssh.SSHClientConnection,
    host: str,
    command: str,
    *,
    input: str | None,
    timeout: float | None,
    max_output: int,
) -> CommandResult:
    """Run ``command`` to completion on one exec channel, keeping at most ``max_output``
    bytes of each stream (asyncssh's ``conn.run`` keeps all a box sends)."""
    cap = OutputCap(max_output)
    try:
        chan, session = await when_allowed(
            conn,
            lambda: conn.create_session(lambda: CappedRunSession(cap), command, encoding=None),
        )
    except (OSError, asyncssh.Error) as exc:
        raise TransportError(host, describe(exc)) from exc
    try:
        await send_input(lambda text: chan.write(text.encode()), chan.write_eof, input)
        try:
            await within(asyncio.shield(session.finished), timeout)
        except asyncio.TimeoutError as exc:
            raise TransportError(
                host, f"command timed out after {timeout:g} s: {command[:60]}"
            ) from exc
    finally:
        chan.close()
    if cap.over:
        return cap.result(None)  # stopped here: how it would have ended is unknown
    if session.error is not None:
        raise TransportError(host, describe(session.error))
    if conn.is_closed():
        raise TransportError(host, "connection lost")
    signal = chan.get_exit_signal()
    return cap.result(None if signal else chan.get_exit_status())


def describe(exc: BaseException) -> str:
    """A short reason for a connection failure, without a traceback, on one line: a
    disconnect's reason (and an asyncssh error's text) is the box's, and its newlines
    made a fake "fix:" line in the pane, the notices and watch's notifications (the s40
    audit). Cut to 300 characters."""
    return printable(_reason(exc), 300)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused (is sshd running on that port?)"
    if isinstance(exc, asyncssh.ConnectionLost):
        return "connection lost"
    if isinstance(exc, asyncssh.DisconnectError):
        return f"disconnected: {exc.reason}"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc) or type(exc).__name__


async def send_input(
    send: Callable[[str], object], eof: Callable[[], object], input: str | None
) -> None:
    """Write ``input``, then end of file.

    A stream whose stdin closed meanwhile (the command ended, the connection dropped) is
    left alone: the reader reports that."""
    with contextlib.suppress(OSError, asyncssh.Error, BrokenPipeError):
        if input is not None:
            send(input)
        eof()


Opener = Callable[[asyncssh.SSHClientConnection, dict], Awaitable[tuple]]
_T = TypeVar("_T")


# The box's own refusals of a channel (sshd answers MaxSessions with one of these);
# asyncssh's "connection closed" and "session request failed" (an exec refused) are not.
_REFUSALS = (
    asyncssh.OPEN_ADMINISTRATIVELY_PROHIBITED,
    asyncssh.OPEN_CONNECT_FAILED,
    asyncssh.OPEN_RESOURCE_SHORTAGE,
)


async def when_allowed(
    conn: asyncssh.SSHClientConnection, open_channel: Callable[[], Awaitable[_T]]
) -> _T:
    """``open_channel()``, asked again while the box refuses the session (MaxSessions)
    on a live connection, for up to SESSION_WAIT_S, a little less often each time; then
    its refusal."""
    loop = asyncio.get_running_loop()
    deadline, delay = loop.time() + SESSION_WAIT_S, 0.05
    while True:
        try:
            return await open_channel()
        except asyncssh.ChannelOpenError as exc:
            if exc.code not in _REFUSALS or conn.is_closed():
                raise
            if loop.time() + delay > deadline:
                raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)


def command_channel(host: str, command: str) -> Opener:
    """Opens an exec channel running ``command``; SessionRefused if the box allows no
    more sessions (sshd's MaxSessions)."""

    async def open_session(conn: asyncssh.SSHClientConnection, options: dict) -> tuple:
        try:
            return await when_allowed(
                conn,
                lambda: conn.create_session(ByteStreamSession, command, encoding=None, **options),
            )
        except asyncssh.ChannelOpenError as exc:
            why = f"the box refused another session ({printable(exc.reason, 200)})"
            raise SessionRefused(host, why) from exc

    return open_session


async def stream_channel(
    connection: Callable[[], asyncssh.SSHClientConnection],
    host: str,
    open_channel: Opener,
    *,
    input: str | None,
    window: int | None,
) -> AsyncIterator[bytes]:
    """Open the channel (``command_channel``) when first asked for a
    chunk, write ``input``, then end of file to it while yielding
    what arrives, and close it at the end, or at once when this generator is closed early
    (the box's process gets SIGPIPE or a hang-up). Then raise TransportError if the
    connection dropped or a command failed (with the last line of its stderr).

    One generator, no layer re-yielding another: that would run for every packet, and
    closing the outer one would not close the channel then."""
    conn = connection()
    options = {"window": window} if window else {}
    try:
        chan, session = await open_channel(conn, options)  # its refusals pass as they are
    except (OSError, asyncssh.Error) as exc:
        raise TransportError(host, describe(exc)) from exc

    def send(text: str) -> None:
        chan.write(text.encode())

    writing = asyncio.ensure_future(send_input(send, chan.write_eof, input))
    try:
        while True:
            while (chunk := session.take()) is not None:
                yield chunk
            if session.closed:
                break
            await session.wait()
    finally:
        writing.cancel()
        chan.close()
    if conn.is_closed():
        raise TransportError(host, "connection lost")
    if session.error is not None:
        raise TransportError(host, describe(session.error))
    if isinstance(chan, asyncssh.SSHClientChannel):  # a command: how did it end?
        status, signal = chan.get_exit_status(), chan.get_exit_signal()
        if status not in (0, None) or signal:
            lines = session.stderr.decode(errors="replace").strip().splitlines()
            why = lines[-1] if lines else "no message"
            raise CommandFailed(host, f"remote command exited with status {status}: {why}", status)
