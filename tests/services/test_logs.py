"""Log following: line splitting and crash marks, transport file access, the follower over
real loopback SSH boxes (drops, rotation, partial lines), and the `logs` command.

Kept whole: the splitter, the transport reads, the follower and the command share one log fixture and its helpers.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support.waiting import wait_for

from rgt_tui.cli import main as rgt_main
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.logscan import (
    CRITICAL,
    LineSplitter,
    LogChunk,
    classify_line,
    clean_line,
    scan_lines,
)
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.logs import (
    LogFollower,
    cell_log_path,
    queue_log_path,
    read_log,
    reconnect_with_backoff,
)
from rgt_tui.transport import Transport, transport_for
from rgt_tui.transport.backoff import Backoff
from rgt_tui.transport.local import LocalTransport
from rgt_tui.transport.ssh import SshTransport

FAST = Backoff(base=0.05, cap=0.2)

# -- domain: crash lines ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("Traceback (most recent call last):", "traceback"),
        (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
            "oom",
        ),
        ("RuntimeError: CUDA out of memory.", "oom"),
        ("Killed", "killed"),
        ("run_one.sh: line 12:  4242 Killed                  python train.py", "killed"),
        ("Segmentation fault (core dumped)", "segfault"),
        ("bash: line 1: 77 Aborted (core dumped) python x.py", "segfault"),
        ("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970", "nccl"),
        ("node1:42:42 [0] NCCL WARN Call to connect returned Connection refused", "nccl"),
        ("ValueError: could not convert string to float: 'x'", "exception"),
        ("RuntimeError: expected scalar type Float", "exception"),
        ("Exception in thread Thread-3 (loader):", "exception"),
        ("ERROR: could not find config cfgs/a.yaml", "error"),
        ("2024-05-01 10:00:00 [ERROR] dataloader worker 3 died", "error"),
    ],
)
def test_crash_lines_are_classified(line: str, kind: str) -> None:
    mark = classify_line(line)
    assert mark is not None and mark.kind == kind, (line, mark)


@pytest.mark.parametrize(
    "line",
    [
        "epoch 3 | loss 0.412 | val_error 0.083 | lr 1e-4",
        "Top-1 Error rate 12.5%",
        "saved checkpoint to results/a/best.pth",
        "killed 0 stale workers",  # lower case: a sentence, not the kernel's word
        "QUEUE DONE: 4 ok, 0 failed",
        "",
    ],
)
def test_ordinary_lines_are_not_flagged(line: str) -> None:
    assert classify_line(line) is None


def test_a_traceback_body_is_flagged_up_to_its_exception_line() -> None:
    lines = [
        "step 10 loss 0.3",
        "Traceback (most recent call last):",
        '  File "train.py", line 88, in <module>',
        "    main()",
        "           ^^^^",
        "KeyError: 'lr'",
        "cleaning up",
    ]
    marks = scan_lines(lines)
    assert marks[0] is None and marks[-1] is None
    assert [m.kind for m in marks[1:5]] == ["traceback"] * 4
    assert marks[5].kind == "exception"
    assert marks[1].severity == CRITICAL


# -- domain: line splitting -------------------------------------------------------------------


def test_partial_last_line_waits_for_its_newline() -> None:
    s = LineSplitter()
    assert s.feed(b"one\ntw") == ["one"]
    assert (s.committed, s.pending_bytes, s.partial) == (4, 2, "tw")
    assert s.feed(b"o") == []
    assert s.feed(b"\nthree\n") == ["two", "three"]
    assert (s.committed, s.pending_bytes) == (14, 0)


def test_utf8_split_across_chunks_and_invalid_bytes() -> None:
    s = LineSplitter()
    data = "température 3°C ✓\n".encode()
    out: list[str] = []
    for i in range(len(data)):  # one byte at a time splits every multi-byte character
        out += s.feed(data[i : i + 1])
    assert out == ["température 3°C ✓"]
    assert s.feed(b"bad \xff\xfe byte\n") == ["bad \ufffd\ufffd byte"]


def test_carriage_return_progress_keeps_the_last_segment() -> None:
    s = LineSplitter()
    assert s.feed(b" 10%|#  |\r 50%|## |\r") == []
    assert s.partial == " 50%|## |"
    assert s.feed(b"100%|###|\n") == ["100%|###|"]
    assert s.feed(b"windows line\r\n") == ["windows line"]  # CRLF is not a redraw
    assert clean_line(b"a\rb\r") == "b"
    # An hour of redraws without a newline keeps one segment, not the whole history: a
    # 64-byte line cap is never reached (kept whole, the history would be cut at the cap).
    bar = LineSplitter(max_line=64)
    for i in range(5000):
        assert bar.feed(f"\rstep {i}/5000".encode()) == []
    assert bar.partial == "step 4999/5000"
    assert bar.feed(b"\n") == ["step 4999/5000"]
    assert bar.committed == bar.fed


def test_an_endless_line_is_cut_at_the_cap_and_flush_ends_a_file() -> None:
    s = LineSplitter(max_line=10)
    assert s.feed(b"x" * 25) == []  # kept up to the cap, the rest counted, not kept
    assert s.partial == "x" * 10 + "… [line cut at 10 bytes: 15 more bytes dropped]"
    assert s.committed == 0  # a resume reads the unfinished line again
    assert s.feed(b"tail") == []
    assert s.flush() == ["x" * 10 + "… [line cut at 10 bytes: 19 more bytes dropped]"]
    assert s.committed == 29 and s.flush() == []


def test_every_line_is_cut_at_the_cap_however_it_arrives() -> None:
    """A long line that arrives whole in one read is cut like one that trickles in, and
    a character split by the cut is counted as dropped, never shown as U+FFFD."""
    s = LineSplitter(max_line=10)
    lines = s.feed(b"short\n" + b"y" * 40 + b"\nz\n" + "é".encode() * 8 + b"\nnext")
    assert lines == [
        "short",
        "y" * 10 + "… [line cut at 10 bytes: 30 more bytes dropped]",
        "z",
        "é" * 5 + "… [line cut at 10 bytes: 6 more bytes dropped]",
    ]
    assert s.committed == s.fed - 4 and s.partial == "next"
    # A redraw after the cut starts a fresh, short segment: nothing of it is dropped.
    assert s.feed(b"x" * 30 + b"\rdone\n") == ["done"]


def test_cell_names_cannot_leave_the_cells_directory() -> None:
    assert cell_log_path("lr3e-4_seed1") == "~/.rgt/queue/cells/lr3e-4_seed1.log"
    assert queue_log_path() == "~/.rgt/queue/queue.log"
    for bad in ("", "..", "a/b", "../../etc/passwd"):
        with pytest.raises(ValueError):
            cell_log_path(bad)


def _numbers(chunks: list[LogChunk]) -> list[int]:
    return [int(line.text.split()[1]) for c in chunks for line in c.lines]


def _append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def _write_lines(path: Path, numbers: range) -> None:
    _append(path, "".join(f"line {i}\n" for i in numbers).encode())


async def _poll_until(follower: LogFollower, want: int, timeout: float = 60) -> list[LogChunk]:
    """Poll until ``want`` lines arrived in total; every chunk polled, in order."""
    chunks: list[LogChunk] = []

    async def arrived() -> bool:
        chunks.extend(await follower.poll_once())
        return sum(len(c.lines) for c in chunks) >= want

    await wait_for(
        arrived, timeout, f"{want} lines", show=lambda: str(_numbers(chunks)), every=0.01
    )
    return chunks


# -- transports: file access --------------------------------------------------------------------


@pytest.fixture(params=["ssh", "local"])
async def box(request, loopback_fleet, tmp_path, monkeypatch) -> AsyncIterator[tuple]:
    """(transport, its HOME directory here) for a loopback SSH box and for this machine."""
    if request.param == "ssh":
        t: Transport = transport_for(load_fleet(loopback_fleet.hosts_file).hosts[0])
        home = loopback_fleet.boxes[0].root
    else:
        home = tmp_path / "home"
        home.mkdir()
        monkeypatch.setenv("HOME", str(home))
        t = LocalTransport("local")
    await t.connect()
    try:
        yield t, home
    finally:
        await t.close()
    assert not loopback_fleet.errors


async def test_stat_read_range_and_a_reader_that_survives_rename(box) -> None:
    t, home = box
    log = home / "logs" / "run.log"
    log.parent.mkdir()
    log.write_bytes(b"0123456789\n")
    st = await t.stat("~/logs/run.log")
    assert st.size == 11 and abs(st.mtime - log.stat().st_mtime) < 1.01
    assert st.inode == (log.stat().st_ino if isinstance(t, LocalTransport) else None)
    assert await t.stat("logs/run.log") == st  # relative = HOME, as over SFTP
    assert await t.stat(str(log)) == st
    assert await t.stat("~/logs/nope.log") is None
    assert await t.read_range("~/logs/run.log", 3, 4) == b"3456"
    assert await t.read_range("~/logs/run.log", 8, 100) == b"89\n"
    assert await t.read_range("~/logs/run.log", 50, 10) == b""
    with pytest.raises(FileNotFoundError):
        await t.read_range("~/logs/nope.log", 0, 1)
    with pytest.raises(FileNotFoundError):
        await t.open_reader("~/logs/nope.log")

    reader = await t.open_reader("~/logs/run.log")
    try:
        os.rename(log, log.with_suffix(".log.1"))
        log.write_bytes(b"new\n")
        _append(log.with_suffix(".log.1"), b"after rename\n")
        # The handle still reads the renamed file, including what was added after.
        assert await reader.read(0, 100) == b"0123456789\nafter rename\n"
        assert (await reader.fstat()).size == 24
        assert (await t.stat("~/logs/run.log")).size == 4
    finally:
        await reader.close()
        await reader.close()  # twice is fine


async def test_sftp_client_is_shared_and_renewed_after_a_reconnect(loopback_fleet) -> None:
    """One client per lane, shared by its callers; every lane renewed after a reconnect."""
    host = load_fleet(loopback_fleet.hosts_file).hosts[1]
    box = loopback_fleet.boxes[1]
    (box.root / "f").write_bytes(b"abc")
    t = transport_for(host)
    assert isinstance(t, SshTransport)
    with pytest.raises(TransportError, match="not connected"):
        await t.stat("f")
    await t.connect()
    try:
        first, lanes = await asyncio.gather(t.sftp(), asyncio.gather(t.sftp(1), t.sftp(1)))
        assert await t.sftp() is first and await t.sftp(0) is first
        assert lanes[0] is lanes[1] and lanes[0] is not first  # started once, under a lock
        assert await lanes[0].getsize("f") == 3  # a working session of its own
        await box.stop()
        with pytest.raises(TransportError):
            await t.read_range("f", 0, 3)
        await box.start()
        await t.connect()
        assert await t.sftp() is not first and await t.sftp(1) is not lanes[0]
        assert await t.read_range("f", 0, 3) == b"abc"
        assert await (await t.sftp(1)).getsize("f") == 3
    finally:
        await t.close()


# -- the follower --------------------------------------------------------------------------------


async def test_partial_line_waits_and_utf8_is_split_across_reads(box) -> None:
    t, home = box
    log = home / "cell.log"
    f = LogFollower(t, "~/cell.log", chunk_size=3)  # 3-byte reads split every character
    try:
        (waiting,) = await f.poll_once()
        assert waiting.status == "waiting" and not waiting.lines
        log.write_bytes("epoch 1 — température ✓\n".encode() + b"epoch 2 caf\xc3")
        (chunk,) = await f.poll_once()
        assert [ln.text for ln in chunk.lines] == ["epoch 1 — température ✓"]
        assert chunk.partial.startswith("epoch 2 caf")  # shown, not delivered
        assert chunk.offset == len("epoch 1 — température ✓\n".encode())
        assert await f.poll_once() == []  # nothing new: nothing delivered
        _append(log, b"\xa9 done\n")
        (chunk,) = await f.poll_once()
        assert [ln.text for ln in chunk.lines] == ["epoch 2 café done"] and chunk.partial == ""
        assert chunk.offset == log.stat().st_size
    finally:
        await f.close()


async def test_follow_across_a_server_restart_delivers_every_line_once(loopback_fleet) -> None:
    host = load_fleet(loopback_fleet.hosts_file).hosts[0]
    box = loopback_fleet.boxes[0]
    log = box.root / "queue.log"
    log.write_bytes(b"")
    t = transport_for(host)
    await t.connect()
    total, written = 240, [0]

    async def writer() -> None:
        for i in range(total):
            if i % 5 == 2:  # half a line now, the rest a moment later: across polls
                _append(log, f"line {i}".encode())
                await asyncio.sleep(0.004)
                _append(log, b"\n")
            else:
                _append(log, f"line {i}\n".encode())
            written[0] = i + 1
            await asyncio.sleep(0.004)

    follower = LogFollower(t, "queue.log", poll=0.02, reconnect=reconnect_with_backoff(t, FAST))
    chunks: list[LogChunk] = []

    async def follow() -> None:
        async for chunk in follower:
            chunks.append(chunk)

    tasks = [asyncio.create_task(writer()), asyncio.create_task(follow())]
    try:
        await wait_for(lambda: len(_numbers(chunks)) >= 40, 60, "40 lines", every=0.01)
        await box.stop()
        at_stop = written[0]
        # The run keeps writing while the box is unreachable (waited for, not timed: a
        # busy machine runs the writer slower).
        await wait_for(lambda: written[0] > at_stop + 20, 60, "20 lines written while down")
        await box.start()
        await wait_for(lambda: len(_numbers(chunks)) >= total, 60, "every line", every=0.01)
        assert _numbers(chunks) == list(range(total))
        assert any(c.status == "reconnecting" for c in chunks)
        assert not any(c.gap or c.rotated for c in chunks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await follower.close()
        await t.close()


async def test_caller_restarts_from_the_last_position_after_a_drop(loopback_fleet) -> None:
    host = load_fleet(loopback_fleet.hosts_file).hosts[0]
    box = loopback_fleet.boxes[0]
    log = box.root / "cells" / "a.log"
    log.parent.mkdir()
    _write_lines(log, range(10))
    _append(log, b"line 10")  # unfinished when the connection drops
    t = transport_for(host)
    await t.connect()
    first = LogFollower(t, "~/cells/a.log")  # no reconnect: the error reaches the caller
    try:
        chunks = await first.poll_once()
        assert _numbers(chunks) == list(range(10)) and chunks[-1].partial == "line 10"
        await box.stop()
        _append(log, b"\n")
        _write_lines(log, range(11, 15))
        with pytest.raises(TransportError):
            await first.poll_once()
        assert first.position.offset == len(b"".join(f"line {i}\n".encode() for i in range(10)))
    finally:
        await first.close()
    await box.start()
    await t.connect()
    second = LogFollower(t, "~/cells/a.log", resume=first.position)
    try:
        rest = await _poll_until(second, 5)
        assert _numbers(rest) == list(range(10, 15))
        assert not any(c.gap or c.rotated for c in rest)
    finally:
        await second.close()
        await t.close()


class _DropOnce:
    """A transport whose next call to ``fail`` raises TransportError, as a drop would."""

    def __init__(self, inner: Transport) -> None:
        self._inner = inner
        self.fail: str | None = None

    def __getattr__(self, name: str):
        attr = getattr(self._inner, name)
        if name != self.fail:
            return attr

        async def dropped(*args, **kwargs):
            self.fail = None
            raise TransportError("box", "connection lost")

        return dropped


@pytest.mark.parametrize("where", ["stat", "open_reader"])
async def test_a_drop_mid_poll_returns_what_was_read_and_loses_nothing(box, where) -> None:
    t, home = box
    log = home / "queue.log"
    _write_lines(log, range(3))
    flaky = _DropOnce(t)
    f = LogFollower(flaky, "~/queue.log")
    try:
        assert _numbers(await f.poll_once()) == [0, 1, 2]
        _write_lines(log, range(3, 6))
        if where == "open_reader":  # the drop hits the switch to the rotated-in file
            os.rename(log, home / "queue.log.1")
            _write_lines(log, range(6, 8))
        flaky.fail = where
        assert _numbers(await f.poll_once()) == [3, 4, 5]  # read before the drop: delivered
        with pytest.raises(TransportError):
            await f.poll_once()
        _write_lines(log, range(8, 10))
        chunks = await _poll_until(f, 4 if where == "open_reader" else 2)
        assert _numbers(chunks) == ([6, 7, 8, 9] if where == "open_reader" else [8, 9])
        assert not any(c.gap for c in chunks)
    finally:
        await f.close()


class _Counting:
    """A transport that counts the file calls a follower makes."""

    def __init__(self, inner: Transport) -> None:
        self._inner = inner
        self.calls: dict[str, int] = {}

    def __getattr__(self, name: str):
        attr = getattr(self._inner, name)
        if name not in ("stat", "read_range", "open_reader"):
            return attr

        async def counted(*args, **kwargs):
            self.calls[name] = self.calls.get(name, 0) + 1
            return await attr(*args, **kwargs)

        return counted


async def test_following_costs_no_extra_reads_of_the_path_per_poll(box) -> None:
    t, home = box
    log = home / "queue.log"
    _write_lines(log, range(3))
    counting = _Counting(t)
    f = LogFollower(counting, "~/queue.log")
    try:
        await f.poll_once()
        for i in range(3, 8):  # a busy log: the content check waits for a quiet poll
            _write_lines(log, range(i, i + 1))
            assert _numbers(await f.poll_once()) == [i]
        assert counting.calls.get("read_range", 0) == 0
        for _ in range(5):  # quiet: checked once, then the unchanged stat is trusted
            assert await f.poll_once() == []
        assert counting.calls.get("read_range", 0) <= 1
        assert counting.calls["open_reader"] == 1 and counting.calls["stat"] == 11
    finally:
        await f.close()


class _RaceAtStat:
    """A transport whose next ``stat`` first runs ``hook``: a rotation landing exactly
    between the follower's read and its check of the path."""

    def __init__(self, inner: Transport) -> None:
        self._inner = inner
        self.hook = None

    def __getattr__(self, name: str):
        return getattr(self._inner, name)

    async def stat(self, path: str):
        hook, self.hook = self.hook, None
        if hook is not None:
            hook()
        return await self._inner.stat(path)


