"""SSH transport over real loopback asyncssh servers: commands, host keys, reconnect.

Over 450 lines: one transport's contract (commands, host keys, reconnects, SFTP reads
and the ``~`` of its paths), whose cases share the servers and helpers here."""

from __future__ import annotations

import asyncio
import getpass
import os
import re
import shlex
import subprocess
from pathlib import Path

import asyncssh
import pytest
from support.sshd import INSTALL_HINT, SSHD, OpenSshServer
from support.waiting import wait_for

from rgt_tui.domain.errors import HostKeyError, TransportError
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.telemetry import HostMonitor, HostUpdate
from rgt_tui.transport import transport_for
from rgt_tui.transport.backoff import Backoff
from rgt_tui.transport.base import checked_blocks
from rgt_tui.transport.local import LocalTransport
from rgt_tui.transport.ssh import SshTransport


def _transport(fleet, box, known_hosts=None) -> SshTransport:
    return SshTransport(
        box.name,
        address="127.0.0.1",
        port=box.port,
        username=getpass.getuser(),
        identity_file=fleet.client_key,
        known_hosts=known_hosts or fleet.known_hosts,
    )


def _fingerprint_of(box) -> str:
    key = asyncssh.import_public_key(box.host_key.export_public_key())
    return key.get_fingerprint("sha256")


async def test_run_and_stream_over_ssh(loopback_fleet):
    box = loopback_fleet.boxes[0]
    t = _transport(loopback_fleet, box)
    await t.connect()
    try:
        result = await t.run("echo hi; pwd; exit 3")
        assert result.exit_status == 3 and result.stdout.split() == ["hi", str(box.root)]
        lines = [ln async for ln in t.stream_lines("cat; echo done", input="a\nb\n")]
        assert lines == ["a", "b", "done"]
        with pytest.raises(TransportError, match="status 4"):
            async for _ in t.stream_lines("echo x; echo boom >&2; exit 4"):
                pass
        await _streams_bytes_exactly(t, box.root / "blob.bin", "boom: exit 5")
    finally:
        await t.close()
    assert not t.connected


async def test_local_transport_streams_bytes_exactly(tmp_path):
    await _streams_bytes_exactly(LocalTransport("here"), tmp_path / "blob.bin", "boom: exit 5")


async def _streams_bytes_exactly(t, blob, last_stderr) -> None:
    """Every byte value, megabytes of it, comes back as it is; a failure names the status."""
    data = bytes(range(256)) * 4096 + os.urandom(3 << 20)
    blob.write_bytes(data)
    chunks = [c async for c in t.stream_bytes(f"cat {shlex.quote(str(blob))}")]
    assert b"".join(chunks) == data and len(chunks) > 1 and all(chunks)
    echoed = [c async for c in t.stream_bytes("cat", input="ünï\n")]
    assert b"".join(echoed) == "ünï\n".encode()
    with pytest.raises(TransportError, match=f"status 5: {last_stderr}"):
        async for _ in t.stream_bytes("printf x; echo 'boom: exit 5' >&2; exit 5"):
            pass


async def test_unknown_host_key_is_refused_with_fingerprint_and_fix(loopback_fleet, tmp_path):
    box = loopback_fleet.boxes[0]
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    t = _transport(loopback_fleet, box, known_hosts=empty)
    with pytest.raises(HostKeyError) as err:
        await t.connect()
    fp = _fingerprint_of(box)
    assert err.value.presented.endswith(fp)
    assert "unknown host key" in err.value.message and fp in err.value.message
    assert f"[127.0.0.1]:{box.port} ssh-ed25519 " in err.value.fix
    assert not t.connected
    # Following the printed fix (after comparing the fingerprint) makes it connect.
    cmd = err.value.fix.split("run: ", 1)[1]
    await asyncio.to_thread(subprocess.run, ["bash", "-c", cmd], check=True)
    await t.connect()
    assert (await t.run("true")).ok
    await t.close()


