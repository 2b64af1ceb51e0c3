"""The disk screen's offer (U6): a superseded checkpoint or torch.save's stale ``*.tmp``
is listed, but offered for deletion only once its own copy is pulled and verified; one
written after the pull is marked with why, and its delete refused. A loopback box whose
data disk is a real tmpfs, real pull and verify (support/disk_box)."""

from __future__ import annotations

import os

import pytest
import torch
from support.disk_box import build_box
from support.disk_box import tmpfs as tmpfs  # noqa: F401  (the fixture)
from support.pulls import fast, host_of

from rgt_tui.content.disk_text import audit_lines
from rgt_tui.services.disk.audit import DiskError, audit_disk
from rgt_tui.services.disk.reclaim import plan_delete
from rgt_tui.services.pull import pull_host
from rgt_tui.services.verify.run import verify_host
from rgt_tui.transport import transport_for


async def test_only_pulled_and_verified_superseded_files_are_offered(
    make_loopback_fleet, tmp_path, tmpfs
):
    fleet = await make_loopback_fleet(1)
    paths = build_box(fleet.box("box1").root, tmpfs)
    results = str(tmpfs / "results")
    host = host_of(fleet, mounts=(str(tmpfs),), pull=(results,), durable_dir=results)
    local = tmp_path / "local"
    transport = transport_for(host)
    cell = paths["cell"]
    try:
        assert (await pull_host(host, local, transport, options=fast())).ok
        report = await verify_host(host, local, transport=transport, roster=["cellA"])
        assert report.ok, report.problems
        # Written after the pull, older than the verified epoch2.pt: superseded, not safe.
        torch.save({"w": torch.zeros(2)}, cell / "epoch0.pt")
        (cell / "epoch2.pt.tmp").write_bytes(b"half a checkpoint")
        for name in ("epoch0.pt", "epoch2.pt.tmp"):
            os.utime(cell / name, (1_600_000_000, 1_600_000_000))
        audit = await audit_disk(host, transport, local, cells=("cellA",))
        listed = {e.label: e for e in audit.checkpoints}
        assert set(listed) == {"cellA/epoch1.pt", "cellA/epoch0.pt", "cellA/epoch2.pt.tmp"}
        assert listed["cellA/epoch1.pt"].held is None  # pulled and verified: offered
        assert listed["cellA/epoch2.pt.tmp"].kind == "tmp"
        for label in ("cellA/epoch0.pt", "cellA/epoch2.pt.tmp"):
            assert "not pulled and verified yet" in (listed[label].held or "")
        text = "\n".join(audit_lines(audit))
        assert "cellA/epoch0.pt" in text and "NOT OFFERED: its own copy is not pulled" in text
        with pytest.raises(
            DiskError, match="is not offered: its own copy is not pulled and verified yet"
        ):
            await plan_delete(host, transport, local, audit, "cellA/epoch2.pt.tmp")

        # Pulled and verified now: offered.
        assert (await pull_host(host, local, transport, options=fast())).ok
        report = await verify_host(host, local, transport=transport, roster=["cellA"])
        audit = await audit_disk(host, transport, local, cells=("cellA",))
        held = {e.label: e.held for e in audit.checkpoints}
        assert held["cellA/epoch0.pt"] is None, held
        await plan_delete(host, transport, local, audit, "cellA/epoch0.pt")
    finally:
        await transport.close()