def _same_mtime(*paths: Path) -> None:
    # SFTP v3 mtimes are whole seconds: make "rotated within the same second" certain.
    for p in paths:
        os.utime(p, ns=(1_700_000_000 * 10**9, 1_700_000_000 * 10**9))


NEW_FILE_LINES = {"smaller": 2, "same size": 0, "larger": 40}


@pytest.mark.parametrize("race", [False, True], ids=["between-polls", "during-poll"])
@pytest.mark.parametrize("new_size", list(NEW_FILE_LINES))
async def test_rename_rotation_drains_the_old_file_first(box, new_size: str, race: bool) -> None:
    t, home = box
    log = home / "queue.log"
    _write_lines(log, range(3))
    racy = _RaceAtStat(t)
    f = LogFollower(racy, "~/queue.log")

    def rotate() -> None:
        # Unread lines in the old file, some through the writer's old fd after the rename,
        # then the new file.
        _write_lines(log, range(3, 10))
        with open(log, "ab") as old_fd:
            os.rename(log, home / "queue.log.1")
            old_fd.write(b"line 10\nline 11")  # its last line never gets a newline
        if new_size == "same size":  # same bytes count and mtime: only content differs
            old_size = (home / "queue.log.1").stat().st_size
            log.write_bytes(b"line 12\n" + b"line 13 ".ljust(old_size - 9, b".") + b"\n")
            assert log.stat().st_size == old_size
            _same_mtime(log, home / "queue.log.1")
        else:
            _write_lines(log, range(12, 12 + NEW_FILE_LINES[new_size]))

    try:
        assert _numbers(await f.poll_once()) == [0, 1, 2]
        if race:
            racy.hook = rotate
        else:
            rotate()
        n_new = NEW_FILE_LINES[new_size] or 2
        chunks = await _poll_until(f, 9 + n_new)
        assert _numbers(chunks) == list(range(3, 12 + n_new))
        # The chunk that starts the new file says so; the old file's lines come before it.
        rotated = [c for c in chunks if c.rotated]
        assert len(rotated) == 1 and _numbers(rotated)[0] == 12
        assert _numbers(chunks[: chunks.index(rotated[0])]) == list(range(3, 12))
        assert chunks[-1].offset == log.stat().st_size
        _write_lines(log, range(100, 102))
        assert _numbers(await _poll_until(f, 2)) == [100, 101]
    finally:
        await f.close()


