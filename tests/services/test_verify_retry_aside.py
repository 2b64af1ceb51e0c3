"""Hour s23b #5: a retry meant to replace a truncated checkpoint renames the cell's
{out} aside (`<out>.before-retry-<time>`); that folder is pulled, and its truncated file
failed verify again, keeping the gate shut with no way out but a hand `rm`. In an aside
folder the box's bytes count by their hash; in the cell's own folder it stays corrupt."""

from __future__ import annotations

import os

import torch
from support.pulls import box_results, fast, host_of

from rgt_tui.domain.artifacts import CORRUPT, HASH_ONLY
from rgt_tui.services.pull import pull_host
from rgt_tui.services.verify.run import verify_host
from rgt_tui.transport import transport_for


async def test_a_truncated_file_in_a_retry_aside_folder_counts_by_its_hash(
    make_loopback_fleet, tmp_path
):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    for folder in ("seed7.before-retry-20261202-045242", "seed8"):
        (res / folder).mkdir(parents=True)
        ckpt = res / folder / "ckpt.pt"
        torch.save({"w": torch.randn(64, 64)}, ckpt)
        os.truncate(ckpt, ckpt.stat().st_size // 2)
    host = host_of(fleet)
    transport = transport_for(host)
    try:
        assert not (await pull_host(host, tmp_path, transport, options=fast())).failed
        report = await verify_host(host, tmp_path, transport=None)
    finally:
        await transport.close()
    checks = {c.path.split("/")[-2]: c for c in report.checks}
    aside = checks["seed7.before-retry-20261202-045242"]
    assert aside.status == HASH_ONLY and "a folder a retry set aside" in aside.detail
    assert checks["seed8"].status == CORRUPT  # the cell's own folder: still a problem
    assert not any("before-retry" in p for p in report.problems), report.problems
