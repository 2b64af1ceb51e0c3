"""The loopback SSH boxes behave like sshd boxes, seen from a plain asyncssh client."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import stat
import sys
import time
from pathlib import Path

import asyncssh
import pytest
from support.machine import alive
from support.sshd import OpenSshServer
from support.waiting import wait_for

from rgt_tui.demo.loopback import LoopbackBox, LoopbackFleet
from rgt_tui.services.fleet.file import load_fleet

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the 3.10 fallback named in pyproject's dependencies
    import tomli as tomllib


def _session_of(pid: int) -> int | None:
    """The session id of a process (field 6 of /proc/PID/stat), None when gone."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[3])
    except (FileNotFoundError, IndexError, ValueError):
        return None


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


async def test_fleet_files_describe_every_box(loopback_fleet: LoopbackFleet) -> None:
    fleet = loopback_fleet
    hosts = tomllib.loads(fleet.hosts_file.read_text())["hosts"]
    assert [h["name"] for h in hosts] == ["box1", "box2", "box3"]
    for host, box in zip(hosts, fleet.boxes, strict=True):
        assert host["ssh"] == f"{fleet.username}@127.0.0.1:{box.port}"
        assert host["identity_file"] == str(fleet.client_key)
        assert host["known_hosts"] == str(fleet.known_hosts)
        assert host["profile"] == "generic-ssh"
        assert host["workdir"] == str(box.root)
        assert host["durable_dir"] == str(box.root / "results")
        assert host["mounts"] == [str(box.root)]
        assert (box.root / "results").is_dir()
    lines = fleet.known_hosts.read_text().splitlines()
    assert lines == [
        f"[127.0.0.1]:{b.port} {b.known_hosts_line.split(' ', 1)[1]}" for b in fleet.boxes
    ]
    assert all(line.split()[1] == "ssh-ed25519" for line in lines)
    assert len({b.port for b in fleet.boxes}) == 3
    assert stat.S_IMODE(fleet.client_key.stat().st_mode) == 0o600
    # The loader takes it as written, and no box's pull is refused (the demo pulls results).
    assert [h.pull_refused for h in load_fleet(fleet.hosts_file).hosts] == [None, None, None]


async def test_exec_runs_in_box_root_with_clean_env(loopback_fleet: LoopbackFleet) -> None:
    box = loopback_fleet.boxes[1]
    async with loopback_fleet.connect(box) as conn:
        result = await conn.run(
            'pwd; echo "$HOME"; echo "$LANG $SHELL $PYTHONDONTWRITEBYTECODE"; '
            'echo "${VIRTUAL_ENV-unset}"; echo oops >&2; exit 7'
        )
    assert result.exit_status == 7
    assert result.stdout.splitlines() == [
        str(box.root),
        str(box.root),
        "C.UTF-8 /bin/bash 1",
        "unset",  # nothing leaks from the server process's environment
    ]
    assert result.stderr == "oops\n"
    assert not loopback_fleet.errors


async def test_stdin_eof_reaches_child_and_bytes_pass_unchanged(
    loopback_fleet: LoopbackFleet,
) -> None:
    payload = bytes(range(256)) * 64 + b"\r\n\x00end"
    async with loopback_fleet.connect("box1") as conn:
        text = await conn.run("cat", input="line one\nline two\n")
        raw = await conn.run("cat", input=payload, encoding=None)
    assert (text.exit_status, text.stdout) == (0, "line one\nline two\n")
    assert raw.exit_status == 0
    assert raw.stdout == payload
    assert not loopback_fleet.errors


async def test_long_lived_stream_arrives_line_by_line(loopback_fleet: LoopbackFleet) -> None:
    async with loopback_fleet.connect("box1") as conn:
        process = await conn.create_process("for i in 1 2 3; do echo $i; sleep 0.2; done")
        arrivals = []
        async for line in process.stdout:
            if line:  # asyncssh's iterator ends with one '' at EOF (OpenSSH alike)
                arrivals.append((line.strip(), time.monotonic()))
        await process.wait()
    assert [line for line, _ in arrivals] == ["1", "2", "3"]
    # Had the output been buffered until exit, all three would land together.
    assert arrivals[2][1] - arrivals[0][1] > 0.3
    assert process.exit_status == 0
    assert not loopback_fleet.errors


async def test_signal_death_is_reported_as_a_signal(loopback_fleet: LoopbackFleet) -> None:
    async with loopback_fleet.connect("box1") as conn:
        result = await conn.run("kill -KILL $$")
    assert result.exit_signal is not None
    assert result.exit_signal[0] == "KILL"
    assert result.returncode == -signal.SIGKILL


async def test_client_signal_reaches_the_command(loopback_fleet: LoopbackFleet) -> None:
    async with loopback_fleet.connect("box1") as conn:
        process = await conn.create_process("echo ready; exec sleep 1000")
        assert (await process.stdout.readline()) == "ready\n"
        process.send_signal("TERM")
        await asyncio.wait_for(process.wait(), timeout=60)
    assert process.exit_signal is not None and process.exit_signal[0] == "TERM"
    assert not loopback_fleet.errors