async def test_a_damaged_line_for_the_box_is_named_not_called_missing(loopback_fleet, tmp_path):
    """A known_hosts line that names the box but cannot be read (its key type lost) is
    skipped, as OpenSSH does; the refusal says which line, not "no line for it"."""
    box = loopback_fleet.boxes[0]
    name = f"[127.0.0.1]:{box.port}"
    damaged = tmp_path / "known_hosts"
    key = box.known_hosts_line.split()[-1]
    damaged.write_text(f"other.example ssh-ed25519 {key}\n{name} {key}\n")  # line 2: no type
    t = _transport(loopback_fleet, box, known_hosts=damaged)
    with pytest.raises(HostKeyError) as err:
        await t.connect()
    assert f"no usable line for {name}: {damaged}:2 names it but cannot be read" in (
        err.value.message
    ), err.value.message
    assert not t.connected


async def test_changed_host_key_is_refused_showing_old_and_new(loopback_fleet, tmp_path):
    box = loopback_fleet.boxes[0]
    other = asyncssh.generate_private_key("ssh-ed25519")
    stale = tmp_path / "known_hosts"
    stale.write_text(f"[127.0.0.1]:{box.port} {other.export_public_key().decode()}")
    t = _transport(loopback_fleet, box, known_hosts=stale)
    with pytest.raises(HostKeyError) as err:
        await t.connect()
    old = other.get_fingerprint("sha256") if hasattr(other, "get_fingerprint") else None
    assert "HOST KEY CHANGED" in err.value.message
    assert any(old in k for k in err.value.known)
    assert err.value.presented.endswith(_fingerprint_of(box))
    assert f"ssh-keygen -R '[127.0.0.1]:{box.port}' -f {stale}" in err.value.fix


async def test_connection_refused_is_a_transport_error_naming_the_host(loopback_fleet):
    box = loopback_fleet.boxes[1]
    await box.stop()
    t = _transport(loopback_fleet, box)
    with pytest.raises(TransportError) as err:
        await t.connect()
    assert err.value.host == box.name and "refused" in str(err.value)


async def _next(queue: asyncio.Queue, pred, timeout: float) -> HostUpdate:
    async def find():
        while True:
            update = await queue.get()
            if pred(update):
                return update

    return await asyncio.wait_for(find(), timeout)


async def test_a_box_never_reached_says_so_and_raises_no_gen8(loopback_fleet):
    """A closed port from the start: 'never connected' with the reason, no 'the run may
    still be alive' and no connection.lost (GEN8 needs a sample that once came)."""
    from rgt_tui.content.host_text import ALIVE_NOTE, connection_lines

    fleet = load_fleet(loopback_fleet.hosts_file)
    host = fleet.hosts[0]
    await loopback_fleet.boxes[0].stop()
    monitor = HostMonitor(host, transport_for(host), interval=0.2, backoff=Backoff(0.1, 0.3))
    updates: asyncio.Queue[HostUpdate] = asyncio.Queue()
    task = asyncio.create_task(monitor.run(updates.put_nowait))
    try:
        again = await _next(updates, lambda u: u.connection.attempt >= 2, 60)
        assert again.connection.status == "unreached"
        assert "refused" in (again.connection.error or "")
        assert not any(a.id == "connection.lost" for a in again.alerts), again.alerts
        text = "\n".join(c.plain for c in connection_lines(again.connection, None, 0.0))
        assert "never connected" in text and ALIVE_NOTE not in text, text
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await monitor.transport.close()


