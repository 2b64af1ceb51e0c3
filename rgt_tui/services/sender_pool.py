"""The box's sender processes (``rgt_tui/agent/sendfiles.py``), started once, used again.

A sender run as ``SEND_COMMAND`` on an exec channel costs the box's login shell, then
python3, then the script, sent on stdin. Where a .bashrc sets up pyenv or conda that start
costs about 0.1 CPU-s and 0.14 s on the bench's box, and three at once took 0.36 s,
competing with the transfer for the same cores. So a pull keeps its senders: each answers
request after request (a batch of small files, then a large file, ...) on its one channel,
and the pool hands an idle one to whoever asks next.

And over SSH a pull starts none that way. The manifest's scan (already a python3 on the
box) shares a Unix socket (``manifest.py --share``); the pool holds its control
connection for the pull (``offer``), and every sender is a ``direct-streamlocal`` channel
to that socket, which sshd connects and the listener serves with a fork of itself that
runs the same program SEND_COMMAND would: no shell, no python3 start. Where the box's sshd
does not forward sockets (AllowStreamLocalForwarding no), the socket could not be made,
or the connection was re-opened since (the socket was the old connection's), senders
run SEND_COMMAND as before.

A reply is whole when the caller's parser says so (``complete``); only then does its
sender go back to the pool. A reply cut off (an error, a stall, a caller that stopped
reading) closes its sender's channel, so no stray bytes can reach the next request.
Senders of an older connection (``generation``) are never handed out again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import shlex
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib import resources

from rgt_tui.transport.base import SocketRefused, Transport, TransportError

SENDER_SCRIPT = "sendfiles.py"
CLOSE_WAIT_S = 10.0  # an idle sender gets this long to exit on its own
CONTROL_CLOSE_S = 5.0  # the shared socket's control connection gets this long to end
# Read a length, exec that many bytes of stdin: the script comes on stdin (never on the
# command line), and stdin stays open for the requests that follow it.
BOOT = "import sys; exec(sys.stdin.buffer.read(int(sys.stdin.buffer.readline())))"
SEND_COMMAND = f"python3 -S -u -c {shlex.quote(BOOT)}"  # -S: as the manifest's (manifest.py)

Request = list[tuple[str, int]] | dict


@functools.cache
def sender_source() -> str:
    """The on-box sender script's text (read once: every sender of every pull sends it)."""
    return resources.files("rgt_tui.agent").joinpath(SENDER_SCRIPT).read_text("utf-8")


def sender_program() -> str:
    """The script plus the line that runs it on the requests that follow on stdin."""
    return f"{sender_source()}\nsys.exit(serve())\n"


def sender_input() -> str:
    """What SEND_COMMAND reads first: the program's length in bytes, then the program
    (a sender reached through the shared socket reads the same)."""
    program = sender_program()
    return f"{len(program.encode())}\n{program}"


def request_line(request: Request) -> str:
    """The files to send (a list), or one large file (a dict: ``send_one``), as the line
    ``serve()`` reads (ASCII: json.dumps escapes)."""
    return json.dumps(request) + "\n"


