"""The first sender of a pull shares a Unix socket on the box; the other senders are
channels to it (sshd connects them: no shell or python3 starts for them).

The box side runs for real (bash, python3, fork, a Unix socket); the pulls go through
OpenSSH's sshd, which forwards the socket, and fall back to exec'd senders where it will
not (``AllowStreamLocalForwarding no``) or cannot (the loopback asyncssh box).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from pull_support import MIB, box_results, fast, host_of, random_file, sha
from sshd_server import OpenSshServer

from rgt_tui.agent.sendfiles import FOLDER_PREFIX, HUB, SWEEP_AFTER_S
from rgt_tui.domain.config import load_fleet
from rgt_tui.services.pull import pull_host
from rgt_tui.services.pull_batch import FrameParser
from rgt_tui.services.remote_file import _OneFile
from rgt_tui.services.sender_pool import SEND_COMMAND, request_line, sender_input
from rgt_tui.transport import transport_for
from rgt_tui.transport.base import SocketRefused


def _share_folders() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob(FOLDER_PREFIX + "*"))


def _start_sharing_sender() -> tuple[subprocess.Popen, str]:
    """The real sender, started as the box starts it, with its socket; and that path."""
    proc = subprocess.Popen(
        ["bash", "-c", SEND_COMMAND], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(sender_input(share=True).encode())
    proc.stdin.flush()
    line = proc.stdout.readline()
    assert line.startswith(HUB), line
    return proc, line[len(HUB) :].strip().decode()


def _batch(conn: socket.socket, files: list[tuple[str, int]]) -> list[bytes]:
    """Ask for ``files`` on ``conn``; their bytes, parsed as the pull parses them."""
    conn.sendall(request_line(files).encode())
    frames, got = FrameParser(len(files)), []
    while not frames.complete():
        chunk = conn.recv(1 << 16)
        assert chunk, "the socket closed before the reply was whole"
        got += frames.feed(chunk)
    return [data for _, data in got]


def _one(conn: socket.socket, request: dict) -> bytes:
    """Ask for one large file's range on ``conn``; its bytes, parsed."""
    conn.sendall(request_line(request).encode())
    frames, data = _OneFile("box", request["path"]), b""
    while not frames.complete():
        chunk = conn.recv(1 << 16)
        assert chunk, "the socket closed before the reply was whole"
        data += frames.feed(chunk)
    return data