async def test_monitor_recovers_after_server_restart_and_reports_the_gap(loopback_fleet):
    fleet = load_fleet(loopback_fleet.hosts_file)
    host = fleet.hosts[0]
    box = loopback_fleet.boxes[0]
    backoff = Backoff(base=0.2, cap=1.0)
    monitor = HostMonitor(host, transport_for(host), interval=0.2, backoff=backoff)
    updates: asyncio.Queue[HostUpdate] = asyncio.Queue()
    task = asyncio.create_task(monitor.run(updates.put_nowait))
    try:
        first = await _next(updates, lambda u: u.snapshot is not None, 60)
        assert first.connection.status == "connected" and first.snapshot.disks
        await box.stop()
        down = await _next(updates, lambda u: u.connection.status == "reconnecting", 60)
        assert any(a.id == "connection.lost" and a.gotcha == "GEN8" for a in down.alerts)
        # while the box is down the monitor retries with growing, capped delays
        retry = await _next(updates, lambda u: u.connection.attempt >= 2, 60)
        assert retry.connection.next_try_at - monitor.clock() <= backoff.cap + 0.1
        await asyncio.sleep(0.5)
        await box.start()
        back = await _next(
            updates,
            lambda u: u.snapshot is not None and u.connection.gap_s is not None,
            backoff.cap + 60,
        )
        assert back.connection.status == "connected"
        assert back.connection.gap_s >= 0.5
        assert back.snapshot.boot_id == first.snapshot.boot_id  # same boot: not a reboot
        assert not any(a.id == "connection.lost" for a in back.alerts)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await monitor.transport.close()


async def test_hosts_do_not_block_each_other(loopback_fleet):
    """A dead host's connect attempts never delay a live host's samples."""
    fleet = load_fleet(loopback_fleet.hosts_file)
    await loopback_fleet.boxes[0].stop()
    seen: dict[str, int] = {}
    monitors = [
        HostMonitor(h, transport_for(h), interval=0.2, backoff=Backoff(0.5, 2.0))
        for h in fleet.hosts
    ]

    def emit(u: HostUpdate) -> None:
        if u.snapshot is not None:
            seen[u.host] = seen.get(u.host, 0) + 1

    tasks = [asyncio.create_task(m.run(emit)) for m in monitors]
    try:
        await wait_for(
            lambda: all(seen.get(h.name, 0) >= 3 for h in fleet.hosts[1:]),
            30,  # 0.6 s of samples on a quiet machine: a cap a busy one meets
            "three samples of each live host",
            show=lambda: str(seen),
        )
        assert fleet.hosts[0].name not in seen
        # Never reached: said so (not "reconnecting": nothing was ever connected).
        assert monitors[0].connection.status == "unreached"
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for m in monitors:
            await m.transport.close()


# --- FileReader.blocks: many reads in flight, every piece checked -------------------------


async def _blocks_read_the_file(t, path: Path, data: bytes, small: bool) -> None:
    """What blocks() promises, over any transport: the file's bytes, whole or from an
    offset, fewer only at its end, nothing past it; read() still answers alongside."""
    size = len(data)
    opts = {"block_size": 64 * 1024, "max_requests": 8} if small else {}
    reader = await t.open_reader(str(path), **opts)
    try:
        pieces = [p async for p in reader.blocks(0, size)]
        assert _assembled(pieces, 0) == data
        if small:  # many pieces, none larger than asked
            assert len(pieces) >= size // (64 * 1024) and max(len(d) for _, d in pieces) <= 65536
        resume = 3 * 2**20 + 5  # the part already on disk
        assert (
            _assembled([p async for p in reader.blocks(resume, size - resume)], resume)
            == (data[resume:])
        )
        middle = [p async for p in reader.blocks(1000, 70_000)]
        assert _assembled(middle, 1000) == data[1000:71_000]
        # The file ends first (it shrank since the manifest): fewer bytes, no error.
        assert (
            _assembled([p async for p in reader.blocks(size - 10, 4096)], size - 10) == (data[-10:])
        )
        assert [p async for p in reader.blocks(size + 10, 100)] == []
        assert [p async for p in reader.blocks(5, 0)] == []
        with pytest.raises(ValueError):
            await anext(reader.blocks(-1, 10))
        # Stopped early: the handle stays usable.
        stream = reader.blocks(0, size)
        await anext(stream)
        await stream.aclose()
        assert await reader.read(size - 4, 100) == data[-4:]
    finally:
        await reader.close()
    with pytest.raises(FileNotFoundError):
        await t.open_reader(str(path.parent / "nope.bin"))


