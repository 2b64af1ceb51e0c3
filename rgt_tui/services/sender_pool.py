"""The box's sender processes (``rgt_tui/agent/sendfiles.py``), started once, used again.

A sender runs as ``SEND_COMMAND`` on an exec channel of the host's connection: the box's
login shell, then python3, then the script, sent on stdin. Where a .bashrc sets up pyenv
or conda that start costs about 0.1 CPU-s and 0.14 s on the bench's box, and three at
once took 0.36 s, competing with the transfer for the same cores. So a pull keeps its
senders: each answers request after request (a batch of small files, then a large file,
...) on its one channel, and the pool hands an idle one to whoever asks next. The batch
senders, started while the box still hashes, then carry the large files as soon as the
small ones are in, instead of three new processes starting just then.

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

from rgt_tui.transport.base import Transport

SENDER_SCRIPT = "sendfiles.py"
CLOSE_WAIT_S = 10.0  # an idle sender gets this long to exit on its own
# Read a length, exec that many bytes of stdin: the script comes on stdin (never on the
# command line), and stdin stays open for the requests that follow it.
BOOT = "import sys; exec(sys.stdin.buffer.read(int(sys.stdin.buffer.readline())))"
SEND_COMMAND = f"python3 -S -u -c {shlex.quote(BOOT)}"  # -S: as the manifest's (manifest.py)

Request = list[tuple[str, int]] | dict


def sender_source() -> str:
    """The on-box sender script's text."""
    return resources.files("rgt_tui.agent").joinpath(SENDER_SCRIPT).read_text("utf-8")


def sender_program() -> str:
    """The script plus the line that runs it on the requests that follow on stdin."""
    return f"{sender_source()}\nsys.exit(serve())\n"


def sender_input() -> str:
    """What SEND_COMMAND reads first: the program's length in bytes, then the program."""
    program = sender_program()
    return f"{len(program.encode())}\n{program}"


def request_line(request: Request) -> str:
    """The files to send (a list), or one large file (a dict: ``send_one``), as the line
    ``serve()`` reads (ASCII: json.dumps escapes)."""
    return json.dumps(request) + "\n"


class Sender:
    """One sender process on the box, answering requests one at a time.

    Started at once (its shell and python3 start while nothing is asked of it yet); the
    requests go to its stdin as they are made, so its one channel carries every reply.
    """

    def __init__(self, transport: Transport, generation: int, window: int | None) -> None:
        self.generation = generation
        self.usable = True  # False once a reply broke off or it ended
        self.busy = False  # a reply is being read
        self._requests: asyncio.Queue[str | None] = asyncio.Queue()
        self._chunks = transport.stream_bytes(
            SEND_COMMAND, input=sender_input(), later=self._lines(), window=window
        )
        # Its first chunk, pending: asking for it opens the channel and starts the process.
        self._first: asyncio.Future[bytes] | None = asyncio.ensure_future(anext(self._chunks))

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
                        chunk = await anext(self._chunks)
                except StopAsyncIteration:
                    return  # it exited: the caller's parser tells what is missing
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
                with contextlib.suppress(Exception):
                    await self._chunks.aclose()  # closes the channel: nothing stray follows

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
            ending = self._first or asyncio.ensure_future(anext(self._chunks))
            self._first = None
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(ending), CLOSE_WAIT_S)
            ending.cancel()
            with contextlib.suppress(BaseException):
                await ending
        with contextlib.suppress(Exception):
            await self._chunks.aclose()


class SenderPool:
    """The senders of one pull: started ahead (``warm``), handed out one request at a time."""

    def __init__(
        self, transport: Transport, window: int | None, generation: Callable[[], int]
    ) -> None:
        self.transport, self.window = transport, window
        self._generation = generation  # the connection's, now
        self._idle: list[Sender] = []
        self._all: list[Sender] = []
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
        sender = Sender(self.transport, self._generation(), self.window)
        self._all.append(sender)
        self.started += 1
        return sender

    async def close(self) -> None:
        """End every sender (idle ones exit on their own; see ``Sender.close``)."""
        self._closed = True
        senders, self._all, self._idle = self._all, [], []
        await asyncio.gather(*(s.close() for s in senders), return_exceptions=True)


__all__ = [
    "BOOT", "CLOSE_WAIT_S", "SEND_COMMAND", "Sender", "SenderPool", "request_line",
    "sender_input", "sender_program", "sender_source",
]  # fmt: skip
