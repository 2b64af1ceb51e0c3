"""A relay adding delay in front of a test sshd (``scripts/far_link.py``): a far box on
loopback, with its own fleet file and known_hosts."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from rgt_tui.services.fleet.file import load_fleet
from support.machine import free_port
from support.sshd import OpenSshServer

FAR_LINK = Path(__file__).resolve().parents[2] / "scripts" / "far_link.py"


@contextlib.contextmanager
def far_relay(server: OpenSshServer, delay_ms: int) -> Iterator[Path]:
    """A relay adding ``delay_ms`` each way in front of ``server``; its fleet file."""
    port = free_port()
    relay = subprocess.Popen(
        [sys.executable, str(FAR_LINK), "--listen", str(port), "--target", str(server.port),
         "--delay-ms", str(delay_ms), "--rate-mbit", "1000"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        key = server.known_hosts.read_text().split(" ", 1)[1]
        known = server.base_dir / "known_hosts_far"
        known.write_text(f"[127.0.0.1]:{port} {key}")
        hosts = server.base_dir / "hosts_far.toml"
        text = server.hosts_file.read_text()
        text = text.replace(f"127.0.0.1:{server.port}", f"127.0.0.1:{port}")
        hosts.write_text(text.replace(str(server.known_hosts), str(known)))
        yield hosts
    finally:
        relay.terminate()
        relay.wait()


def relay_listening(hosts: Path) -> bool:
    """Whether the relay of fleet file ``hosts`` accepts connections yet."""
    port = int(load_fleet(hosts).host("real1").ssh.port)  # type: ignore[union-attr]
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0