@pytest.mark.parametrize("race", [False, True], ids=["between-polls", "during-poll"])
@pytest.mark.parametrize("regrow", [3, 30])
async def test_copytruncate_restarts_at_zero_without_loss_or_repeat(
    box, regrow: int, race: bool
) -> None:
    t, home = box
    log = home / "queue.log"
    _write_lines(log, range(10))
    racy = _RaceAtStat(t)
    f = LogFollower(racy, "~/queue.log")

    def copytruncate() -> None:
        shutil.copy(log, home / "queue.log.1")
        os.truncate(log, 0)
        _write_lines(log, range(10, 10 + regrow))  # shorter, or longer than before

    try:
        assert _numbers(await f.poll_once()) == list(range(10))
        if race:
            racy.hook = copytruncate
        else:
            copytruncate()
        chunks = await _poll_until(f, regrow)
        assert _numbers(chunks) == list(range(10, 10 + regrow))
        assert [c.rotated for c in chunks if c.lines][0] and not any(c.gap for c in chunks)
        for _ in range(3):
            assert _numbers(await f.poll_once()) == []
    finally:
        await f.close()


async def test_a_log_replaced_while_disconnected_is_reported_as_a_gap(loopback_fleet) -> None:
    host = load_fleet(loopback_fleet.hosts_file).hosts[0]
    box = loopback_fleet.boxes[0]
    log = box.root / "queue.log"
    _write_lines(log, range(5))
    t = transport_for(host)
    await t.connect()
    f = LogFollower(t, "queue.log", reconnect=reconnect_with_backoff(t, FAST))
    try:
        assert _numbers(await f.poll_once()) == list(range(5))
        await box.stop()
        _write_lines(log, range(5, 8))  # never seen: rotated away while we were cut off
        os.rename(log, box.root / "queue.log.1")
        _write_lines(log, range(100, 110))  # longer than the old offset: only content differs
        with pytest.raises(TransportError):
            await f.poll_once()
        await box.start()
        await f.reconnect()
        chunks = await _poll_until(f, 10)
        assert _numbers(chunks) == list(range(100, 110))
        assert chunks[0].gap and chunks[0].rotated
    finally:
        await f.close()
        await t.close()


