"""Large files streamed by the box's sender (``send_one``): framing, errors, the SFTP
fallback, and flow control of the byte stream."""

from __future__ import annotations

import ast
import asyncio
import errno
import json
import os
import subprocess

import pytest
from pull_support import MIB, CountedSenders, box_results, fast, host_of, random_file, sha

from rgt_tui.agent.sendfiles import START
from rgt_tui.services.pull import pull_host
from rgt_tui.services.remote_file import RemoteFile, _OneFile
from rgt_tui.services.sender_pool import SEND_COMMAND, request_line, sender_input
from rgt_tui.transport import ssh_stream, transport_for
from rgt_tui.transport.base import TransportError


def run_sender(request: dict) -> subprocess.CompletedProcess:
    """The real sender, as the box runs it (SEND_COMMAND reads its program from stdin)."""
    stdin = (sender_input() + request_line(request)).encode()
    return subprocess.run(["bash", "-c", SEND_COMMAND], input=stdin, capture_output=True)


def parse(output: bytes, cut: int | None = None) -> bytes:
    frames = _OneFile("box", "/f")
    pieces = [output] if cut is None else [output[:cut], output[cut:]]
    data = b"".join(frames.feed(p) for p in pieces)
    frames.finish()
    return data


def test_sender_streams_a_file_from_an_offset_framed_and_parsed_at_any_cut(tmp_path):
    blob = os.urandom(3 * MIB + 17)
    path = tmp_path / "ckpt ü.pt"
    path.write_bytes(blob)
    done = run_sender({"path": str(path), "offset": 1000, "size": len(blob)})
    assert done.returncode == 0, done.stderr
    out = b"login noise\n" + done.stdout  # a .bashrc that prints
    assert out.endswith(b"DONE\n")
    assert parse(out) == blob[1000:]
    header_end = out.index(START) + len(START) + len(f"0 {len(blob) - 1000}\n")
    for cut in range(header_end - 12, header_end + 3):  # inside the start line and header
        assert parse(out, cut) == blob[1000:]


def test_sender_sends_no_more_than_the_manifest_size_and_less_when_the_file_shrank(tmp_path):
    path = tmp_path / "grew.bin"
    path.write_bytes(b"x" * 5000)
    grown = run_sender({"path": str(path), "offset": 0, "size": 3000})
    assert parse(grown.stdout) == b"x" * 3000
    shrunk = run_sender({"path": str(path), "offset": 100, "size": 9000})
    assert parse(shrunk.stdout) == b"x" * 4900  # the pull sees the short file and says so


@pytest.mark.parametrize(
    ("code", "kind"),
    [(errno.ENOENT, FileNotFoundError), (errno.EACCES, PermissionError), (errno.EIO, OSError)],
)
def test_error_lines_become_the_exceptions_sftp_gives(code, kind):
    line = START + f"0 E {code} {json.dumps('reason')}\n".encode()
    with pytest.raises(kind) as caught:
        parse(line)
    assert caught.value.errno == code


def test_missing_file_is_reported_by_the_real_sender(tmp_path):
    done = run_sender({"path": str(tmp_path / "gone.pt"), "offset": 0, "size": 10})
    with pytest.raises(FileNotFoundError):
        parse(done.stdout)


@pytest.mark.parametrize(
    "output",
    [b"", b"no start line at all\n", START + b"0 twelve\n", START + b"garbage header\n"],
    ids=["empty", "no-start", "bad-size", "bad-header"],
)
def test_output_that_is_not_the_format_is_a_transport_error(output):
    with pytest.raises(TransportError):
        parse(output)


def test_endless_noise_without_a_start_line_stops_early():
    frames = _OneFile("box", "/f")
    with pytest.raises(TransportError, match="no start line"):
        for _ in range(100):
            frames.feed(b"x" * 4096)


