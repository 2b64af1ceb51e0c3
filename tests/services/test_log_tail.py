"""A follower with ``tail`` opens a long log at its end (ux-g 3): the last lines, reading
back at most ``max_bytes``, and says how much it left unread; a resume offset the log
grew little past is kept. Over a real loopback SSH box and this machine."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from support.waiting import wait_for

from rgt_tui.domain.logscan import LogChunk, LogPosition
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.logs import LogFollower, Tail, read_log
from rgt_tui.transport import Transport, transport_for
from rgt_tui.transport.local import LocalTransport


@pytest.fixture(params=["ssh", "local"])
async def box(request, loopback_fleet, tmp_path, monkeypatch) -> AsyncIterator[tuple]:  # type: ignore[no-untyped-def]
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


def _texts(chunks: list[LogChunk]) -> list[str]:
    return [line.text for c in chunks for line in c.lines]


async def _poll(follower: LogFollower, until: str) -> list[LogChunk]:
    chunks: list[LogChunk] = []

    async def arrived() -> bool:
        chunks.extend(await follower.poll_once())
        return until in _texts(chunks)

    await wait_for(arrived, 30, until, show=lambda: str(_texts(chunks)[-5:]), every=0.01)
    return chunks


async def test_a_long_log_is_opened_at_its_last_lines(box) -> None:  # type: ignore[no-untyped-def]
    t, home = box
    log = home / "long.log"
    body = "".join(f"old epoch line {i}\n" for i in range(200_000)).encode()
    log.write_bytes(body + b"partial")
    follower = LogFollower(t, "~/long.log", tail=Tail(lines=100, max_bytes=1 << 20))
    try:
        chunks = await _poll(follower, "old epoch line 199999")
        # The last 100 complete lines, nothing before them; the partial line waits.
        assert _texts(chunks) == [f"old epoch line {i}" for i in range(199_900, 200_000)]
        start = len(body) - len("".join(f"old epoch line {i}\n" for i in range(199_900, 200_000)))
        assert follower.skipped == start
        assert chunks[-1].partial == "partial"
        # It follows on from there like any follower.
        with log.open("ab") as f:
            f.write(b" done\nnew line\n")
        assert _texts(await _poll(follower, "new line")) == ["partial done", "new line"]
        assert follower.skipped == start  # said once, for the first open
    finally:
        await follower.close()


async def test_long_lines_are_bounded_by_bytes_and_begin_at_a_line(box) -> None:  # type: ignore[no-untyped-def]
    t, home = box
    log = home / "wide.log"
    lines = [f"{i:05d} " + "x" * 94 for i in range(1000)]  # 101 bytes with the newline
    log.write_text("".join(line + "\n" for line in lines))
    follower = LogFollower(t, "~/wide.log", tail=Tail(lines=500, max_bytes=4096))
    try:
        got = _texts(await _poll(follower, lines[-1]))
    finally:
        await follower.close()
    # 4096 bytes hold 40 whole lines (and a piece of one more, not shown).
    assert got == lines[-40:]
    assert follower.skipped == 101 * 960


async def test_a_resume_is_kept_unless_the_log_grew_past_the_tail(box) -> None:  # type: ignore[no-untyped-def]
    t, home = box
    log = home / "r.log"
    log.write_text("".join(f"line {i}\n" for i in range(100)))
    read = await read_log(t, "~/r.log")
    here: LogPosition = read.position
    with log.open("a") as f:
        f.write("".join(f"line {i}\n" for i in range(100, 110)))
    tail = Tail(lines=50, max_bytes=1 << 20)
    follower = LogFollower(t, "~/r.log", resume=here, tail=tail)
    try:  # 10 lines written meanwhile: all of them, nothing skipped
        assert _texts(await _poll(follower, "line 109")) == [f"line {i}" for i in range(100, 110)]
        assert follower.skipped == 0
    finally:
        await follower.close()
    with log.open("a") as f:
        f.write("".join(f"line {i}\n" for i in range(110, 300)))
    follower = LogFollower(t, "~/r.log", resume=here, tail=tail)
    try:  # 200 written meanwhile: the last 50, and what was left out is said
        assert _texts(await _poll(follower, "line 299")) == [f"line {i}" for i in range(250, 300)]
        assert follower.skipped == sum(len(f"line {i}\n") for i in range(100, 250))
    finally:
        await follower.close()


async def test_a_log_that_appears_later_is_tailed_when_it_does(box) -> None:  # type: ignore[no-untyped-def]
    t, home = box
    follower = LogFollower(t, "~/late.log", tail=Tail(lines=3, max_bytes=1 << 20))
    try:
        assert [c.status for c in await follower.poll_once()] == ["waiting"]
        (home / "late.log").write_text("".join(f"line {i}\n" for i in range(10)))
        assert _texts(await _poll(follower, "line 9")) == ["line 7", "line 8", "line 9"]
    finally:
        await follower.close()


async def test_a_last_line_longer_than_the_tail_is_shown_cut_not_skipped(box) -> None:  # type: ignore[no-untyped-def]
    """h503 #6: a log ending in one 2 MiB line opened the tab at the end of the file:
    nothing but "… of earlier lines not loaded", the long line and all before it gone."""
    t, home = box
    log = home / "huge.log"
    log.write_bytes(b"".join(b"line %d\n" % i for i in range(10)) + b"y" * (2 << 20) + b"\n")
    follower = LogFollower(t, "~/huge.log", tail=Tail(lines=50, max_bytes=1 << 20), max_line=4096)
    try:
        chunks: list[LogChunk] = []

        async def arrived() -> bool:
            chunks.extend(await follower.poll_once())
            return bool(_texts(chunks))

        await wait_for(arrived, 30, "a line", every=0.01)
    finally:
        await follower.close()
    (shown,) = _texts(chunks)
    assert shown.startswith("y" * 100), shown[:120]  # the long line's end, cut
    assert follower.skipped == log.stat().st_size - (1 << 20)
