"""A tiny HTTP server on the loopback box's side (this machine's 127.0.0.1), and the
client checks a tunnel test makes through it (U39)."""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator

import psutil


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = b"hello from the box"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def box_http_server() -> Iterator[int]:
    """An HTTP server on 127.0.0.1:<free port> (the box's loopback); yields the port."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return answer.read().decode()


async def fetch(url: str) -> str:
    return await asyncio.to_thread(_get, url)


async def refused(url: str) -> bool:
    try:
        await fetch(url)
    except (urllib.error.URLError, ConnectionError, OSError):
        return True
    return False


def listening_addresses(port: int) -> set[str]:
    """The addresses something listens on at TCP ``port`` on this machine."""
    return {
        c.laddr.ip
        for c in psutil.net_connections("tcp")
        if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port
    }
