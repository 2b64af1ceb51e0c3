"""Where a pull's time went (issue 44): handshake, listing, copy and tail, in the result
and in the command's summary, on a real loopback box whose scan is held back after its
listing (as a box still hashing a large result set would), so the copy provably starts
before the box's hashes are whole."""

from __future__ import annotations

import asyncio

from support import MIB
from support.pulls import box_results, fast, host_of, random_file
from support.waiting import wait_for
from test_pull_early import HeldScan, _pull_held

from rgt_tui.cli.pull_text import format_pull_result
from rgt_tui.transport import transport_for


async def test_a_pull_says_where_its_time_went(make_loopback_fleet, tmp_path):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    random_file(res / "ckpt" / "best.pt", 3 * MIB)
    (res / "eval.json").write_text("{}")
    host = host_of(fleet)
    held = HeldScan(transport_for(host))
    pulling = asyncio.ensure_future(_pull_held(host, tmp_path, held, options=fast()))
    part = tmp_path / "box1" / ".rgt" / "parts" / "ckpt" / "best.pt.part"
    await wait_for(lambda: part.exists() and part.stat().st_size == 3 * MIB, 30, "early copy")
    held.released.set()  # the box's hashes come only now, after the copy began
    result = await asyncio.wait_for(pulling, 60)

    assert result.ok
    stages = dict(result.stages)
    assert [name for name, _ in result.stages] == [
        "handshake", "listing", "copy", "tail", "manifest",
    ]  # fmt: skip
    assert all(seconds >= 0 for seconds in stages.values())
    spans = stages["handshake"] + stages["listing"] + stages["copy"] + stages["tail"]
    assert spans <= result.elapsed_s + 1e-6  # the four stages tile the pull, no more
    # The hashes were held until the copy had every byte: they were whole after it began.
    assert stages["manifest"] > stages["handshake"] + stages["listing"]
    lines = format_pull_result(result).splitlines()
    shown = [line for line in lines if line.startswith("  stages: ")]
    assert len(shown) == 1
    assert shown[0].startswith("  stages: handshake ")
    assert ", listing " in shown[0] and ", copy " in shown[0] and ", tail " in shown[0]
    assert "; box hashes whole at " in shown[0]