def _wait_until(check, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return check()


async def _until(check, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        await asyncio.sleep(0.02)
    return check()


def test_the_shared_socket_serves_each_connection_and_goes_with_its_sender(tmp_path):
    small = {f"s{i}.bin": os.urandom(700 + i) for i in range(6)}
    for name, data in small.items():
        (tmp_path / name).write_bytes(data)
    big = os.urandom(2 * MIB + 5)
    (tmp_path / "big ü.pt").write_bytes(big)
    proc, path = _start_sharing_sender()
    folder = Path(path).parent
    try:
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700  # nobody else can connect
        assert stat.S_ISSOCK(Path(path).stat().st_mode)
        batch = [(str(tmp_path / name), len(data)) for name, data in small.items()]
        one = {"path": str(tmp_path / "big ü.pt"), "offset": 100, "size": len(big)}
        first, second = socket.socket(socket.AF_UNIX), socket.socket(socket.AF_UNIX)
        first.connect(path)
        second.connect(path)
        with first, second:
            for _ in range(2):  # each connection answers request after request
                assert _batch(first, batch) == list(small.values())
                assert _one(second, one) == big[100:]
            # The sender itself still answers on its stdin and stdout.
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(request_line(batch[:1]).encode())
            proc.stdin.flush()
            frames, got = FrameParser(1), []
            while not frames.complete():
                got += frames.feed(proc.stdout.read1(1 << 16))
            assert got == [(0, small["s0.bin"])]
            # Its end (end of stdin: the pull is over) ends the listener, which removes
            # its socket and folder; a connection already open is served to its end.
            proc.stdin.close()
            assert proc.wait(timeout=5) == 0
            assert _wait_until(lambda: not folder.exists())
            assert _one(second, one) == big[100:]
    finally:
        proc.kill()
        proc.wait()


def test_a_folder_left_by_a_killed_listener_is_swept_by_the_next_sender():
    proc, path = _start_sharing_sender()
    folder = Path(path).parent
    listener = [
        int(pid) for pid in os.listdir("/proc") if pid.isdigit() and _parent(int(pid)) == proc.pid
    ]
    assert len(listener) == 1
    os.kill(listener[0], signal.SIGKILL)  # no chance to clean up
    proc.kill()
    proc.wait()
    assert _wait_until(lambda: _parent(listener[0]) is None)
    assert (folder / "s").exists()  # left behind, with nobody listening
    young, _ = _start_sharing_sender()
    young.kill()
    young.wait()
    assert folder.exists()  # too young to be sure it is not still starting up
    old = time.time() - SWEEP_AFTER_S - 5
    os.utime(folder, (old, old))
    proc2, path2 = _start_sharing_sender()
    try:
        assert not folder.exists()
        assert Path(path2).exists()  # its own, live one is kept
    finally:
        assert proc2.stdin is not None
        proc2.stdin.close()
        proc2.wait(timeout=5)
    assert _wait_until(lambda: not Path(path2).parent.exists())


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] == "Z" else int(fields[1])


def _pull_set(res: Path) -> dict[str, str]:
    files = {
        f"evals/s{i:02d}.json": random_file(res / f"evals/s{i:02d}.json", 900 + i)
        for i in range(40)
    }
    files |= {f"ckpt/e{i}.pt": random_file(res / f"ckpt/e{i}.pt", 3 * MIB + i) for i in range(3)}
    return files


class _Counted:
    """Counts the senders a pull starts as commands and as socket connections."""

    def __init__(self, transport) -> None:
        self.commands: list[str] = []
        self.sockets = 0
        self.refused = 0
        stream_bytes, stream_socket = transport.stream_bytes, transport.stream_socket

        def counting_command(command, **kw):
            self.commands.append(command)
            return stream_bytes(command, **kw)

        async def counting_socket(path, **kw):
            self.sockets += 1
            try:
                async for chunk in stream_socket(path, **kw):
                    yield chunk
            except SocketRefused:
                self.refused += 1
                raise

        transport.stream_bytes = counting_command
        transport.stream_socket = counting_socket


async def _pull(server: OpenSshServer, out: Path) -> tuple[object, _Counted]:
    host = load_fleet(server.hosts_file).host("real1")
    transport = transport_for(host)
    counted = _Counted(transport)
    try:
        result = await pull_host(host, out, transport, options=fast(batch_streams=2, concurrency=3))
    finally:
        await transport.close()
    return result, counted


async def test_over_sshd_one_sender_starts_the_others_connect_to_its_socket(
    openssh_server: OpenSshServer, tmp_path
):
    expected = _pull_set(openssh_server.workdir / "results")
    before = _share_folders()
    result, counted = await _pull(openssh_server, tmp_path / "out")
    assert result.ok and len(result.pulled) == 43
    for rel, digest in expected.items():
        assert sha(tmp_path / "out" / "real1" / rel) == digest
    # One shell and python3 for every sender: the rest came through its socket.
    assert counted.commands.count(SEND_COMMAND) == 1
    assert counted.sockets >= 2 and counted.refused == 0
    # The pull's end ends the sender; its listener removes the socket and its folder.
    assert await _until(lambda: _share_folders() <= before)


async def test_a_box_that_does_not_forward_sockets_gets_commands_as_before(tmp_path):
    server = OpenSshServer(tmp_path / "openssh", config=("AllowStreamLocalForwarding no",))
    server.start()
    try:
        expected = _pull_set(server.workdir / "results")
        result, counted = await _pull(server, tmp_path / "out")
    finally:
        server.stop()
    assert result.ok and len(result.pulled) == 43
    for rel, digest in expected.items():
        assert sha(tmp_path / "out" / "real1" / rel) == digest
    assert counted.sockets == 1 and counted.refused == 1  # tried once, then not again
    assert counted.commands.count(SEND_COMMAND) >= 2


async def test_a_socket_the_box_will_not_connect_is_refused_not_a_drop(make_loopback_fleet):
    fleet = await make_loopback_fleet(1)
    transport = transport_for(host_of(fleet))
    await transport.connect()
    try:
        with pytest.raises(SocketRefused):
            async for _ in transport.stream_socket(str(box_results(fleet) / "nothing")):
                pass
        assert transport.connected  # the connection is fine: only that channel was refused
    finally:
        await transport.close()
