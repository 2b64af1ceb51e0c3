#!/usr/bin/env python3
"""A far link on loopback: a TCP relay that adds a one-way delay and caps the rate.

This kernel has no netem / tc, so the benchmark puts this relay between a client and
OpenSSH's sshd (``127.0.0.1:LISTEN → 127.0.0.1:TARGET``). Each direction is one link shared
by every connection through the relay, as a real path is:

- **rate**: a FIFO link that sends one chunk after another at ``rate`` bytes/s (a token
  bucket with no burst: a chunk of n bytes leaves n/rate after the one before it);
- **delay**: a chunk arrives ``delay`` seconds after it left (round trip = 2 × delay);
  the bytes in propagation are held here, not in the kernel, so TCP on loopback never
  limits what is in flight — only the applications' own windows do (see ``--tcp-window-kib``
  for a receiver window that does);
- **queue**: the bytes waiting for the rate limiter are bounded (``queue`` bytes, plus at
  most one read per connection); when the queue is full the relay stops reading the
  sources, so TCP backpressure reaches the senders. Nothing is dropped or reordered.
- a new connection reaches the target one delay after it was accepted (the server's
  first bytes come back a round trip after the client connected, as after a handshake).

It moves data in chunks of up to 256 KiB (asyncio's read size) and schedules releases with
``loop.call_at`` over a per-direction deque, so its own cost is a few Python calls per
chunk. Run it as its own process (it shares no event loop with the measured tools):

    far_link.py --listen PORT --target PORT --delay-ms 100 --rate-mbit 1000 [--queue-kib 4096]
                [--chunk-kib N] [--stats FILE]

``--stats FILE`` is rewritten (atomically) every 0.2 s and at exit with one JSON object:
bytes carried each way, peak queue, connections, and the relay's CPU seconds.

``far_link.py --selftest [--mb 300]`` measures the relay alone: a Python client pushes the
bytes through it to a Python sink, at 0 ms and 100 ms one-way delay, uncapped and capped to
1 Gbit/s, and prints what it carried and the CPU it used.

A little over 450 lines on purpose: one standalone script (the benches start it as a
process of its own, with nothing of rgt_tui imported), whose delay, rate limit and queue
are one link model read together; the self-test beside it measures that model alone.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time

RCVBUF = 1 << 20  # kernel receive buffer of the relay's sockets: a bounded, hidden queue
HIGH_WATER = 4 << 20  # bytes waiting in a destination's write buffer before its source pauses


class Link:
    """One direction: a FIFO at ``rate`` bytes/s, then ``delay`` s of propagation."""

    def __init__(self, loop: asyncio.AbstractEventLoop, rate: float, delay: float, queue: int):
        self.loop = loop
        self.rate = rate  # bytes/s; 0 = unlimited
        self.delay = delay
        self.queue = queue  # bytes allowed to wait for the rate limiter
        self.next_free = 0.0  # when the link has sent everything handed to it
        self.pending: collections.deque = collections.deque()  # (release, pipe, data | None)
        self.timer: asyncio.TimerHandle | None = None
        self.paused: set[Pipe] = set()  # pipes whose source waits for the queue to drain
        self.resume_timer: asyncio.TimerHandle | None = None
        self.carried = 0
        self.peak_queue = 0

    def backlog(self, now: float) -> int:
        """Bytes waiting for the rate limiter (not yet sent onto the wire)."""
        return int(max(0.0, self.next_free - now) * self.rate) if self.rate else 0

    def send(self, pipe: Pipe, data: bytes | None) -> None:
        """Queue ``data`` (None = end of stream) from ``pipe``; pause its source if full."""
        now = self.loop.time()
        start = max(now, self.next_free)
        if data is not None and self.rate:
            self.next_free = start + len(data) / self.rate
            release = self.next_free + self.delay
        else:
            release = start + self.delay
        self.pending.append((release, pipe, data))
        if self.timer is None:
            self.timer = self.loop.call_at(release, self._release)
        backlog = self.backlog(now)
        if backlog > self.peak_queue:
            self.peak_queue = backlog
        if data is not None and backlog > self.queue:
            pipe.pause_source(self)
            self.paused.add(pipe)
            if self.resume_timer is None:
                self.resume_timer = self.loop.call_at(
                    self.next_free - self.queue / self.rate, self._resume
                )

    def _release(self) -> None:
        self.timer = None
        now = self.loop.time() + 0.0005  # batch what is due within half a millisecond
        pending = self.pending
        while pending and pending[0][0] <= now:
            _, pipe, data = pending.popleft()
            if data is not None:
                self.carried += len(data)
            pipe.deliver(data)
        if pending:
            self.timer = self.loop.call_at(pending[0][0], self._release)

    def _resume(self) -> None:
        self.resume_timer = None
        now = self.loop.time()
        if self.backlog(now) > self.queue:  # others kept filling it
            self.resume_timer = self.loop.call_at(
                self.next_free - self.queue / self.rate, self._resume
            )
            return
        paused, self.paused = self.paused, set()
        for pipe in paused:
            pipe.resume_source(self)


class Pipe:
    """One direction of one connection: reads ``src``, writes ``dst`` through ``link``."""

    def __init__(self, conn: Connection, link: Link, window: int) -> None:
        self.conn = conn
        self.link = link
        self.src: asyncio.Transport | None = None
        self.dst: asyncio.Transport | None = None
        self.early: list[bytes | None] = []  # delivered before dst was connected
        self.holds: set[object] = set()  # reasons the source is paused
        self.window = window  # receiver window: bytes sent and not yet acknowledged
        self.unacked = 0
        self.eof_sent = False  # end of stream handed to the link
        self.closed = False  # ... and delivered

    def pause_source(self, reason: object) -> None:
        if not self.holds and self.src is not None:
            self.src.pause_reading()
        self.holds.add(reason)

    def resume_source(self, reason: object) -> None:
        self.holds.discard(reason)
        if not self.holds and self.src is not None and not self.src.is_closing():
            self.src.resume_reading()

    def end(self) -> None:
        if not self.eof_sent:
            self.eof_sent = True
            self.link.send(self, None)

    def from_source(self, data: bytes) -> None:
        chunk = self.conn.relay.chunk
        if chunk and len(data) > chunk:  # --chunk-kib: more Python calls per byte
            view = memoryview(data)
            for at in range(0, len(data), chunk):
                self.link.send(self, bytes(view[at : at + chunk]))
        else:
            self.link.send(self, data)
        if self.window:
            self.unacked += len(data)
            if self.unacked >= self.window:
                self.pause_source("window")

    def deliver(self, data: bytes | None) -> None:
        if self.dst is None:
            self.early.append(data)
            return
        if self.closed:
            return
        if data is None:
            self.closed = True
            if not self.dst.is_closing() and self.dst.can_write_eof():
                try:
                    self.dst.write_eof()
                except OSError:  # the peer is gone already
                    self.dst.close()
            self.conn.check()
            return
        if self.dst.is_closing():  # the peer went: what is left has nowhere to go
            return
        self.dst.write(data)
        if self.window:  # the acknowledgement travels back: the window opens a delay later
            self.link.loop.call_later(self.link.delay, self._acked, len(data))

    def _acked(self, n: int) -> None:
        self.unacked -= n
        if self.unacked < self.window and "window" in self.holds:
            self.resume_source("window")

    def connected(self, dst: asyncio.Transport) -> None:
        self.dst = dst
        early, self.early = self.early, []
        for data in early:
            self.deliver(data)


class Side(asyncio.Protocol):
    """One socket of a relayed connection: what it reads goes out through ``pipe_out``."""

    def __init__(self, conn: Connection, pipe_out: Pipe) -> None:
        self.conn = conn
        self.pipe_out = pipe_out
        self.transport: asyncio.Transport | None = None
        self.lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        sock = transport.get_extra_info("socket")
        if sock is not None:
            if RCVBUF:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.transport.set_write_buffer_limits(high=HIGH_WATER)  # type: ignore[union-attr]
        self.pipe_out.src = self.transport
        if self.pipe_out.holds:
            self.transport.pause_reading()  # type: ignore[union-attr]

    def data_received(self, data: bytes) -> None:
        self.pipe_out.from_source(data)

    def eof_received(self) -> bool:
        self.pipe_out.end()
        return True  # keep writing the other direction (half-close)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.conn.lost(self, exc)

    # Our writes (the other pipe's destination) are backed up: pause that pipe's source.
    def pause_writing(self) -> None:
        self.conn.other(self).pause_source("dst")

    def resume_writing(self) -> None:
        self.conn.other(self).resume_source("dst")


class Connection:
    """client ↔ relay ↔ target: two pipes, one per direction."""

    def __init__(self, relay: Relay) -> None:
        self.relay = relay
        self.up = Pipe(self, relay.up, relay.window)  # client → target
        self.down = Pipe(self, relay.down, relay.window)  # target → client
        self.client = Side(self, self.up)
        self.server = Side(self, self.down)
        self.gone = False

    def other(self, side: Side) -> Pipe:
        """The pipe that writes into ``side``."""
        return self.down if side is self.client else self.up

    def accepted(self) -> Side:
        self.relay.connections += 1
        self.up.pause_source("connecting")  # nothing to send to until the target answers
        loop = self.relay.loop
        loop.call_later(self.relay.delay, lambda: loop.create_task(self._connect()))
        return self.client

    async def _connect(self) -> None:
        try:
            await self.relay.loop.create_connection(
                lambda: self.server, "127.0.0.1", self.relay.target
            )
        except OSError:
            if self.client.transport is not None:
                self.client.transport.close()
            return
        self.up.connected(self.server.transport)  # type: ignore[arg-type]
        self.down.connected(self.client.transport)  # type: ignore[arg-type]
        self.up.resume_source("connecting")

    def lost(self, side: Side, exc: Exception | None) -> None:
        """A socket closed: end what it sent, then close the other once that is delivered."""
        if exc is not None:  # reset: tear the other side down now
            other = self.server if side is self.client else self.client
            if other.transport is not None:
                other.transport.abort()
            return
        (self.up if side is self.client else self.down).end()
        self.check()

    def check(self) -> None:
        """Close both sockets when both ways have ended, or one socket is gone and what it
        sent has been delivered (``close`` still flushes what is buffered)."""
        up_done = self.up.closed or (self.up.eof_sent and self.up.dst is None)
        down_done = self.down.closed or (self.down.eof_sent and self.down.dst is None)
        if (
            (up_done and down_done)
            or (self.client.lost and self.up.closed)
            or (self.server.lost and self.down.closed)
        ):
            for s in (self.client, self.server):
                if s.transport is not None and not s.transport.is_closing():
                    s.transport.close()


class Relay:
    def __init__(self, args: argparse.Namespace, loop: asyncio.AbstractEventLoop) -> None:
        rate = args.rate_mbit * 1e6 / 8 if args.rate_mbit else 0.0
        self.delay = args.delay_ms / 1000
        self.target = args.target
        self.window = args.tcp_window_kib * 1024
        self.chunk = getattr(args, "chunk_kib", 0) * 1024
        self.loop = loop
        self.up = Link(loop, rate, self.delay, args.queue_kib * 1024)
        self.down = Link(loop, rate, self.delay, args.queue_kib * 1024)
        self.connections = 0

    def stats(self) -> dict:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return {
            "up_bytes": self.up.carried,
            "down_bytes": self.down.carried,
            "peak_queue_up": self.up.peak_queue,
            "peak_queue_down": self.down.peak_queue,
            "connections": self.connections,
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
        }


def _save(path: str, stats: dict) -> None:
    with open(path + ".tmp", "w") as f:
        json.dump(stats, f)
    os.replace(path + ".tmp", path)


async def serve(args: argparse.Namespace) -> None:
    loop = asyncio.get_running_loop()
    relay = Relay(args, loop)
    server = await loop.create_server(
        lambda: Connection(relay).accepted(), "127.0.0.1", args.listen, backlog=128
    )
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        while not stop.is_set():
            if args.stats:
                _save(args.stats, relay.stats())
            try:
                await asyncio.wait_for(stop.wait(), 0.2)
            except asyncio.TimeoutError:
                pass
    finally:
        server.close()
        if args.stats:
            _save(args.stats, relay.stats())


# -- self test: the relay alone ---------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _sink(server: socket.socket, total: int, done: dict) -> None:
    conn, _ = server.accept()
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    got = 0
    while got < total:
        n = conn.recv_into(view)
        if not n:
            break
        got += n
    done["t"] = time.monotonic()
    done["got"] = got
    conn.close()


def push_through(mb: int, delay_ms: float, rate_mbit: float, queue_kib: int = 4096) -> dict:
    """Push ``mb`` MB through a fresh relay process to a sink; seconds, MB/s and relay CPU."""
    total = mb * 1_000_000
    target = socket.socket()
    target.bind(("127.0.0.1", 0))
    target.listen(1)
    done: dict = {}
    sink = threading.Thread(target=_sink, args=(target, total, done), daemon=True)
    sink.start()
    listen = _free_port()
    stats = f"/tmp/far_link_selftest.{os.getpid()}.json"
    relay = subprocess.Popen(
        [
            sys.executable, __file__, "--listen", str(listen),
            "--target", str(target.getsockname()[1]), "--delay-ms", str(delay_ms),
            "--rate-mbit", str(rate_mbit), "--queue-kib", str(queue_kib), "--stats", stats,
        ]
    )  # fmt: skip
    try:
        for _ in range(200):
            try:
                client = socket.create_connection(("127.0.0.1", listen))
                break
            except OSError:
                time.sleep(0.02)
        chunk = os.urandom(1 << 20)
        start = time.monotonic()
        sent = 0
        while sent < total:
            n = min(len(chunk), total - sent)
            client.sendall(chunk[:n] if n < len(chunk) else chunk)
            sent += n
        client.shutdown(socket.SHUT_WR)
        sink.join(timeout=600)
        seconds = done["t"] - start
        client.close()
    finally:
        relay.send_signal(signal.SIGTERM)
        relay.wait()
        target.close()
    with open(stats) as f:
        result = json.load(f)
    os.unlink(stats)
    result.update(seconds=seconds, mb_s=done["got"] / seconds / 1e6, got=done["got"])
    return result


def selftest(mb: int) -> None:
    print(f"far_link self test: {mb} MB, one connection, Python client → relay → Python sink")
    for delay_ms, rate_mbit in ((0, 0), (0, 1000), (100, 1000), (100, 0)):
        r = push_through(mb, delay_ms, rate_mbit)
        cap = f"{rate_mbit:.0f} Mbit/s" if rate_mbit else "uncapped"
        ideal = ""
        if rate_mbit:
            ideal_s = mb * 8 / rate_mbit + 2 * delay_ms / 1000  # connect + propagation
            ideal = f" (ideal {ideal_s:.2f} s: {ideal_s / r['seconds']:.0%} of it)"
        print(
            f"  delay {delay_ms:>3} ms one-way, {cap:>13}: {r['seconds']:6.2f} s  "
            f"{r['mb_s']:6.0f} MB/s{ideal}  relay CPU {r['cpu_s']:.2f} s "
            f"({r['cpu_s'] / r['seconds']:.0%} of a core), peak queue "
            f"{r['peak_queue_up'] / 1024:.0f} KiB"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", type=int, help="port on 127.0.0.1 to accept on")
    parser.add_argument("--target", type=int, help="port on 127.0.0.1 to relay to")
    parser.add_argument("--delay-ms", type=float, default=0.0, help="one-way delay")
    parser.add_argument("--rate-mbit", type=float, default=0.0, help="each way; 0 = uncapped")
    parser.add_argument("--queue-kib", type=int, default=4096, help="bytes waiting for the rate")
    parser.add_argument(
        "--tcp-window-kib",
        type=int,
        default=0,
        help="emulate a TCP receive window per connection and direction (0 = off: only "
        "the applications' windows limit what is in flight)",
    )
    parser.add_argument(
        "--chunk-kib",
        type=int,
        default=0,
        help="pass data on in pieces of at most this many KiB (0 = as read): a heavier "
        "relay, for a bench whose figure must hold when the relay costs more CPU",
    )
    parser.add_argument("--stats", help="JSON counters, rewritten every 0.2 s")
    parser.add_argument("--selftest", action="store_true", help="measure the relay alone")
    parser.add_argument("--mb", type=int, default=300, help="self test: MB to push")
    args = parser.parse_args()
    if args.selftest:
        selftest(args.mb)
        return 0
    if args.listen is None or args.target is None:
        parser.error("--listen and --target are required")
    asyncio.run(serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
