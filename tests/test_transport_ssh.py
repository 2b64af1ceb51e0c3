"""SSH transport over real loopback asyncssh servers: commands, host keys, reconnect."""

from __future__ import annotations

import asyncio
import getpass
import os
import shlex
import subprocess

import asyncssh
import pytest

from rgt_tui.domain.config import load_fleet
from rgt_tui.services.telemetry import HostMonitor, HostUpdate
from rgt_tui.transport import HostKeyError, TransportError, transport_for
from rgt_tui.transport.backoff import Backoff
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
    # Started before all its input is known: it runs at once, and gets the rest later.
    rest = asyncio.get_running_loop().create_future()
    started = blob.parent / "started"
    stream = t.stream_bytes(f"touch {shlex.quote(str(started))}; cat", input="head\n", later=rest)
    first = asyncio.ensure_future(anext(stream))
    for _ in range(250):
        if started.exists():
            break
        await asyncio.sleep(0.02)
    assert started.exists() and not rest.done()
    rest.set_result("tail\n")
    out = [await first] + [c async for c in stream]
    assert b"".join(out) == b"head\ntail\n"
    # Texts as they come: each is answered before the next is sent, then end of input.
    asks: asyncio.Queue[str | None] = asyncio.Queue()

    async def texts():
        while (text := await asks.get()) is not None:
            yield text

    stream = t.stream_bytes('while read -r line; do echo "got $line"; done', later=texts())
    for word in ("one", "two"):
        asks.put_nowait(f"{word}\n")
        assert await anext(stream) == f"got {word}\n".encode()
    asks.put_nowait(None)
    assert [c async for c in stream] == []  # the end of input ends the command


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


async def test_monitor_recovers_after_server_restart_and_reports_the_gap(loopback_fleet):
    fleet = load_fleet(loopback_fleet.hosts_file)
    host = fleet.hosts[0]
    box = loopback_fleet.boxes[0]
    backoff = Backoff(base=0.2, cap=1.0)
    monitor = HostMonitor(host, transport_for(host), interval=0.2, backoff=backoff)
    updates: asyncio.Queue[HostUpdate] = asyncio.Queue()
    task = asyncio.create_task(monitor.run(updates.put_nowait))
    try:
        first = await _next(updates, lambda u: u.snapshot is not None, 20)
        assert first.connection.status == "connected" and first.snapshot.disks
        await box.stop()
        down = await _next(updates, lambda u: u.connection.status == "reconnecting", 10)
        assert any(a.id == "connection.lost" and a.gotcha == "GEN8" for a in down.alerts)
        # while the box is down the monitor retries with growing, capped delays
        retry = await _next(updates, lambda u: u.connection.attempt >= 2, 10)
        assert retry.connection.next_try_at - monitor.clock() <= backoff.cap + 0.1
        await asyncio.sleep(0.5)
        await box.start()
        back = await _next(
            updates,
            lambda u: u.snapshot is not None and u.connection.gap_s is not None,
            backoff.cap + 15,
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
        for _ in range(100):
            await asyncio.sleep(0.1)
            if all(seen.get(h.name, 0) >= 3 for h in fleet.hosts[1:]):
                break
        assert all(seen.get(h.name, 0) >= 3 for h in fleet.hosts[1:]), seen
        assert fleet.hosts[0].name not in seen
        assert monitors[0].connection.status in ("connecting", "reconnecting")
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for m in monitors:
            await m.transport.close()