class Sender:
    """One sender process on the box, answering requests one at a time.

    Started at once (its process starts while nothing is asked of it yet); the requests go
    to its stdin as they are made, so its one channel carries every reply. ``socket``
    (awaited: the shared socket's path, or None) is tried first; SEND_COMMAND otherwise.
    """

    def __init__(
        self,
        transport: Transport,
        generation: int,
        window: int | None,
        socket: Awaitable[str | None] | None = None,
        refused: Callable[[], None] | None = None,
    ) -> None:
        self.generation = generation
        self.usable = True  # False once a reply broke off or it ended
        self.busy = False  # a reply is being read
        self.route = ""  # "socket" or "command", once its process has been started
        self.host = transport.host
        self._requests: asyncio.Queue[str | None] = asyncio.Queue()
        self._chunks: AsyncIterator[bytes] | None = None  # its output, once started
        # Its first chunk, pending: asking for it opens the channel and starts the process.
        self._first: asyncio.Future[bytes] | None = asyncio.ensure_future(
            self._begin(transport, window, socket, refused)
        )

    async def _begin(
        self,
        transport: Transport,
        window: int | None,
        socket: Awaitable[str | None] | None,
        refused: Callable[[], None] | None,
    ) -> bytes:
        """Start its process and return its first output. The stream is read directly
        afterwards, with no layer in between: each costs a little for every packet."""
        path = await socket if socket is not None else None
        if path is not None:
            connect = transport.stream_socket  # type: ignore[attr-defined]
            stream = connect(path, input="S" + sender_input(), later=self._lines(), window=window)
            try:
                self.route, self._chunks = "socket", stream
                return await anext(stream)
            except SocketRefused:
                # Refused when opened, so nothing was asked of it yet: run the command.
                if refused is not None:
                    refused()
        self.route = "command"
        self._chunks = transport.stream_bytes(
            SEND_COMMAND, input=sender_input(), later=self._lines(), window=window
        )
        return await anext(self._chunks)

    async def _lines(self) -> AsyncIterator[str]:
        while (line := await self._requests.get()) is not None:
            yield line

    async def reply(
        self,
        request: Request,
        complete: Callable[[], bool],
        whole: Callable[[Sender], None],
    ) -> AsyncIterator[bytes]:
        """The chunks answering ``request``, until ``complete()`` is true after one (then
        ``whole(self)``: it can be used again) or the process ends."""
        self._requests.put_nowait(request_line(request))
        self.busy, ended = True, False
        try:
            while True:
                try:
                    if self._first is not None:
                        first, self._first = self._first, None
                        chunk = await first
                    else:
                        assert self._chunks is not None  # set once the first chunk came
                        chunk = await anext(self._chunks)
                except StopAsyncIteration:
                    if self.route == "socket":
                        # No exit status to tell why (a command's failure raises with
                        # it): the same error, so the caller's fallback takes over.
                        raise TransportError(
                            self.host, "the box's sender ended before its reply was whole"
                        ) from None
                    return  # it exited cleanly: the caller's parser tells what is missing
                yield chunk
                if complete():
                    ended = True
                    return
        finally:
            self.busy = False
            if ended:
                whole(self)
            else:
                self.usable = False
                await self._close_channel()  # nothing stray can follow

    async def close(self) -> None:
        """End it: an idle one is told there is nothing more (end of stdin) and left to exit.

        Not killed while it may still be in the box's shell start-up: a start-up script cut
        off there can leave damage behind (a pyenv rehash killed mid-way leaves a lock that
        stalls every later shell on the box for a minute). Waits at most ``CLOSE_WAIT_S``,
        then closes the channel anyway.
        """
        self._requests.put_nowait(None)
        if self.busy:
            return  # it exits after this reply, whose reader closes its channel if cut off
        if self.usable:
            self.usable = False
            ending = asyncio.ensure_future(self._until_exit())
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(ending), CLOSE_WAIT_S)
            ending.cancel()
            with contextlib.suppress(BaseException):
                await ending
        await self._close_channel()

    async def _close_channel(self) -> None:
        chunks = self._chunks
        if chunks is not None:
            with contextlib.suppress(Exception):
                await chunks.aclose()  # type: ignore[attr-defined]

    async def _until_exit(self) -> None:
        """Read (and drop) what an idle sender still prints until its process exits."""
        first, self._first = self._first, None
        with contextlib.suppress(StopAsyncIteration):
            if first is not None:
                await first
            while self._chunks is not None:
                await anext(self._chunks)


