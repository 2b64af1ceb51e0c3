"""``/metrics`` (services/watch/sinks/metrics_http.py): a scrape gets text prepared in
advance on the event loop (collect does not run per scrape), answered from a thread of
its own even while the watch's loop is busy; the text parses and says what the hosts
said, gzip and keep-alive as Prometheus asks, and the server listens on the address it
was given and no other."""

from __future__ import annotations

import asyncio
import gzip
import socket
import threading
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.samples import healthy_update, inode_update, write_fleet
from test_metrics import host, state_of

from rgt_tui.services.watch.sinks.metrics import FleetMetrics
from rgt_tui.services.watch.sinks.metrics_http import MetricsServer

PROMETHEUS_GET = (
    "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: application/openmetrics-text;"
    "version=1.0.0,text/plain;version=0.0.4;q=0.5\r\nAccept-Encoding: gzip\r\n\r\n"
)


@pytest.fixture
def fleet(tmp_path: Path):  # type: ignore[no-untyped-def]
    return write_fleet(tmp_path)


class Counting(FleetMetrics):
    """FleetMetrics that counts how often its families are built."""

    collected = 0

    def collect(self):  # type: ignore[no-untyped-def]
        self.collected += 1
        return super().collect()


async def request(reader, writer, text: str) -> tuple[str, dict[str, str], bytes]:  # type: ignore[no-untyped-def]
    """Send one request on an open connection; the status line, headers and body."""
    writer.write(text.encode())
    await writer.drain()
    head = (await reader.readuntil(b"\r\n\r\n")).decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in head[1:] if h)}
    body = (
        b"" if text.startswith("HEAD") else await reader.readexactly(int(headers["content-length"]))
    )
    return head[0], headers, body


