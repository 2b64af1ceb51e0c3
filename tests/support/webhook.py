"""A local HTTP server that records what Apprise's ``json://`` target POSTs to it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Webhook:
    """Every POST as (path, JSON body); paths in ``failing`` answer 500 (and are
    recorded in ``refused``). ``url(path)`` is the Apprise URL of a path."""

    port: int = 0
    received: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    refused: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    failing: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def url(self, path: str) -> str:
        """``json://127.0.0.1:PORT/path``: Apprise POSTs a JSON body there."""
        return f"json://127.0.0.1:{self.port}{path}"

    def at(self, path: str) -> list[dict[str, Any]]:
        """The bodies delivered (answered 200) to ``path``."""
        with self.lock:
            return [body for p, body in self.received if p == path]

    def tries(self, path: str) -> int:
        """How many POSTs ``path`` refused."""
        with self.lock:
            return sum(1 for p, _ in self.refused if p == path)


@contextmanager
def webhook() -> Iterator[Webhook]:
    """A recording server on a free loopback port, for the ``with`` block."""
    hook = Webhook()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = min(int(self.headers.get("Content-Length") or 0), 1 << 20)
            body = json.loads(self.rfile.read(length) or b"{}")
            with hook.lock:
                fail = self.path in hook.failing
                (hook.refused if fail else hook.received).append((self.path, body))
            self.send_response(500 if fail else 200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            """Quiet: the test reads ``received``, not the server's log."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    hook.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hook
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