def _assembled(pieces: list[tuple[int, bytes]], offset: int) -> bytes:
    """The pieces laid out from ``offset``; they must tile it without gap or overlap."""
    out = bytearray()
    for start, data in sorted(pieces):
        assert start == offset + len(out), "a gap or an overlap"
        out += data
    return bytes(out)


def _file(path: Path) -> bytes:
    data = os.urandom(5 * 2**20 + 12_345)
    path.write_bytes(data)
    return data


async def test_blocks_over_openssh_sftp_server(openssh_server):
    """OpenSSH's own sftp-server, with asyncssh's read_parallel and with its defaults."""
    from rgt_tui.services.fleet.file import load_fleet

    t = transport_for(load_fleet(openssh_server.hosts_file).host("real1"))
    path = openssh_server.workdir / "ckpt.bin"
    data = _file(path)
    await t.connect()
    try:
        await _blocks_read_the_file(t, path, data, small=True)
        await _blocks_read_the_file(t, path, data, small=False)
        with pytest.raises(ValueError):
            await t.open_reader(str(path), block_size=0)
    finally:
        await t.close()


async def test_a_tilde_path_is_the_shells_home_not_sftps_start(openssh_server):
    """h522 #4: this sshd sets the session's HOME (SetEnv) apart from the account's home
    in the password file, where SFTP starts; the queue runner writes under the shell's
    $HOME, so `logs` read "~/.rgt/queue/queue.log" in the wrong folder and said the queue
    was never launched. A ``~`` path is now the shell's $HOME, asked once."""
    from rgt_tui.services.fleet.file import load_fleet

    log = openssh_server.workdir / ".rgt" / "queue" / "queue.log"
    log.parent.mkdir(parents=True)
    log.write_bytes(b"queue launched\n")
    import pwd

    # The case itself: SFTP starts in the password file's home, elsewhere.
    assert str(openssh_server.workdir) != pwd.getpwuid(os.getuid()).pw_dir
    t = transport_for(load_fleet(openssh_server.hosts_file).host("real1"))
    await t.connect()
    try:
        found = await t.stat("~/.rgt/queue/queue.log")
        assert found is not None and found.size == len(b"queue launched\n")
        assert await t.read_range("~/.rgt/queue/queue.log", 0, 5) == b"queue"
        assert await t.stat("/no/such/file") is None  # absolute paths as they were
    finally:
        await t.close()


async def test_blocks_over_asyncssh_sftp_server(loopback_fleet):
    box = loopback_fleet.boxes[0]
    t = _transport(loopback_fleet, box)
    path = box.root / "ckpt.bin"
    data = _file(path)
    await t.connect()
    try:
        await _blocks_read_the_file(t, path, data, small=True)
    finally:
        await t.close()


async def test_blocks_on_this_machine(tmp_path):
    path = tmp_path / "ckpt.bin"
    await _blocks_read_the_file(LocalTransport("here"), path, _file(path), small=True)


async def _pieces(*pieces: tuple[int, bytes], closed: list[bool] | None = None):
    try:
        for piece in pieces:
            yield piece
    finally:
        if closed is not None:
            closed.append(True)


async def _checked(*pieces, offset=100, length=10, more_after=None):
    return [
        p
        async for p in checked_blocks(
            _pieces(*pieces), offset, length, host="box1", path="ckpt.pt", more_after=more_after
        )
    ]


async def test_checked_blocks_passes_a_good_answer_in_any_order():
    good = [(105, b"fghij"), (100, b"ab"), (102, b"cde")]
    assert await _checked(*good) == good
    assert await _checked((100, b""), (100, b"abcdefghij")) == [(100, b"abcdefghij")]
    assert await _checked(offset=100, length=0) == []