def series(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def test_a_scrape_serves_prepared_text_and_it_parses(fleet) -> None:  # type: ignore[no-untyped-def]
    metrics = Counting(fleet)
    metrics.on_host(host(fleet, "a100-train"), state_of(healthy_update()))
    server = await metrics.serve("127.0.0.1", 0)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        built = metrics.collected
        assert built >= 1  # prepared before the first scrape
        bodies = []
        for _ in range(3):  # three scrapes, one keep-alive connection, as Prometheus does
            status, headers, body = await request(reader, writer, PROMETHEUS_GET)
            assert status == "HTTP/1.1 200 OK"
            assert headers["content-type"].startswith("text/plain; version=0.0.4")
            assert headers["content-encoding"] == "gzip"
            bodies.append(gzip.decompress(body))
        # Nothing changed and no scrape built anything: each got the prepared bytes.
        assert metrics.collected == built
        assert bodies == [server.body] * 3
        s = series(bodies[0].decode())
        key = ("rgt_gpu_utilization_ratio", frozenset({("host", "a100-train"), ("gpu", "0")}))
        assert s[key] == 0.97
        assert any(name == "process_cpu_seconds_total" for name, _ in s)

        status, headers, body = await request(reader, writer, "HEAD /metrics HTTP/1.1\r\n\r\n")
        assert status == "HTTP/1.1 200 OK" and body == b""
        assert int(headers["content-length"]) == len(server.body)  # plain: no gzip asked
        status, _, _ = await request(reader, writer, "POST /metrics HTTP/1.1\r\n\r\n")
        assert status == "HTTP/1.1 405 Method Not Allowed"
        writer.close()
    finally:
        server.close()


async def test_a_change_reaches_the_text_through_the_event_loop_preparer(fleet) -> None:  # type: ignore[no-untyped-def]
    metrics = FleetMetrics(fleet)
    server = await metrics.serve("127.0.0.1", 0)
    try:
        assert b"rgt_alert{" not in server.body
        metrics.on_host(host(fleet, "h100-eval"), state_of(inode_update()))
        # No scrape yet, so no known period: rebuilt within about a second (MIN_PREP_S).
        async with asyncio.timeout(30):
            while server.prepared_version != metrics.version:
                await asyncio.sleep(0.05)
        assert b'rgt_alert{alert="disk.inodes"' in server.body
    finally:
        server.close()


async def test_a_scrape_is_answered_while_the_watchs_loop_is_busy(fleet) -> None:  # type: ignore[no-untyped-def]
    metrics = FleetMetrics(fleet)
    metrics.on_host(host(fleet, "a100-train"), state_of(healthy_update()))
    server = await metrics.serve("127.0.0.1", 0)
    answered = threading.Event()
    got: list[bytes] = []

    def scrape() -> None:  # Prometheus, in a thread of its own
        with socket.create_connection(("127.0.0.1", server.port), timeout=60) as sock:
            sock.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
            while chunk := sock.recv(65536):
                got.append(chunk)
        answered.set()

    try:
        client = threading.Thread(target=scrape)
        client.start()
        # The watch's loop is held (a burst of 500 samples, say) until the answer came,
        # at most 60 s: served on that loop, it could not come before the wait ends.
        started = time.monotonic()
        came = answered.wait(60)
        held = time.monotonic() - started
        client.join(60)
        assert came, f"no answer while the loop was held ({held:.1f} s)"
        reply = b"".join(got)
        assert reply.startswith(b"HTTP/1.1 200 OK") and b"rgt_gpu_utilization_ratio" in reply
        # The scrape reached the preparer on the loop once it ran again.
        async with asyncio.timeout(30):
            while not server._scrapes:
                await asyncio.sleep(0.01)
    finally:
        server.close()


async def test_it_listens_on_the_given_address_only(fleet) -> None:  # type: ignore[no-untyped-def]
    metrics = FleetMetrics(fleet)
    server = await metrics.serve("127.0.0.1", 0)
    try:
        assert server.address == "127.0.0.1"
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        status, _, _ = await request(reader, writer, "GET / HTTP/1.0\r\n\r\n")
        assert status == "HTTP/1.1 200 OK"
        assert await reader.read() == b""  # HTTP/1.0: closed after the answer
        # Any other path is not the metrics (a user's hour got them at /anything).
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        status, _, body = await request(reader, writer, "GET /metrcs?x=1 HTTP/1.0\r\n\r\n")
        assert status == "HTTP/1.1 404 Not Found" and b"/metrics" in body, (status, body)
        writer.close()
        # The rest of 127/8 is this machine too, but not the address asked for.
        with pytest.raises(ConnectionRefusedError):
            await asyncio.open_connection("127.0.0.2", server.port)
    finally:
        server.close()
    with socket.socket() as sock, pytest.raises(ConnectionRefusedError):
        sock.connect(("127.0.0.1", server.port))


async def test_idle_and_trickling_sockets_never_keep_a_scraper_out(fleet) -> None:  # type: ignore[no-untyped-def]
    """More sockets than MAX_CLIENTS, idle or sending a request a byte at a time, held
    the endpoint: a scrape was closed on arrival for their 30 s (s36 watch #5). A new
    connection now closes the one idle longest; the scraper is answered."""
    from rgt_tui.services.watch.sinks.metrics_http import MAX_CLIENTS

    server = await FleetMetrics(fleet).serve("127.0.0.1", 0)
    held = []
    try:
        for n in range(MAX_CLIENTS + 36):
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            if n % 2:
                writer.write(b"GET /met")  # a request that never ends
            held.append((reader, writer))
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        async with asyncio.timeout(10):  # far under the 30 s the sockets were held for
            status, _, body = await request(reader, writer, "GET /metrics HTTP/1.1\r\n\r\n")
        assert status == "HTTP/1.1 200 OK" and b"rgt_" in body
        # The first ones held were closed for it, the scraper's connection kept.
        async with asyncio.timeout(10):
            assert await held[0][0].read() == b""
        status, _, _ = await request(reader, writer, "GET /metrics HTTP/1.1\r\n\r\n")
        assert status == "HTTP/1.1 200 OK"
    finally:
        for _, w in held:
            w.close()
        server.close()


def test_the_preparer_builds_once_per_scrape_period_just_before_it_is_due(fleet) -> None:  # type: ignore[no-untyped-def]
    server = MetricsServer(FleetMetrics(fleet).registry, lambda: 0)
    server.prepare_s = 0.01
    assert server.period() is None
    server.prepared_at = 100.0
    assert server.next_prepare_in(100.2) == pytest.approx(0.8)  # no scraper yet: ~1 Hz
    server._scrapes.extend([110.0, 115.0])  # every 5 s
    assert server.period() == 5.0
    server.prepared_at = 109.0
    assert server.next_prepare_in(115.1) == pytest.approx(4.4)  # at 119.5, 0.5 s before 120
    server.prepared_at = 119.5
    assert server.next_prepare_in(119.6) == pytest.approx(5.401)  # ready: wait for the scrape
    # The scraper went quiet (no scrape by 125): back to ~1 Hz, then to IDLE_PREP_S.
    assert server.next_prepare_in(125.5) <= 0  # due now
    server.prepared_at = 200.0
    assert server.next_prepare_in(200.0) == pytest.approx(15.0)


def test_irregular_scrapes_never_leave_the_text_older_than_idle_prep_s(fleet) -> None:  # type: ignore[no-untyped-def]
    """Hour s18a #5: scrapes 8 minutes apart (then one by hand) planned the next build
    for 17 minutes on, and /metrics served text 2.5 minutes old."""
    from rgt_tui.services.watch.sinks.metrics_http import IDLE_PREP_S

    server = MetricsServer(FleetMetrics(fleet).registry, lambda: 0)
    server.prepare_s = 0.01
    server._scrapes.extend([100.0, 580.0])  # 8 minutes apart
    server.prepared_at = 581.0  # built after the last scrape: "ready for the next"
    assert server.next_prepare_in(582.0) == pytest.approx(IDLE_PREP_S - 1.0)
    server._scrapes.append(700.0)  # a scrape by hand, 2 minutes on
    assert server.next_prepare_in(700.0) <= 0  # the text is 119 s old: rebuilt now
