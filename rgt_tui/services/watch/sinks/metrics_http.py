"""``/metrics``: text prepared on the watch's event loop, served from a thread of its own.

prometheus-client's ``start_http_server`` answers in a thread of its own that builds the
exposition per scrape: at a few hundred hosts the thread waits for the GIL behind the
event loop (the samples of every box) and a scrape took seconds in the watch's first
minute. Here the exposition (``generate_latest`` over ``FleetMetrics``'s own registry,
so the names, labels and text are exactly prometheus-client's) is built on the event
loop by ``MetricsServer``'s preparer and kept as bytes (and gzipped bytes once a scraper
asked for gzip); a scrape only writes those bytes out.

The scrapes are answered by an asyncio server on an event loop of its own, in a thread
(``metrics-http``): the bytes are there already, so an answer needs the GIL only for a
moment (Python hands it over every few milliseconds), never the watch's loop. At 500
hosts that loop digests bursts of samples for seconds at a start (500 agents starting
together), and a scrape served there waited behind them (1-15 s). What the server
learns (a scrape came) is handed to the preparer on the watch's loop.

When to prepare: building the text costs about 20 µs a series (a 500-host fleet with two
GPUs a host is 20,000 series: 0.2-0.5 s), so it is not rebuilt every second. Once two
scrapes show the scraper's period, the text is built once per period, just before the
next scrape is due (its figures at most a second or two old); until then, or when the
scrapes stop coming on time, it is rebuilt while something changed, at most once a
second and never more than a tenth of the time (``DUTY``); a minute with no scrape at
all slows that to every ``IDLE_PREP_S``. A scrape never builds anything: it gets the
last prepared text, whatever the loop is busy with.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import threading
import time
from collections import deque
from collections.abc import Callable

from prometheus_client import generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.registry import CollectorRegistry

MIN_PREP_S = 1.0  # the text is never rebuilt more often than this
DUTY = 10  # ... nor more than 1/DUTY of the time (its own build time × DUTY apart)
LEAD_S = 0.5  # prepared this long (or 3 builds) before the next scrape is due
IDLE_S = 60.0  # no scrape for this long: the scraper is gone for now
IDLE_PREP_S = 15.0  # ... and the text is rebuilt only this often until one comes
REQUEST_MAX = 16 * 1024  # bytes of request head read before giving up on a client
REQUEST_TIMEOUT_S = 30.0  # a client silent this long is closed
# Open connections at once. One more arriving closes the one idle longest (waiting for
# its next request, or still sending its first: a keep-alive scraper reconnects), so
# idle or trickling sockets cannot keep a scraper out (s36 watch #5: 100 did, for 30 s
# each); when every one is being answered, the newcomer is closed.
MAX_CLIENTS = 64


class MetricsServer:
    """The running ``/metrics`` endpoint: where it listens, and ``close()``.

    Start it with ``await MetricsServer.start(registry, version, address, port)``;
    ``version()`` says how many times the figures changed (the preparer rebuilds only
    when it moved). OSError (port taken, an address not of this machine) is raised by
    ``start``.
    """

    def __init__(self, registry: CollectorRegistry, version: Callable[[], int]) -> None:
        self._registry = registry
        self._version = version
        self._server: asyncio.Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the watch's: the preparer's
        self._serving: asyncio.AbstractEventLoop | None = None  # the server's own
        self._thread: threading.Thread | None = None
        self._preparer: asyncio.Task[None] | None = None
        # Each open connection -> since when it has waited for a request (monotonic;
        # None while it is answered).
        self._clients: dict[asyncio.StreamWriter, float | None] = {}
        self._scraped = asyncio.Event()
        self._started = time.monotonic()
        self._scrapes: deque[float] = deque(maxlen=6)  # monotonic times of recent scrapes
        self._gzip_wanted = False
        self.body = b""  # the prepared exposition
        self.body_gzip: bytes | None = None
        self.prepared_version = -1
        self.prepared_at = 0.0  # monotonic
        self.prepare_s = 0.0  # what the last build took
        self.address = ""
        self.port = 0

    @classmethod
    async def start(
        cls, registry: CollectorRegistry, version: Callable[[], int], address: str, port: int
    ) -> MetricsServer:
        """Prepare the text once, listen on ``address:port`` only (port 0: any free one)."""
        self = cls(registry, version)
        self.prepare()
        self._loop = asyncio.get_running_loop()
        self._serving = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._serving.run_forever, name="metrics-http", daemon=True
        )
        self._thread.start()
        listening = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._client, address, port), self._serving
        )
        try:
            self._server = await asyncio.wrap_future(listening)
        except BaseException:
            self._stop_serving()
            raise
        self.address, self.port = self._server.sockets[0].getsockname()[:2]
        self._preparer = asyncio.create_task(self._prepare_loop())
        return self

    @property
    def url(self) -> str:
        """The metrics URL, e.g. ``http://127.0.0.1:9101/metrics``."""
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"http://{host}:{self.port}/metrics"

    def close(self) -> None:
        """Stop listening (the port is free on return), drop the clients, stop preparing."""
        if self._preparer is not None:
            self._preparer.cancel()
        self._stop_serving()

    def _stop_serving(self) -> None:
        serving, thread = self._serving, self._thread
        if serving is None or thread is None:
            return
        self._serving = self._thread = None
        if serving.is_running():
            # On the server's own loop, waited for here: the port is free on return.
            asyncio.run_coroutine_threadsafe(self._shut(), serving).result(timeout=30)
            serving.call_soon_threadsafe(serving.stop)
        thread.join(timeout=30)
        if not thread.is_alive():
            serving.close()

    async def _shut(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in list(self._clients):
            writer.transport.abort()

    def _scraped_now(self, at: float) -> None:
        """A scrape came (on the watch's loop: the preparer's state is its own)."""
        self._scrapes.append(at)
        self._scraped.set()

    # -- preparing ---------------------------------------------------------------------

    def prepare(self) -> None:
        """Build the exposition now (on the caller's thread: the event loop)."""
        started = time.perf_counter()
        version = self._version()
        body = generate_latest(self._registry)
        # Level 1: a tenth of level 9's time for a text this repetitive, nearly its size.
        self.body_gzip = gzip.compress(body, 1) if self._gzip_wanted else None
        self.body, self.prepared_version = body, version
        self.prepared_at = time.monotonic()
        self.prepare_s = time.perf_counter() - started

    def period(self) -> float | None:
        """The scraper's period (the shortest recent gap: two scrapers are served both),
        or None before two scrapes."""
        times = list(self._scrapes)
        gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
        return min(gaps) if gaps else None

    def next_prepare_in(self, now: float) -> float:
        """Seconds until the text should be rebuilt (see the module docstring), and never
        later than ``IDLE_PREP_S`` after the last build, whatever the scrapes' rhythm: a
        scraper that came 8 minutes apart, then by hand, was planned for 17 minutes on and
        served text 2.5 minutes old, a dead runner's queue still "running" (hour s18a #5).
        """
        floor = max(MIN_PREP_S, DUTY * self.prepare_s)
        oldest = max(floor, IDLE_PREP_S) - (now - self.prepared_at)
        return min(self._planned_in(now, floor), oldest)

    def _planned_in(self, now: float, floor: float) -> float:
        last = self._scrapes[-1] if self._scrapes else None
        period = self.period()
        if last is None or period is None or now - last > 2 * period:
            quiet = now - (last if last is not None else self._started) > IDLE_S
            every = max(floor, IDLE_PREP_S) if quiet else floor
            return every - (now - self.prepared_at)
        if self.prepared_at > last:  # ready for the next scrape; wait for it (or its lateness)
            return last + 2 * period - now + 0.001
        due = last + period - max(LEAD_S, 3 * self.prepare_s)
        return max(due - now, floor - (now - self.prepared_at), 0.0)

    async def _prepare_loop(self) -> None:
        while True:
            wait = self.next_prepare_in(time.monotonic())
            if wait > 0:
                self._scraped.clear()
                # A scrape re-plans (its time sets when the next one is due).
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(wait):
                        await self._scraped.wait()
                continue
            if self._version() != self.prepared_version or self._gzip_wanted and not self.body_gzip:
                self.prepare()
            else:
                self.prepared_at = time.monotonic()  # nothing changed: the text is current

    # -- serving (on the server's own loop, in its thread) --------------------------------

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._clients) >= MAX_CLIENTS:
            waiting = [(since, w) for w, since in self._clients.items() if since is not None]
            if not waiting:
                writer.transport.abort()
                return
            idlest = min(waiting, key=lambda pair: pair[0])[1]
            self._clients.pop(idlest, None)
            idlest.transport.abort()
        self._clients[writer] = time.monotonic()
        try:
            while await self._answer(reader, writer):
                pass
        except (OSError, TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # a client that went away or sent garbage: nothing to tell it
        finally:
            self._clients.pop(writer, None)
            writer.close()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """One request on a keep-alive connection; False when the connection is done."""
        if writer in self._clients:  # not evicted meanwhile
            self._clients[writer] = time.monotonic()
        async with asyncio.timeout(REQUEST_TIMEOUT_S):
            head = await reader.readuntil(b"\r\n\r\n")
        if writer not in self._clients:
            return False  # evicted while its request came
        self._clients[writer] = None
        if len(head) > REQUEST_MAX:
            return False
        lines = head.decode("latin-1").split("\r\n")
        method, _, rest = lines[0].partition(" ")
        target, _, version = rest.rpartition(" ")
        path = target.partition("?")[0]
        headers = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        keep = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
        if method not in ("GET", "HEAD"):
            body, extra = b"only GET /metrics\n", "Allow: GET, HEAD\r\n"
            status, kind = "405 Method Not Allowed", "text/plain; charset=utf-8"
        elif path not in ("/metrics", "/"):  # a typo'd scrape path fails loudly, not as metrics
            body, extra = b"not found: the metrics are at /metrics\n", ""
            status, kind = "404 Not Found", "text/plain; charset=utf-8"
        else:
            if self._loop is not None:  # the preparer re-plans on the watch's loop
                with contextlib.suppress(RuntimeError):  # that loop is closing: no matter
                    self._loop.call_soon_threadsafe(self._scraped_now, time.monotonic())
            status, kind, body, extra = "200 OK", CONTENT_TYPE_PLAIN_0_0_4, self.body, ""
            gz = _accepts_gzip(headers.get("accept-encoding", ""))
            if gz and not self._gzip_wanted:
                self._gzip_wanted = True  # from now on prepared too; this once, here
                self.body_gzip = gzip.compress(self.body, 1)
            if gz and self.body_gzip is not None:
                body, extra = self.body_gzip, "Content-Encoding: gzip\r\n"
        if not keep:
            extra += "Connection: close\r\n"
        writer.write(
            f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\n"
            f"{extra}\r\n".encode("latin-1")
        )
        if method != "HEAD":
            writer.write(body)
        # A client that asks and never reads would hold its slot (never idle, so never
        # closed for a newcomer): its answer gets the request's time too (review s37).
        async with asyncio.timeout(REQUEST_TIMEOUT_S):
            await writer.drain()
        return keep


def _accepts_gzip(header: str) -> bool:
    return any(part.split(";")[0].strip().lower() == "gzip" for part in header.split(","))