@pytest.mark.parametrize(
    "pieces, why",
    [
        ([(99, b"ab")], "outside 100-110"),  # starts before the range
        ([(108, b"abc")], "outside 100-110"),  # runs past its end
        ([(100, b"a" * 11)], "outside 100-110"),  # longer than asked
        ([(200, b"a")], "outside 100-110"),
        ([(100, b"abcd"), (102, b"xy")], "overlap"),  # inside one already given
        ([(104, b"ab"), (100, b"abcde")], "overlap"),  # runs into a later one
        ([(100, b"ab"), (100, b"ab")], "overlap"),  # the same piece twice
        ([(100, b"ab"), (105, b"fghij")], "nothing for the bytes at 102"),  # a gap, short
        ([(104, b"efg")], "nothing for the bytes at 100"),
    ],
)
async def test_checked_blocks_refuses_a_hostile_answer_by_name(pieces, why):
    closed: list[bool] = []
    stream = checked_blocks(_pieces(*pieces, closed=closed), 100, 10, host="box1", path="ckpt.pt")
    given = 0
    with pytest.raises(TransportError, match=f"box1: ckpt.pt: .*{why}"):
        async for _, data in stream:
            given += len(data)
    assert given <= 10 and closed == [True]  # never more than asked; the reads stopped


async def test_checked_blocks_short_only_at_end_of_file():
    asked: list[int] = []

    async def ends_there(end: int) -> bool:
        asked.append(end)
        return False

    async def goes_on(end: int) -> bool:
        return True

    assert await _checked((100, b"abcd"), more_after=ends_there) == [(100, b"abcd")]
    assert await _checked(more_after=ends_there) == [] and asked == [104, 100]
    with pytest.raises(TransportError, match="4 of 10 bytes, though the file goes on"):
        await _checked((100, b"abcd"), more_after=goes_on)
    assert await _checked((100, b"abcdefghij"), more_after=goes_on) == [(100, b"abcdefghij")]


async def test_readers_on_their_own_lanes_get_sessions_of_their_own(loopback_fleet, tmp_path):
    """A pull spreads large files over lanes: each lane is an SFTP session of its own,
    with its own window (see the next test)."""
    box = loopback_fleet.boxes[0]
    data = os.urandom(3 << 20)
    (box.root / "f.bin").write_bytes(data)
    t = _transport(loopback_fleet, box)
    await t.connect()
    try:
        readers = [await t.open_reader("f.bin", lane=lane) for lane in (1, 2)]
        got = await asyncio.gather(*(_collect(r.blocks(0, len(data))) for r in readers))
        assert [b"".join(d for _, d in sorted(g)) for g in got] == [data, data]
        assert await t.sftp(1) is not await t.sftp(2)
        for r in readers:
            await r.close()
    finally:
        await t.close()


async def test_every_session_offers_the_box_an_8_mib_window(tmp_path):
    """1 Gbit/s across a 200 ms round trip is 25 MB in flight. A channel's window stays at
    8 MiB (more stalls OpenSSH 9.2's sshd): what sshd is offered, as its log says, for a
    command and for an SFTP lane alike."""
    if not SSHD.exists():
        pytest.fail(f"{SSHD} is missing: {INSTALL_HINT}")
    server = OpenSshServer(tmp_path / "openssh", log_level="DEBUG")
    server.start()
    try:
        t = transport_for(load_fleet(server.hosts_file).host("real1"))
        await t.connect()
        try:
            assert (await t.run("true")).exit_status == 0
            await t.sftp(1)
        finally:
            await t.close()
    finally:
        server.stop()
    windows = re.findall(r"ctype session rchan \d+ win (\d+)", server.log_file.read_text())
    assert len(windows) >= 2 and set(windows) == {str(8 << 20)}, windows


async def _collect(blocks):  # type: ignore[no-untyped-def]
    return [piece async for piece in blocks]
