"""SFTP reads cut off (a log follower or a pull stopped at quit, a box dropping) leave
no task behind whose error nobody reads: asyncio would print "Task exception was never
retrieved" on the user's terminal as rgt-tui exits (issue 27)."""

from __future__ import annotations

import asyncio
import gc
import getpass
from typing import Any

from support.waiting import wait_for

from rgt_tui.transport.ssh import SshTransport


def _transport(fleet, box) -> SshTransport:
    return SshTransport(
        box.name,
        address="127.0.0.1",
        port=box.port,
        username=getpass.getuser(),
        identity_file=fleet.client_key,
        known_hosts=fleet.known_hosts,
    )


def _unretrieved() -> list[dict[str, Any]]:
    """Collect the loop's reports of task errors nobody read (as asyncio logs them)."""
    loop = asyncio.get_running_loop()
    seen: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: seen.append(context))
    return seen


def _own_tasks_settled(before: set[asyncio.Task[Any]]) -> bool:
    return all(t.done() for t in asyncio.all_tasks() - before - {asyncio.current_task()})


async def test_a_read_cut_off_at_the_end_of_a_log_leaves_no_error_behind(loopback_fleet):
    box = loopback_fleet.boxes[0]
    log = box.root / "train.log"
    log.write_bytes(b"epoch 1\n" * 100)
    seen = _unretrieved()
    t = _transport(loopback_fleet, box)
    await t.connect()
    try:
        reader = await t.open_reader(str(log))
        before = set(asyncio.all_tasks())
        # A follower's poll: from just before the end, past it (the box answers EOF for
        # the part past the end). Cut off at every step of the box's answer in turn, as
        # quitting does at whatever step it finds.
        for steps in range(40):
            polling = asyncio.ensure_future(reader.read(700, 256 * 1024))
            for _ in range(steps):
                await asyncio.sleep(0)
            polling.cancel()
            await asyncio.gather(polling, return_exceptions=True)
            await wait_for(lambda: _own_tasks_settled(before), 60, "the cut-off read to settle")
            gc.collect()
        await reader.close()
    finally:
        await t.close()
    gc.collect()
    await asyncio.sleep(0)
    assert not [c for c in seen if "never retrieved" in str(c.get("message"))], seen


async def test_blocks_cut_off_mid_pull_and_the_connection_closed_leave_no_error_behind(
    loopback_fleet,
):
    box = loopback_fleet.boxes[0]
    blob = box.root / "ckpt.bin"
    blob.write_bytes(b"w" * (16 << 20))
    seen = _unretrieved()
    t = _transport(loopback_fleet, box)
    await t.connect()
    reader = await t.open_reader(str(blob), block_size=1 << 20, max_requests=16)
    before = set(asyncio.all_tasks())
    got = 0

    async def pull() -> None:
        nonlocal got
        async for _at, data in reader.blocks(0, 16 << 20):
            got += len(data)
            raise asyncio.CancelledError  # the pull stopped at quit, reads in flight...

    await asyncio.gather(pull(), return_exceptions=True)
    await t.close()  # ...and then the connection closed under them
    await wait_for(lambda: _own_tasks_settled(before), 60, "the cut-off reads to settle")
    gc.collect()
    await asyncio.sleep(0)
    assert not [c for c in seen if "never retrieved" in str(c.get("message"))], seen
    assert got < 16 << 20


async def test_reads_and_blocks_still_bring_every_byte(loopback_fleet):
    box = loopback_fleet.boxes[0]
    data = bytes(range(256)) * 5000 + b"tail"
    (box.root / "f.bin").write_bytes(data)
    t = _transport(loopback_fleet, box)
    await t.connect()
    try:
        reader = await t.open_reader(str(box.root / "f.bin"), block_size=7000, max_requests=5)
        assert await reader.read(0, len(data) + 50) == data  # more than a block: all of it
        assert await reader.read(len(data), 10) == b""
        pieces = dict([p async for p in reader.blocks(100, len(data) - 100)])
        assert b"".join(pieces[k] for k in sorted(pieces)) == data[100:]
        await reader.close()
    finally:
        await t.close()