async def test_stop_mid_stream_drops_the_client(loopback_fleet: LoopbackFleet) -> None:
    box = loopback_fleet.boxes[0]
    pid_file = box.root / "loop.pid"
    async with loopback_fleet.connect(box) as conn:
        process = await conn.create_process(
            "echo $$ > loop.pid; while true; do echo tick; sleep 0.05; done"
        )
        assert (await process.stdout.readline()).strip() == "tick"
        await box.stop()
        assert not box.is_running

        async def drain() -> None:
            async for _ in process.stdout:
                pass

        with pytest.raises((asyncssh.Error, OSError)):
            await asyncio.wait_for(drain(), timeout=60)
        await asyncio.wait_for(conn.wait_closed(), timeout=60)
    assert process.exit_status is None  # a drop, not an exit
    pid = _read_pid(pid_file)
    assert pid is not None and not alive(pid)  # the session was hung up on
    with pytest.raises(OSError):
        await asyncio.wait_for(loopback_fleet.connect(box), timeout=60)
    assert not loopback_fleet.errors


async def test_restart_keeps_port_and_host_key(loopback_fleet: LoopbackFleet) -> None:
    box = loopback_fleet.boxes[2]
    port, key = box.port, box.host_key.export_public_key()
    async with loopback_fleet.connect(box) as conn:
        assert (await conn.run("echo before")).stdout == "before\n"
        await box.restart()
        await asyncio.wait_for(conn.wait_closed(), timeout=60)
    assert box.is_running and box.port == port
    # known_hosts was written once, at fleet start: it must still match.
    async with loopback_fleet.connect(box) as conn:
        assert (await conn.run("echo after")).stdout == "after\n"
    # A new box object over the same directory reuses the stored key.
    again = LoopbackBox(box.name, box.root, [], port=0)
    assert again.host_key.export_public_key() == key
    assert not loopback_fleet.errors


def _bind(port: int) -> None:
    """Bind the port as asyncio's create_server would (SO_REUSEADDR); raises when taken."""
    import socket

    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))


async def test_a_stopped_box_keeps_its_port_from_everyone_else(
    make_loopback_fleet,
) -> None:  # type: ignore[no-untyped-def]
    """CI failed once on a restart's "address already in use": while the box was down,
    another test's socket took its port. A down box refuses connections, but holds the
    port until it starts again there; a fleet stopped for good lets it go."""
    fleet = await make_loopback_fleet(1)
    box = fleet.boxes[0]
    port = box.port
    await box.stop()
    with pytest.raises(OSError):
        _bind(port)
    with pytest.raises(ConnectionRefusedError):
        await asyncio.open_connection("127.0.0.1", port)
    await box.start()
    assert box.port == port
    async with fleet.connect(box) as conn:
        assert (await conn.run("echo back")).stdout == "back\n"
    await fleet.stop()
    _bind(port)  # released


async def test_disconnect_kills_session_but_not_detached_jobs(
    loopback_fleet: LoopbackFleet,
) -> None:
    box = loopback_fleet.boxes[0]
    detached = None
    try:
        async with loopback_fleet.connect(box) as conn:
            await conn.create_process(
                "setsid nohup sleep 1000 >/dev/null 2>&1 & echo $! > detached.pid; "
                "echo $$ > plain.pid; exec sleep 1000"
            )
            await wait_for(
                lambda: _read_pid(box.root / "plain.pid") and _read_pid(box.root / "detached.pid"),
                what="pid files",
            )
            plain = _read_pid(box.root / "plain.pid")
            detached = _read_pid(box.root / "detached.pid")
            assert plain is not None and detached is not None
            assert alive(plain) and alive(detached)
            # $! is known before the child has called setsid(); until it has, it is still
            # in the session's process group and a hang-up would rightly reach it.
            await wait_for(lambda: _session_of(detached) == detached, what="setsid to take effect")
        await wait_for(lambda: not alive(plain), what="the session's sleep to die")
        await asyncio.sleep(1.5)  # past the SIGHUP → SIGKILL grace
        assert alive(detached)
    finally:
        if detached is not None and alive(detached):
            os.kill(detached, signal.SIGKILL)
    assert not loopback_fleet.errors


async def test_closing_the_channel_hangs_up_its_command(loopback_fleet: LoopbackFleet) -> None:
    box = loopback_fleet.boxes[1]
    async with loopback_fleet.connect(box) as conn:
        process = await conn.create_process(
            "trap 'echo hup > hup.txt; exit 0' HUP; echo $$ > chan.pid; "
            "while :; do sleep 0.05; done"
        )
        await wait_for(lambda: _read_pid(box.root / "chan.pid"), what="chan.pid")
        pid = _read_pid(box.root / "chan.pid")
        assert pid is not None and alive(pid)
        process.close()
        await wait_for(lambda: not alive(pid), what="the command to be hung up on")
        assert (box.root / "hup.txt").read_text() == "hup\n"  # SIGHUP first, not SIGKILL
        # Only the channel went away: the connection still serves new commands.
        assert (await conn.run("echo still")).stdout == "still\n"
    assert not loopback_fleet.errors


