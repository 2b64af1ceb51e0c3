"""A sync cut off by its box (h573 #2): the box stops answering while a large file goes
to its staging folder. The command said "sbox unreachable: connection lost" and nothing
more: not what to do, nor that the files staged there are never used. Real components:
a loopback asyncssh box stopped mid-transfer, the console entry point."""

from __future__ import annotations

import asyncio

from support.cli import arun
from support.fleet_files import set_host_key
from support.waiting import wait_for


async def test_a_sync_cut_off_says_how_to_go_on_and_what_stays_on_the_box(
    make_loopback_fleet, tmp_path
):
    loop = await make_loopback_fleet(1)
    code = tmp_path / "proj"
    code.mkdir()
    (code / "train.py").write_text("print('fit')\n")
    with (code / "weights.bin").open("wb") as f:  # long enough to be cut off on its way
        f.truncate(400 * 2**20)
    set_host_key(loop.hosts_file, "code", str(code), "box1")
    root = loop.box("box1").root
    sync = asyncio.ensure_future(
        arun("sync", "box1", "--hosts", str(loop.hosts_file), "--sftp", timeout=300)
    )

    def staging_bytes() -> bool:
        return any(p.is_file() and p.stat().st_size > 0 for p in root.glob(".rgt-sync.*/**/*"))

    await wait_for(staging_bytes, 120, "the sync's first bytes on the box")
    await loop.box("box1").stop()
    done = await sync
    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    assert "box1 unreachable" in said, said
    assert "sync again once it answers (rgt-tui sync box1)" in said, said
    assert ".rgt-sync.* in its workdir) are never used and the next sync removes them" in said
    assert not (root / "weights.bin").exists()  # the scenario: cut off before the switch
    assert "socket.send() raised exception" not in said, said  # asyncio's noise (h575 #6)
