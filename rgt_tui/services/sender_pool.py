"""The box's sender processes (``rgt_tui/agent/sendfiles.py``), started once, used again.

A sender run as ``SEND_COMMAND`` on an exec channel costs the box's login shell, then
python3, then the script, sent on stdin. Where a .bashrc sets up pyenv or conda that start
costs about 0.1 CPU-s and 0.14 s on the bench's box, and three at once took 0.36 s,
competing with the transfer for the same cores. So a pull keeps its senders: each answers
request after request (a batch of small files, then a large file, ...) on its one channel,
and the pool hands an idle one to whoever asks next.

And a pull starts only one that way. Over SSH the first sender also shares a Unix socket
on the box (``serve_and_share``); every other sender is a channel to that socket, which
sshd connects and the first sender's listener serves with a fork of itself: no shell, no
python3 start. Where the box's sshd does not forward sockets (AllowStreamLocalForwarding
no) or the socket cannot be made, the others run ``SEND_COMMAND`` as before.

A reply is whole when the caller's parser says so (``complete``); only then does its
sender go back to the pool. A reply cut off (an error, a stall, a caller that stopped
reading) closes its sender's channel, so no stray bytes can reach the next request.
Senders of an older connection (``generation``) are never handed out again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
from collections.abc import AsyncIterator, Callable
from importlib import resources

from rgt_tui.agent.sendfiles import HUB
from rgt_tui.transport.base import SocketRefused, Transport

SENDER_SCRIPT = "sendfiles.py"
CLOSE_WAIT_S = 10.0  # an idle sender gets this long to exit on its own
NOISE_LIMIT = 64 << 10  # output before the shared socket's line (a login script's) at most
# Read a length, exec that many bytes of stdin: the script comes on stdin (never on the
# command line), and stdin stays open for the requests that follow it.
BOOT = "import sys; exec(sys.stdin.buffer.read(int(sys.stdin.buffer.readline())))"
SEND_COMMAND = f"python3 -S -u -c {shlex.quote(BOOT)}"  # -S: as the manifest's (manifest.py)

Request = list[tuple[str, int]] | dict


def sender_source() -> str:
    """The on-box sender script's text."""
    return resources.files("rgt_tui.agent").joinpath(SENDER_SCRIPT).read_text("utf-8")


def sender_program(share: bool = False) -> str:
    """The script plus the line that runs it on the requests that follow on stdin (and,
    with ``share``, first starts the socket the pull's other senders connect to)."""
    run = "serve_and_share()" if share else "serve()"
    return f"{sender_source()}\nsys.exit({run})\n"


def sender_input(share: bool = False) -> str:
    """What SEND_COMMAND reads first: the program's length in bytes, then the program."""
    program = sender_program(share)
    return f"{len(program.encode())}\n{program}"


def request_line(request: Request) -> str:
    """The files to send (a list), or one large file (a dict: ``send_one``), as the line
    ``serve()`` reads (ASCII: json.dumps escapes)."""
    return json.dumps(request) + "\n"


class Sender:
    """One sender process on the box, answering requests one at a time.

    Started at once (its shell and python3 start while nothing is asked of it yet); the
    requests go to its stdin as they are made, so its one channel carries every reply.
    With ``share`` it also offers a socket (``shared_path``); with ``hub`` (such a sender)
    it is reached through that socket when it can be.
    """

    def __init__(
        self,
        transport: Transport,
        generation: int,
        window: int | None,
        *,
        share: bool = False,
        hub: Sender | None = None,
    ) -> None:
        self.generation = generation
        self.usable = True  # False once a reply broke off or it ended
        self.busy = False  # a reply is being read
        self.route = ""  # "socket" or "command", once its output has started
        self._requests: asyncio.Queue[str | None] = asyncio.Queue()
        self._shared: asyncio.Future[str | None] | None = None
        if share:
            self._shared = asyncio.get_running_loop().create_future()
        self._chunks: AsyncIterator[bytes] | None = None  # its output, once started
        # Its first chunk, pending: asking for it opens the channel and starts the process.
        self._first: asyncio.Future[bytes] | None = asyncio.ensure_future(
            self._begin(transport, window, hub)
        )

    async def shared_path(self) -> str | None:
        """The socket on the box this sender shares, once it said; None if it has none."""
        if self._shared is None:
            return None
        return await asyncio.shield(self._shared)

    def _unshare(self) -> None:
        self._shared = None  # refused: the senders after this one do not try it again

    async def _begin(self, transport: Transport, window: int | None, hub: Sender | None) -> bytes:
        """Start its process and return its first output: through the hub's socket where
        there is one, else by running SEND_COMMAND (a sharing sender's socket line is read
        off first). The stream is read directly afterwards, with no layer in between:
        each costs a little for every packet of a large file."""
        path = await hub.shared_path() if hub is not None else None
        if path is not None:
            connect = transport.stream_socket  # type: ignore[attr-defined]
            stream = connect(path, later=self._lines(), window=window)
            try:
                self.route, self._chunks = "socket", stream
                return await anext(stream)
            except SocketRefused:
                # Refused when opened, so nothing was asked of it yet: run the command.
                assert hub is not None
                hub._unshare()
        share = self._shared is not None
        self.route = "command"
        self._chunks = transport.stream_bytes(
            SEND_COMMAND, input=sender_input(share), later=self._lines(), window=window
        )
        if not share:
            return await anext(self._chunks)
        return await self._past_socket_line()

    async def _past_socket_line(self) -> bytes:
        """A sharing sender's first output, after (and without) its socket's line."""
        assert self._chunks is not None and self._shared is not None
        head = b""
        try:
            while True:
                try:
                    head += await anext(self._chunks)
                except StopAsyncIteration:
                    if head:
                        return head  # it ended without the line: its parser says why
                    raise
                at = head.find(HUB)
                end = head.find(b"\n", at) if at >= 0 else -1
                if end >= 0:
                    path = head[at + len(HUB) : end].decode("utf-8", "replace")
                    self._shared.set_result(None if path == "-" else path)
                    return head[:at] + head[end + 1 :]  # what a login script printed stays
                if len(head) > NOISE_LIMIT:
                    return head  # not a sharing sender's output: the reply's parser says why
        finally:
            if not self._shared.done():
                self._shared.set_result(None)

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
                    return  # it exited: the caller's parser tells what is missing
                if not chunk:
                    continue  # all of a first chunk was the shared socket's line
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
        self._hub: Sender | None = None  # the sender sharing its socket (over SSH)
        self._can_share = hasattr(transport, "stream_socket")
        self._closed = False
        self.started = 0  # senders started so far

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
        hub = self._hub
        if hub is not None and not (hub.usable and hub.generation == now):
            hub = None  # its process ended, or its connection: its socket went with it
        if hub is None and self._can_share:
            sender = Sender(self.transport, now, self.window, share=True)
            self._hub = sender
        else:
            sender = Sender(self.transport, now, self.window, hub=hub)
        self._all.append(sender)
        self.started += 1
        return sender

    async def close(self) -> None:
        """End every sender (idle ones exit on their own; see ``Sender.close``)."""
        self._closed = True
        senders, self._all, self._idle = self._all, [], []
        await asyncio.gather(*(s.close() for s in senders), return_exceptions=True)


__all__ = [
    "BOOT", "CLOSE_WAIT_S", "NOISE_LIMIT", "SEND_COMMAND", "Sender", "SenderPool", "request_line",
    "sender_input", "sender_program", "sender_source",
]  # fmt: skip