CELL_LOG = [
    "epoch 1 loss 0.52",
    "Traceback (most recent call last):",
    '  File "train.py", line 9, in <module>',
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB",
    "epoch 2 loss 0.41",
]


async def test_crash_lines_are_flagged_in_a_cell_log_but_not_in_the_queue_log(box) -> None:
    t, home = box
    (home / "a.log").write_text("\n".join(CELL_LOG) + "\n")
    flagged: dict[bool, list] = {}
    for highlight in (True, False):
        f = LogFollower(t, "~/a.log", highlight=highlight)
        try:
            (chunk,) = await f.poll_once()
        finally:
            await f.close()
        assert [ln.text for ln in chunk.lines] == CELL_LOG
        flagged[highlight] = [ln.crash.kind if ln.crash else None for ln in chunk.lines]
    assert flagged[True] == [None, "traceback", "traceback", "oom", None]
    assert flagged[False] == [None] * 5
    read = await read_log(t, "~/a.log", highlight=True)
    assert [ln.crash is not None for ln in read.lines] == [False, True, True, True, False]
    assert all(ln.crash is None for ln in (await read_log(t, "~/a.log")).lines)


async def test_read_log_tail_then_follow_continues_exactly(box) -> None:
    t, home = box
    log = home / "q.log"
    _write_lines(log, range(20000))  # several tail blocks back
    _append(log, b"line 20000")
    read = await read_log(t, "~/q.log", tail_lines=3)
    assert [ln.text for ln in read.lines] == ["line 19997", "line 19998", "line 19999"]
    assert read.partial == "line 20000"
    assert [ln.text for ln in (await read_log(t, "~/q.log", tail_lines=0)).lines] == []
    assert len((await read_log(t, "~/q.log")).lines) == 20000
    _append(log, b"\nline 20001\n")
    follower = LogFollower(t, "~/q.log", resume=read.position)
    try:
        assert _numbers(await follower.poll_once()) == [20000, 20001]
    finally:
        await follower.close()
    with pytest.raises(FileNotFoundError):
        await read_log(t, "~/missing.log")