async def test_a_broken_sender_hands_the_rest_of_the_file_to_sftp(make_loopback_fleet):
    fleet = await make_loopback_fleet(1)
    blob_path = box_results(fleet) / "model.pt"
    random_file(blob_path, 5 * MIB)
    blob = blob_path.read_bytes()
    transport = transport_for(host_of(fleet))
    await transport.connect()

    def broken(request: dict, complete):
        async def stream():
            # Half the file, correctly framed, then the box's sender dies.
            async for chunk in transport.stream_bytes(
                SEND_COMMAND,
                input=sender_input() + request_line({**request, "size": 2 * MIB}),
                window=MIB,
            ):
                if chunk.endswith(b"DONE\n"):
                    chunk = chunk[:-5]
                yield chunk
            raise TransportError("box1", "remote command exited with status 1: killed")

        return stream()

    try:
        source = await RemoteFile.open(transport, str(blob_path), 256 << 10, 4, sender=broken)
        got = b"".join([c async for c in source.blocks(1000, len(blob) - 1000)])
        await source.close()
    finally:
        await transport.close()
    assert got == blob[1000:]


async def test_a_slow_reader_stops_the_channel_instead_of_queueing_everything(
    make_loopback_fleet, monkeypatch
):
    fleet = await make_loopback_fleet(1)
    monkeypatch.setattr(ssh_stream, "HIGH_WATER", 2 * MIB)
    monkeypatch.setattr(ssh_stream, "LOW_WATER", MIB)
    most = []
    original = ssh_stream.ByteStreamSession.data_received

    def data_received(self, data, datatype):  # type: ignore[no-untyped-def]
        original(self, data, datatype)
        most.append(self.queued)

    monkeypatch.setattr(ssh_stream.ByteStreamSession, "data_received", data_received)
    transport = transport_for(host_of(fleet))
    await transport.connect()
    total = 0
    try:
        stream = transport.stream_bytes("head -c 32000000 /dev/zero", window=MIB)
        async for chunk in stream:
            if total == 0:
                await asyncio.sleep(0.5)  # the box could send everything meanwhile
            total += len(chunk)
    finally:
        await transport.close()
    assert total == 32_000_000
    # Paused at 2 MiB queued: at most what was already in flight (the 1 MiB window) more.
    assert max(most) <= 2 * MIB + MIB + 64 * 1024


def test_sender_script_stays_python36_syntax():
    """The box may run an old python3: the script must parse as Python 3.6."""
    from rgt_tui.services.sender_pool import sender_source

    ast.parse(sender_source(), feature_version=(3, 6))


async def test_the_small_file_senders_carry_the_large_files_no_new_process_starts(
    make_loopback_fleet, tmp_path
):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    expected = {
        f"evals/s{i:02d}.json": random_file(res / f"evals/s{i:02d}.json", 900 + i)
        for i in range(40)
    }
    expected |= {f"ckpt/e{i}.pt": random_file(res / f"ckpt/e{i}.pt", 3 * MIB + i) for i in range(2)}
    host = host_of(fleet)
    transport = transport_for(host)
    counted = CountedSenders(transport)
    try:
        result = await pull_host(
            host, tmp_path, transport, options=fast(batch_streams=2, concurrency=2)
        )
    finally:
        await transport.close()
    assert result.ok and len(result.pulled) == 42
    for rel, digest in expected.items():
        assert sha(tmp_path / "box1" / rel) == digest
    # Two senders, started while the box hashed: both batches, then both large files.
    # (The loopback box forwards sockets as sshd does: both reach the scan's socket.)
    assert counted.sockets == 2 and counted.commands.count(SEND_COMMAND) == 0


def test_one_file_reply_is_whole_only_after_its_done_line():
    frames = _OneFile("box", "/f")
    reply = START + b"0 5\nhello" + b"DONE\n"
    for cut in range(len(reply)):  # however the reply is cut, whole only at its end
        frames = _OneFile("box", "/f")
        assert frames.feed(reply[:cut]) + frames.feed(reply[cut:]) == b"hello"
        assert frames.complete()
        frames = _OneFile("box", "/f")
        frames.feed(reply[:cut])
        assert not frames.complete()
