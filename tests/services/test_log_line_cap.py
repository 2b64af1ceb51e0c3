"""No log line is longer than the cap (issue 26), however a box writes it: a 4 MiB line
that arrives in one read over a real loopback SSH box is cut like one that trickles in,
by the follower, a one-shot read and `rgt-tui logs`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support.cli import arun

from rgt_tui.domain.logscan import MAX_LINE_BYTES, cut_note
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.logs import LogFollower, iter_log, queue_log_path
from rgt_tui.transport import Transport, transport_for

LONG = 4 << 20  # the box's one long line
ONE_READ = 8 << 20  # a read size that takes it whole
CUT = "x" * MAX_LINE_BYTES + cut_note(LONG - MAX_LINE_BYTES, MAX_LINE_BYTES)


def _write_log(home: Path) -> None:
    log = home / ".rgt" / "queue" / "queue.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_bytes(b"before\n" + b"x" * LONG + b"\nafter\n")


@pytest.fixture
async def box(loopback_fleet) -> AsyncIterator[tuple[Transport, Path]]:  # type: ignore[no-untyped-def]
    t = transport_for(load_fleet(loopback_fleet.hosts_file).hosts[0])
    await t.connect()
    try:
        yield t, loopback_fleet.boxes[0].root
    finally:
        await t.close()


def test_the_note_says_how_much_was_dropped() -> None:
    assert CUT.endswith("… [line cut at 1 MiB: 3,145,728 more bytes dropped]")


async def test_the_follower_cuts_a_4_mib_line_that_arrives_in_one_read(box) -> None:
    t, home = box
    _write_log(home)
    follower = LogFollower(t, queue_log_path(), chunk_size=ONE_READ)
    try:
        chunks = await follower.poll_once()
    finally:
        await follower.close()
    assert [line.text for c in chunks for line in c.lines] == ["before", CUT, "after"]
    assert follower.position.offset == len(b"before\n") + LONG + len(b"\nafter\n")


async def test_a_one_shot_read_cuts_it_too(box) -> None:
    t, home = box
    _write_log(home)
    texts = [
        line.text
        async for chunk in iter_log(t, queue_log_path(), chunk_size=ONE_READ)
        for line in chunk.lines
    ]
    assert texts == ["before", CUT, "after"]


async def test_rgt_tui_logs_prints_no_line_over_the_cap(loopback_fleet) -> None:
    box = loopback_fleet.boxes[0]
    _write_log(box.root)
    out = await arun("logs", box.name, "--hosts", str(loopback_fleet.hosts_file))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["before", CUT, "after"]