# -- the `logs` command ----------------------------------------------------------------------------


def _queue_dir(root: Path) -> Path:
    q = root / ".rgt" / "queue"
    (q / "cells").mkdir(parents=True, exist_ok=True)
    return q


async def _cli(capsys, *args: str) -> tuple[int, str, str]:
    # The servers live in this event loop; the command runs its own loop in a thread.
    code = await asyncio.to_thread(rgt_main, ["logs", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


async def test_logs_command_prints_queue_and_cell_logs(loopback_fleet, capsys) -> None:
    hosts = str(loopback_fleet.hosts_file)
    q = _queue_dir(loopback_fleet.boxes[0].root)
    (q / "queue.log").write_text("\n".join(CELL_LOG) + "\nQUEUE DONE: 1 ok, 1 failed\n")
    (q / "cells" / "lr3e-4.log").write_text("\n".join(CELL_LOG) + "\n 10%\r 60%")

    code, out, err = await _cli(capsys, "--hosts", hosts, "box1")
    assert code == 0, err
    assert out.splitlines() == [*CELL_LOG, "QUEUE DONE: 1 ok, 1 failed"]  # queue log: no marks

    code, out, err = await _cli(capsys, "--hosts", hosts, "box1", "lr3e-4")
    assert code == 0, err
    assert out.splitlines() == [
        "epoch 1 loss 0.52",
        "!! Traceback (most recent call last):",
        '!!   File "train.py", line 9, in <module>',
        "!! torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB",
        "epoch 2 loss 0.41",
        " 60%",
    ]
    code, out, _ = await _cli(capsys, "--hosts", hosts, "box1", "--tail", "1")
    assert code == 0 and out == "QUEUE DONE: 1 ok, 1 failed\n"


async def test_logs_command_errors_say_what_is_wrong(loopback_fleet, capsys) -> None:
    hosts = str(loopback_fleet.hosts_file)
    code, out, err = await _cli(capsys, "--hosts", hosts, "box1")
    assert code == 1 and out == ""
    assert "queue has not been launched" in err and "queue.log" in err

    (_queue_dir(loopback_fleet.boxes[0].root) / "queue.log").write_text("runner up\n")
    code, _, err = await _cli(capsys, "--hosts", hosts, "box1", "cellX")
    assert code == 1 and "cell 'cellX' has not started" in err

    code, _, err = await _cli(capsys, "--hosts", hosts, "nope")
    assert code == 2 and "known: box1, box2, box3" in err

    code, _, err = await _cli(capsys, "--hosts", hosts, "box1", "../../etc/passwd")
    assert code == 2 and "not a cell name" in err

    await loopback_fleet.boxes[1].stop()
    code, _, err = await _cli(capsys, "--hosts", hosts, "box2")
    assert code == 1 and "box2 unreachable" in err and "refused" in err


async def test_logs_follow_prints_new_lines_until_ctrl_c(loopback_fleet) -> None:
    q = _queue_dir(loopback_fleet.boxes[0].root)
    log = q / "cells" / "a.log"
    log.write_text("epoch 1\n")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "rgt_tui",
        "logs",
        "--hosts",
        str(loopback_fleet.hosts_file),
        "box1",
        "a",
        "--follow",
        "--poll",
        "0.05",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    try:
        # Generous caps: each is a wait for the line (or the exit), not a speed check.
        assert await asyncio.wait_for(proc.stdout.readline(), 60) == b"epoch 1\n"
        _append(log, b"epoch 2\nKilled")
        assert await asyncio.wait_for(proc.stdout.readline(), 60) == b"epoch 2\n"
        _append(log, b"\n")
        assert await asyncio.wait_for(proc.stdout.readline(), 60) == b"!! Killed\n"
        proc.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(proc.wait(), 60) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