class SenderPool:
    """The senders of one pull: started ahead (``warm``), handed out one request at a time."""

    def __init__(
        self, transport: Transport, window: int | None, generation: Callable[[], int]
    ) -> None:
        self.transport, self.window = transport, window
        self._generation = generation  # the connection's, now
        self._idle: list[Sender] = []
        self._all: list[Sender] = []
        self._share: _Control | None = None  # the manifest's shared socket, if offered
        self._retired: list[_Control] = []  # replaced or refused ones, ended
        self._closed = False
        self.started = 0  # senders started so far

    def offer(self, path: str | None) -> None:
        """The socket the manifest's scan shares on the box (None: it has none): take its
        control connection for this pull; senders started from now on are reached
        through it while it holds."""
        if self._share is not None:
            self._retire(self._share)  # a retried scan's: that connection is gone
        self._share = None
        if path is not None and not self._closed:
            self._share = _Control(self.transport, path, self._generation())

    def warm(self, count: int) -> None:
        """Start ``count`` senders now, before anything is asked of them."""
        for _ in range(count):
            self._idle.append(self._start())

    def stream(self, request: Request, complete: Callable[[], bool]) -> AsyncIterator[bytes]:
        """The reply to ``request`` from an idle sender of this connection, or a new one;
        ``complete`` (the caller's parser: the reply is whole) lets it be used again."""
        return self._take().reply(request, complete, self._give_back)

    def _take(self) -> Sender:
        now = self._generation()
        while self._idle:
            sender = self._idle.pop()
            if sender.usable and sender.generation == now:
                return sender
            # Else it belongs to a connection that is gone; close() ends it.
        return self._start()

    def _give_back(self, sender: Sender) -> None:
        if not self._closed:  # else its stdin is closed already: it exits on its own
            self._idle.append(sender)

    def _start(self) -> Sender:
        now = self._generation()
        share = self._share
        if share is not None and share.generation == now:
            refused = functools.partial(self._unshare, share)
            sender = Sender(self.transport, now, self.window, share.path(), refused)
        else:
            sender = Sender(self.transport, now, self.window)
        self._all.append(sender)
        self.started += 1
        return sender

    def _unshare(self, share: _Control) -> None:
        """A sender's channel to ``share`` was refused: the next ones run the command."""
        self._retire(share)
        if self._share is share:
            self._share = None

    def _retire(self, share: _Control) -> None:
        share.end()
        if share not in self._retired:
            self._retired.append(share)  # close() waits for it

    async def close(self) -> None:
        """End every sender (idle ones exit on their own; see ``Sender.close``)."""
        self._closed = True
        senders, self._all, self._idle = self._all, [], []
        shares = [*self._retired, *([self._share] if self._share is not None else [])]
        self._share, self._retired = None, []
        try:
            await asyncio.gather(*(s.close() for s in senders), return_exceptions=True)
        finally:
            await asyncio.gather(*(c.close() for c in shares), return_exceptions=True)


class _Control:
    """The control connection of the manifest's shared socket: while it is open, the
    box's listener serves senders; ending it ends the listener (which removes the socket).
    Its ``path()`` is the socket's path once the listener answered, or None."""

    def __init__(self, transport: Transport, path: str, generation: int) -> None:
        self.generation = generation
        self._ready: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._ending: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._task = asyncio.ensure_future(self._hold(transport, path))

    async def _hold(self, transport: Transport, path: str) -> None:
        connect = transport.stream_socket  # type: ignore[attr-defined]
        stream = connect(path, input="C", later=self._ending)
        try:
            async with contextlib.aclosing(stream) as chunks:
                async for chunk in chunks:
                    if not self._ready.done():
                        self._ready.set_result(path if chunk.startswith(b"K") else None)
        except TransportError:
            pass  # refused (sshd does not forward sockets), or the connection dropped
        finally:
            if not self._ready.done():
                self._ready.set_result(None)

    async def path(self) -> str | None:
        return await asyncio.shield(self._ready)

    def end(self) -> None:
        """Tell the listener the pull is over (end of input on the control connection)."""
        if not self._ending.done():
            self._ending.set_result("")

    async def close(self) -> None:
        """End it and wait (briefly) for the listener to close it in turn."""
        self.end()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.shield(self._task), CONTROL_CLOSE_S)
        self._task.cancel()
        with contextlib.suppress(BaseException):
            await self._task


__all__ = [
    "BOOT", "CLOSE_WAIT_S", "SEND_COMMAND", "Sender", "SenderPool", "request_line",
    "sender_input", "sender_program", "sender_source",
]  # fmt: skip
