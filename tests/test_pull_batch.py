"""Small-file batches: the sender's framed output, parsed from chunks cut anywhere, and a
batch whose output breaks off falling back to SFTP without losing a file."""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
import subprocess

import pytest
from pull_support import BoxBytes, box_results, fast, host_of, sha

from rgt_tui.services import pull_batch, sender_pool
from rgt_tui.services.pull import pull_host
from rgt_tui.services.pull_batch import FrameParser
from rgt_tui.services.remote_file import _OneFile
from rgt_tui.services.sender_pool import (
    BOOT,
    SenderPool,
    request_line,
    sender_input,
    sender_source,
)
from rgt_tui.transport import transport_for


def sender_output(request: list[tuple[str, int]]) -> bytes:
    """Run the real sender the way the pull does (bootstrap, source then request on stdin),
    C locale."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C", "LC_ALL": "C"}
    proc = subprocess.run(
        ["python3", "-S", "-u", "-c", BOOT], input=(sender_input() + request_line(request)).encode(),
        capture_output=True, env=env, check=True,
    )  # fmt: skip
    return proc.stdout


def parse(output: bytes, count: int, cuts: list[int]) -> list[tuple[int, bytes | None]]:
    parser = FrameParser(count)
    frames = []
    for start, end in zip([0, *cuts], [*cuts, len(output)], strict=True):
        frames += parser.feed(output[start:end])
    return frames


@pytest.fixture
def files(tmp_path) -> tuple[list[tuple[str, int]], list[tuple[int, bytes | None]]]:
    """A request with content that looks like frame headers, an empty file, a non-ASCII
    name and a file missing on the box; and the frames it must come back as."""
    contents = [b"0 12\n1 E oops\nDONE\n", b"", os.urandom(70_000), b"\n" * 5000]
    request = []
    for i, data in enumerate(contents):
        path = tmp_path / f"fïle {i}.bin"
        path.write_bytes(data)
        request.append((str(path), len(data)))
    request.insert(2, (str(tmp_path / "gone.bin"), 10))
    expected = [(0, contents[0]), (1, b""), (2, None), (3, contents[2]), (4, contents[3])]
    return request, expected


def test_frames_come_back_whole_however_the_stream_is_cut(files):
    request, expected = files
    output = sender_output(request)
    assert parse(output, len(request), []) == expected
    for size in (1, 2, 3, 17, 4096, 65_536):
        assert parse(output, len(request), list(range(size, len(output), size))) == expected
    rng = random.Random(7)
    for _ in range(20):
        cuts = sorted(rng.sample(range(1, len(output)), 30))
        assert parse(output, len(request), cuts) == expected


def test_what_a_login_script_prints_before_the_sender_is_skipped(files):
    request, expected = files
    output = b"Welcome to your box!\n0 3\nabc\n" + sender_output(request)
    assert parse(output, len(request), [5, 40]) == expected


@pytest.mark.parametrize(
    ("tail", "also"),
    [
        (b"0 3\nabcgarbage\n", [(0, b"abc")]),
        (b"9 3\nabc", []),
        (b"0 E\n", []),
        (b"x" * 5000, []),
        (b"1" * 5000 + b" 3\nabc", []),
    ],
    ids=[
        "noise after a file",
        "index out of range",
        "error without reason",
        "endless header",
        "huge index",
    ],
)
def test_output_that_breaks_the_format_is_refused(tail, also):
    parser = FrameParser(2)
    frames = parser.feed(pull_batch.SENDFILES_START + b"1 2\nok" + tail)
    assert frames == [(1, b"ok"), *also]  # what came before the break is kept
    assert "small-file sender" in parser.error
    assert parser.feed(b"0 1\nx") == []  # nothing after it


async def test_a_batch_that_breaks_off_falls_back_to_sftp_and_loses_nothing(
    make_loopback_fleet, tmp_path, monkeypatch
):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    (res / "evals").mkdir(parents=True)
    digests = {}
    for i in range(12):
        data = os.urandom(1000 + i)
        (res / "evals" / f"s{i:02d}.bin").write_bytes(data)
        digests[f"evals/s{i:02d}.bin"] = hashlib.sha256(data).hexdigest()

    def broken_program() -> str:
        # The real sender for the first two files, then output that is not a frame.
        return (
            f"{sender_source()}\nrequest = json.loads(sys.stdin.buffer.readline())\n"
            "main(request[:2])\nsys.stdout.write('oops\\n')\n"
        )

    monkeypatch.setattr(sender_pool, "sender_program", broken_program)
    host = host_of(fleet)
    transport = transport_for(host)
    try:
        with BoxBytes().counting() as sftp:
            result = await pull_host(host, tmp_path, transport, options=fast(batch_streams=1))
    finally:
        await transport.close()
    assert result.ok and len(result.pulled) == 12
    for rel, digest in digests.items():
        assert sha(tmp_path / "box1" / rel) == digest
    # Two came in the batch; the ten after the break came over SFTP, one read each.
    assert sftp.total == sum(1000 + i for i in range(2, 12))


def _senders() -> set[int]:
    """PIDs of sender processes (the bootstrap on their command line) on this machine."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    cmdline = f.read()
            except OSError:
                continue
            if BOOT.encode() in cmdline and b"-c" in cmdline:
                found.add(int(entry))
    return found


async def _until(check, tries: int = 250) -> None:
    for _ in range(tries):
        if check():
            return
        await asyncio.sleep(0.02)


async def test_pooled_senders_start_early_and_answer_request_after_request(make_loopback_fleet):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    (res / "a").mkdir(parents=True)
    files = {f"a/f{i}.bin": os.urandom(500 + i) for i in range(5)}
    for rel, data in files.items():
        (res / rel).write_bytes(data)
    big = os.urandom(3 << 20)
    (res / "big.pt").write_bytes(big)
    transport = transport_for(host_of(fleet))
    await transport.connect()
    pool = SenderPool(transport, 1 << 20, lambda: 0)
    try:
        before = _senders()  # an earlier test's sender may still be ending: not counted
        pool.warm(2)
        await _until(lambda: len(_senders() - before) == 2)  # started before any request
        ours = _senders() - before
        assert len(ours) == 2
        request = [(str(res / rel), len(data)) for rel, data in files.items()]
        for _ in range(3):  # the same processes answer each time: none is started anew
            parser = FrameParser(len(request))
            frames = []
            async for chunk in pool.stream(request, parser.complete):
                frames += parser.feed(chunk)
            assert [data for _, data in frames] == list(files.values()) and not parser.error
            one = RemoteFileReply(str(res / "big.pt"), 100, len(big))
            async for chunk in pool.stream(one.request, one.frames.complete):
                one.feed(chunk)
            assert one.data == big[100:]
        assert pool.started == 2 and _senders() - before == ours
        # A reply cut off before its end: that sender is closed, never handed out again.
        reply = pool.stream(one.request, lambda: False)
        await anext(reply)
        await reply.aclose()
        await _until(lambda: len(ours & _senders()) == 1)
        assert len(ours & _senders()) == 1
        await pool.close()  # the idle one was told there is nothing more: it ends quietly
        await _until(lambda: not ours & _senders())
        assert not ours & _senders()
    finally:
        await pool.close()
        await transport.close()


class RemoteFileReply:
    """One large file's request and its parsed reply (``send_one``), as RemoteFile reads it."""

    def __init__(self, path: str, offset: int, size: int) -> None:
        self.request = {"path": path, "offset": offset, "size": size}
        self.frames = _OneFile("box1", path)
        self.data = b""

    def feed(self, chunk: bytes) -> None:
        self.data += self.frames.feed(chunk)