async def test_sftp_relative_paths_resolve_against_box_root(
    loopback_fleet: LoopbackFleet, tmp_path: Path
) -> None:
    box = loopback_fleet.boxes[1]
    (box.root / "results" / "x.pt").write_bytes(b"\x80weights")
    local = tmp_path / "x.pt"
    async with loopback_fleet.connect(box) as conn, conn.start_sftp_client() as sftp:
        assert await sftp.realpath(".") == str(box.root)
        await sftp.get("results/x.pt", str(local))
        absolute = await sftp.stat(str(box.root / "results" / "x.pt"))
    assert local.read_bytes() == b"\x80weights"
    assert absolute.size == len(b"\x80weights")
    assert not loopback_fleet.errors


async def test_only_the_authorized_key_gets_in(loopback_fleet: LoopbackFleet) -> None:
    stranger = asyncssh.generate_private_key("ssh-ed25519")
    with pytest.raises(asyncssh.PermissionDenied):
        await loopback_fleet.connect("box1", client_keys=[stranger], password="hunter2")


async def test_handler_errors_are_recorded_not_swallowed(loopback_fleet: LoopbackFleet) -> None:
    box = loopback_fleet.boxes[2]
    shutil.rmtree(box.root)  # the child cannot start in a missing cwd
    async with loopback_fleet.connect(box) as conn:
        result = await conn.run("true")
    assert result.exit_status == 255
    assert len(box.errors) == 1
    assert "exec 'true'" in box.errors[0]


async def test_make_loopback_fleet_starts_64_boxes_quickly(make_loopback_fleet) -> None:
    started = time.monotonic()
    fleet = await make_loopback_fleet(64)
    assert time.monotonic() - started < 10  # the TUI benchmark starts 64 boxes
    assert [b.name for b in fleet.boxes] == [f"box{i}" for i in range(1, 65)]
    async with fleet.connect("box64") as conn:
        assert (await conn.run("basename $PWD")).stdout == "box64\n"


async def test_openssh_server_runs_a_command(openssh_server: OpenSshServer) -> None:
    server = openssh_server
    hosts = tomllib.loads(server.hosts_file.read_text())["hosts"]
    assert hosts[0]["name"] == "real1"
    assert hosts[0]["ssh"].endswith(f"@127.0.0.1:{server.port}")
    async with server.connect() as conn:
        result = await conn.run(f"cd {hosts[0]['workdir']} && pwd && whoami")
    assert result.exit_status == 0
    assert result.stdout.splitlines() == [str(server.workdir), server.user]
    port = server.port
    server.stop()
    server.start()
    assert server.port == port
    async with server.connect() as conn:
        assert (await conn.run("echo again")).stdout == "again\n"


async def test_demo_boxes_show_a_replayed_h100_and_what_they_cost(tmp_path):
    """The demo's boxes: a recorded H100 (idle or under load) through the real agent,
    and each with a platform profile and an hourly price in its fleet file."""
    from rgt_tui.services.box.status import sample_once
    from rgt_tui.services.fleet.file import load_fleet
    from rgt_tui.transport import transport_for

    costs = (("runpod", 2.49), ("vastai", 1.89))
    async with LoopbackFleet(2, tmp_path / "fleet", gpus=True, costs=costs) as fleet:
        hosts = load_fleet(fleet.hosts_file)
        assert [(h.profile, h.cost_per_hour) for h in hosts.hosts] == list(costs)
        transport = transport_for(hosts.host("box1"))
        try:
            snap = await sample_once(hosts.host("box1"), transport)
        finally:
            await transport.close()
    assert snap.gpu_source == "nvidia-smi" and snap.gpu_unavailable_reason is None
    (gpu,) = snap.gpus
    assert gpu.name == "NVIDIA H100 80GB HBM3" and gpu.util_pct in (0.0, 100.0)


async def test_a_connection_made_after_stop_is_dropped(tmp_path: Path) -> None:
    """CI, loaded: asyncio makes an accepted connection's protocol in a task of its own,
    so one accepted just before stop() reached the box's server after stop() had dropped
    every connection it knew, and answered for a box that was down (a disk audit of a
    stopped box succeeded). The box drops it as stop() drops the others."""
    from rgt_tui.demo.loopback.box import _BoxServer, load_or_create_key

    box = LoopbackBox("late", tmp_path / "late", load_or_create_key(tmp_path / "client"))
    await box.start()
    await box.stop()

    class Conn:
        aborted = False

        def abort(self) -> None:
            self.aborted = True

    late = Conn()
    _BoxServer(box).connection_made(late)  # type: ignore[arg-type]
    await asyncio.sleep(0)
    assert late.aborted and box.open_connections == 0
    await box.start()
    kept = Conn()
    _BoxServer(box).connection_made(kept)  # type: ignore[arg-type]
    await asyncio.sleep(0)
    assert not kept.aborted and box.open_connections == 1
    box._conns.clear()
    await box.close()
