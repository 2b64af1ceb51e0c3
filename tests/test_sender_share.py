"""Over SSH a pull starts no shell for its senders: the manifest's scan (a python3 already
running on the box) shares a Unix socket, and every sender is a channel to it (sshd
connects it; the listener forks itself to run the sender).

The box side runs for real (python3, fork, a Unix socket); the pulls go through
OpenSSH's sshd, which forwards the socket, and fall back to exec'd senders where it will
not (``AllowStreamLocalForwarding no``) or cannot (the loopback asyncssh box).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pull_support import MIB, CountedSenders, box_results, fast, host_of, random_file, sha
from sshd_server import OpenSshServer

from rgt_tui.agent.manifest import SHARE_PREFIX, SWEEP_AFTER_S
from rgt_tui.domain.config import load_fleet
from rgt_tui.services.manifest import manifest_command, manifest_source
from rgt_tui.services.pull import pull_host
from rgt_tui.services.pull_batch import FrameParser
from rgt_tui.services.remote_file import _OneFile
from rgt_tui.services.sender_pool import SEND_COMMAND, request_line, sender_input
from rgt_tui.transport import transport_for
from rgt_tui.transport.base import SocketRefused


@pytest.fixture
def box_tmp():
    """A private, short temporary directory for the scans here (the socket's path must stay
    under 108 bytes), so their folders and sweeps never meet another test's or pull's."""
    path = Path(tempfile.mkdtemp(prefix="rs", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


class _Scan:
    """The real manifest scan with ``--share``, as the box runs it; its socket's path."""

    def __init__(self, root: Path, tmp: Path, grace: float = 30, cwd: Path | None = None) -> None:
        command = manifest_command([str(root)], first_below=1 << 20, share=True)
        self.proc = subprocess.Popen(
            ["bash", "-c", f"{command} --share-grace {grace}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "TMPDIR": str(tmp)},
            cwd=cwd,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(manifest_source().encode())
        self.proc.stdin.close()
        first = json.loads(self.proc.stdout.readline())
        assert first["type"] == "share", first
        self.path: str = first["path"]

    def finish(self) -> list[dict]:
        """The rest of the scan's output, once it has ended."""
        assert self.proc.stdout is not None
        out = self.proc.stdout.read()
        assert self.proc.wait(timeout=10) == 0
        return [json.loads(line) for line in out.splitlines()]

    def connect(self, kind: bytes) -> socket.socket:
        conn = socket.socket(socket.AF_UNIX)
        conn.connect(self.path)
        conn.sendall(kind)
        return conn


def _control(scan: _Scan) -> socket.socket:
    conn = scan.connect(b"C")
    assert conn.recv(1) == b"K"
    return conn


def _sender(scan: _Scan) -> socket.socket:
    conn = scan.connect(b"S")
    conn.sendall(sender_input().encode())
    return conn


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


def test_the_scan_s_socket_runs_senders_until_the_pull_lets_go(tmp_path, box_tmp):
    small = {f"s{i}.bin": os.urandom(700 + i) for i in range(6)}
    for name, data in small.items():
        (tmp_path / name).write_bytes(data)
    big = os.urandom(2 * MIB + 5)
    (tmp_path / "big ü.pt").write_bytes(big)
    scan = _Scan(tmp_path, box_tmp)
    folder = Path(scan.path).parent
    control = None
    try:
        assert folder.parent == box_tmp and folder.name.startswith(SHARE_PREFIX)
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700  # nobody else can connect
        control = _control(scan)
        # The scan goes on and ends as without --share; the listener does not end with it.
        lines = scan.finish()
        assert lines[-1]["type"] == "done" and lines[-1]["files"] == 7
        batch = [(str(tmp_path / name), len(data)) for name, data in small.items()]
        one = {"path": str(tmp_path / "big ü.pt"), "offset": 100, "size": len(big)}
        with _sender(scan) as first, _sender(scan) as second:
            for _ in range(2):  # each sender answers request after request
                assert _batch(first, batch) == list(small.values())
                assert _one(second, one) == big[100:]
            # The control connection's end (the pull is over) ends the listener, which
            # removes its socket and folder; a sender already connected is served to its end.
            control.close()
            assert _wait_until(lambda: not folder.exists())
            assert _one(second, one) == big[100:]
    finally:
        if control is not None:
            control.close()
        scan.proc.kill()
        scan.proc.wait()


def test_the_listener_holds_no_folder_of_the_user_s_and_its_senders_start_where_the_scan_did(
    tmp_path, box_tmp
):
    """A listener left waiting must not keep a user's folder (a mount) busy, nor be taken
    for a process of that folder; its senders resolve a relative path as an exec'd one."""
    (tmp_path / "a.bin").write_bytes(b"relative")
    scan = _Scan(tmp_path, box_tmp, cwd=tmp_path)
    with _control(scan), _sender(scan) as sender:
        assert _batch(sender, [("a.bin", 8)]) == [b"relative"]
        # The sender's fork has closed its copy of the listening socket by now.
        owners = [p for p in filter(str.isdigit, os.listdir("/proc")) if _owns(int(p), scan.path)]
        assert len(owners) == 1
        assert os.readlink(f"/proc/{owners[0]}/cwd") == "/"
    scan.finish()


def test_a_control_connection_after_a_short_scan_still_gets_the_socket(tmp_path, box_tmp):
    """On a far box the pull's control connection comes a round trip after the share line,
    which can be after a short scan has ended: the listener waits for it a while."""
    (tmp_path / "a.bin").write_bytes(b"x" * 10)
    scan = _Scan(tmp_path, box_tmp, grace=3)
    assert scan.finish()[-1]["type"] == "done"
    time.sleep(0.5)  # a round trip on a slow link, after the scan's end
    with _control(scan), _sender(scan) as sender:
        assert _batch(sender, [(str(tmp_path / "a.bin"), 10)]) == [b"x" * 10]
    assert _wait_until(lambda: not Path(scan.path).parent.exists())


def test_with_no_control_connection_the_listener_ends_after_its_grace(tmp_path, box_tmp):
    (tmp_path / "a.bin").write_bytes(b"x" * 10)
    scan = _Scan(tmp_path, box_tmp, grace=1)
    folder = Path(scan.path).parent
    assert scan.finish()[-1]["type"] == "done"
    assert folder.exists()  # still waiting for the pull's control connection
    assert _wait_until(lambda: not folder.exists())  # none came (sshd refused it): gone


def test_a_folder_left_by_a_killed_listener_is_swept_by_the_next_scan(tmp_path, box_tmp):
    scan = _Scan(tmp_path, box_tmp)
    folder = Path(scan.path).parent
    control = _control(scan)
    scan.finish()
    listener = [
        int(pid) for pid in os.listdir("/proc") if pid.isdigit() and _owns(int(pid), scan.path)
    ]
    assert len(listener) == 1
    os.kill(listener[0], signal.SIGKILL)  # no chance to clean up
    control.close()
    assert _wait_until(lambda: _parent(listener[0]) is None)
    assert (folder / "s").exists()  # left behind, with nobody listening
    young = _Scan(tmp_path, box_tmp, grace=0)
    young.finish()
    assert folder.exists()  # too young to be sure it is not still starting up
    old = time.time() - SWEEP_AFTER_S - 5
    os.utime(folder, (old, old))
    again = _Scan(tmp_path, box_tmp, grace=0)
    assert not folder.exists()
    assert Path(again.path).exists()  # its own, live one is kept
    again.finish()
    assert _wait_until(lambda: not Path(again.path).parent.exists())
    assert _wait_until(lambda: not Path(young.path).parent.exists())


def test_an_empty_folder_left_by_a_killed_scan_is_swept_once_old_enough(tmp_path, box_tmp):
    """A scan killed (SIGKILL) between creating its folder and binding the socket in it
    leaves the folder empty: the next scan removes it once it is old enough."""
    old_one = Path(tempfile.mkdtemp(prefix=SHARE_PREFIX, dir=box_tmp))
    young_one = Path(tempfile.mkdtemp(prefix=SHARE_PREFIX, dir=box_tmp))
    old = time.time() - SWEEP_AFTER_S - 5
    os.utime(old_one, (old, old))
    scan = _Scan(tmp_path, box_tmp, grace=0)
    assert not old_one.exists()
    assert young_one.exists()  # may be a scan that is about to bind its socket
    scan.finish()
    assert _wait_until(lambda: not Path(scan.path).parent.exists())


def test_a_hang_up_while_the_scan_sets_up_its_folder_leaves_nothing(box_tmp):
    """The scan's session hung up (a dropped connection) right after it created its folder:
    the scan still ends by that hang-up, and the folder does not stay behind."""
    program = manifest_source().replace('if __name__ == "__main__":', "if False:") + (
        "\nimport tempfile\n"
        "_mkdtemp = tempfile.mkdtemp\n"
        "def mkdtemp(**kw):\n"
        "    folder = _mkdtemp(**kw)\n"
        "    print(folder, flush=True)\n"
        "    os.kill(os.getpid(), signal.SIGHUP)\n"  # lands between mkdtemp and the fork
        "    return folder\n"
        "tempfile.mkdtemp = mkdtemp\n"
        "share(0.5)\n"
        "print('survived the hang-up', flush=True)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-S", "-c", "import signal\n" + program],
        stdout=subprocess.PIPE,
        env={**os.environ, "TMPDIR": str(box_tmp)},
        start_new_session=True,
    )
    out, _ = proc.communicate(timeout=10)
    lines = out.decode().split()
    assert proc.returncode == -signal.SIGHUP and lines[1:] == []
    folder = Path(lines[0])
    assert folder.name.startswith(SHARE_PREFIX)
    assert _wait_until(lambda: not folder.exists())  # the listener's, cleaned up by it


def _owns(pid: int, path: str) -> bool:
    """Whether process ``pid`` has the listening socket ``path`` open (the listener)."""
    inodes = set()
    try:
        with open("/proc/net/unix") as f:
            for line in f:
                fields = line.split()
                # Accepted connections show the path too; only the listening one has
                # __SO_ACCEPTCON (flags 00010000).
                if line.rstrip().endswith(" " + path) and fields[3] == "00010000":
                    inodes.add(fields[6])
        for fd in os.listdir(f"/proc/{pid}/fd"):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:[") and target[8:-1] in inodes:
                return True
    except OSError:
        return False
    return False


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


async def _pull(server: OpenSshServer, out: Path) -> tuple[object, CountedSenders]:
    host = load_fleet(server.hosts_file).host("real1")
    transport = transport_for(host)
    counted = CountedSenders(transport)
    try:
        result = await pull_host(host, out, transport, options=fast(batch_streams=2, concurrency=3))
    finally:
        await transport.close()
    return result, counted


async def test_over_sshd_every_sender_connects_to_the_scan_s_socket(
    openssh_server: OpenSshServer, tmp_path
):
    expected = _pull_set(openssh_server.workdir / "results")
    result, counted = await _pull(openssh_server, tmp_path / "out")
    assert result.ok and len(result.pulled) == 43
    for rel, digest in expected.items():
        assert sha(tmp_path / "out" / "real1" / rel) == digest
    # No shell and python3 started for any sender: all came through the scan's socket.
    assert counted.commands.count(SEND_COMMAND) == 0
    assert counted.controls == 1 and counted.sockets >= 2 and counted.refused == 0
    # The pull's end ends the control connection; the listener removes socket and folder.
    assert len(counted.paths) == 1
    folder = Path(next(iter(counted.paths))).parent
    assert folder.name.startswith(SHARE_PREFIX)
    assert await _until(lambda: not folder.exists())


def _share_processes(stdin: Callable[[str], bool], marker: str = "") -> list[int]:
    """PIDs of processes forked from a ``--share`` scan (whose command line names
    ``marker``) whose stdin, as /proc shows it, passes ``stdin``: a forked sender's is a
    socket, the listener's /dev/null (the scan itself has ended by then)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                words = f.read()
            scan = b"--share" in words and marker.encode() in words
            if scan and stdin(os.readlink(f"/proc/{pid}/fd/0")):
                found.append(int(pid))
        except OSError:
            continue
    return found


def _socket_senders() -> list[int]:
    return _share_processes(lambda fd0: fd0.startswith("socket:"))


def _listeners(marker: str) -> list[int]:
    return _share_processes(lambda fd0: fd0 == os.devnull, marker)


async def test_a_socket_sender_killed_mid_file_hands_the_rest_to_sftp(
    openssh_server: OpenSshServer, tmp_path
):
    """With no exit status on a socket, a sender that dies mid-reply must not pass for a
    file that shrank on the box: the rest of the file comes over SFTP, whole."""
    digest = random_file(openssh_server.workdir / "results" / "ckpt.pt", 160 * MIB)
    host = load_fleet(openssh_server.hosts_file).host("real1")
    transport = transport_for(host)
    counted = CountedSenders(transport)
    killed: list[int] = []

    def kill_mid_file(p) -> None:
        if not killed and any(f.done >= 8 * MIB for f in p.active):
            for pid in _socket_senders():
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)

    try:
        result = await pull_host(
            host,
            tmp_path / "out",
            transport,
            options=fast(progress_interval_s=0.01),
            on_progress=kill_mid_file,
        )
    finally:
        await transport.close()
    assert killed and counted.sockets >= 1  # it was a socket sender, and it died mid-file
    assert result.ok and not result.failed
    assert sha(tmp_path / "out" / "real1" / "ckpt.pt") == digest


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
    assert counted.controls == 1 and counted.refused == 1  # refused once: never again
    assert counted.sockets == 0 and counted.commands.count(SEND_COMMAND) >= 2
    # With no control connection the listener waits out its grace; a SIGTERM (a box
    # shutting down) ends it sooner, and it still removes its socket and folder.
    folder = Path(next(iter(counted.paths))).parent
    listeners = _listeners(str(server.workdir))
    assert folder.exists() and len(listeners) == 1
    os.kill(listeners[0], signal.SIGTERM)
    assert await _until(lambda: not folder.exists())


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


def test_a_hang_up_before_the_listener_has_its_own_session_still_cleans_up(box_tmp):
    """The scan's process group hung up (a dropped session) just after the fork: the
    listener, not yet in a session of its own, must still remove its socket and folder.
    Its setsid is slowed here so the hang-up lands in that window every time."""
    program = manifest_source().replace('if __name__ == "__main__":', "if False:") + (
        "\nimport time\n"
        "_setsid = os.setsid\n"
        "os.setsid = lambda: (time.sleep(1.0), _setsid())[1]\n"
        "print(share(30), flush=True)\n"
        "os.killpg(0, signal.SIGHUP)\n"  # the scan's whole group, the listener included
    )
    proc = subprocess.Popen(
        [sys.executable, "-S", "-c", "import signal\n" + program],
        stdout=subprocess.PIPE,
        env={**os.environ, "TMPDIR": str(box_tmp)},
        start_new_session=True,  # a group of its own, as sshd gives each session
    )
    out, _ = proc.communicate(timeout=10)
    path = Path(out.decode().strip())
    assert proc.returncode == -signal.SIGHUP and path.parent.name.startswith(SHARE_PREFIX)
    assert _wait_until(lambda: not path.parent.exists())
