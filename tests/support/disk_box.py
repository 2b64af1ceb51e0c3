"""A loopback box whose data disk is a real tmpfs: results, an HF-cache-shaped tree reached
through a link from the box's home (U7), an inode hog, and a big file a cache link points at."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
import torch

BLOB = 300_000
BIG_OUTSIDE = 2_000_000
SMALL_FILES = 400


@pytest.fixture
def tmpfs(tmp_path: Path):
    """A fresh tmpfs mounted in tmp_path (root), else a folder on /dev/shm (a tmpfs too)."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    mounted = (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mnt)], capture_output=True
        ).returncode
        == 0
    )
    where = mnt if mounted else Path("/dev/shm") / f"rgt-disk-{uuid.uuid4().hex[:8]}"
    where.mkdir(exist_ok=True)
    fstype = subprocess.run(["stat", "-f", "-c", "%T", str(where)], capture_output=True, text=True)
    assert fstype.stdout.strip() == "tmpfs", fstype
    try:
        yield where
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(mnt)], check=False)
        else:
            shutil.rmtree(where, ignore_errors=True)


def build_box(box_home: Path, disk: Path) -> dict[str, Path]:
    """Results with an old and a new checkpoint, an HF-cache-shaped tree reached through
    a link from the box's home, an inode hog, and a big file a cache link points at."""
    cell = disk / "results" / "cellA"
    cell.mkdir(parents=True)
    torch.save({"w": torch.randn(64, 64)}, cell / "epoch1.pt")
    torch.save({"w": torch.randn(64, 64)}, cell / "epoch2.pt")
    os.utime(cell / "epoch1.pt", (1_700_000_000, 1_700_000_000))
    os.utime(cell / "epoch2.pt", (1_700_000_500, 1_700_000_500))
    (cell / "metrics.json").write_text('{"acc": 0.9}')
    model = disk / "hf" / "hub" / "models--org--a"
    blob = model / "blobs" / ("ab" * 32)
    blob.parent.mkdir(parents=True)
    blob.write_bytes(os.urandom(BLOB))
    (model / "snapshots" / "abc").mkdir(parents=True)
    (model / "refs").mkdir()
    (model / "refs" / "main").write_text("abc")
    (model / "snapshots" / "abc" / "model.safetensors").symlink_to("../../blobs/" + blob.name)
    big = disk / "scratch" / "big.bin"
    big.parent.mkdir()
    big.write_bytes(os.urandom(BIG_OUTSIDE))
    (model / "snapshots" / "abc" / "outside.bin").symlink_to(big)  # never followed
    hog = disk / "scratch" / "evalvis"
    hog.mkdir()
    for i in range(SMALL_FILES):
        (hog / f"s{i}.png").write_bytes(b"x")
    (box_home / ".cache").mkdir(exist_ok=True)
    (box_home / ".cache" / "huggingface").symlink_to(disk / "hf")
    return {"cell": cell, "model": model, "big": big, "hog": hog, "blob": blob}


def disk_app(fleet, tmp_path: Path, disk: Path):  # type: ignore[no-untyped-def]
    """The App (monitors on) over loopback box1 built on ``disk`` (``build_box``), whose
    watched mount is ``disk`` and whose pull folder is ``disk/results``; and the paths."""
    import dataclasses
    import time

    from rgt_tui.services.fleet.file import load_fleet
    from support.pilot import make_app
    from support.pulls import host_of

    paths = build_box(fleet.box("box1").root, disk)
    results = str(disk / "results")
    host = host_of(fleet, mounts=(str(disk),), pull=(results,), durable_dir=results)
    fleet_cfg = dataclasses.replace(load_fleet(fleet.hosts_file), hosts=(host,))
    return make_app(tmp_path, fleet=fleet_cfg, start_monitors=True, clock=time.time), paths


def audit_text(app) -> str:  # type: ignore[no-untyped-def]
    """The disk modal's audit as shown ("" until it is on screen)."""
    from textual.widgets import Static

    from rgt_tui.screens.disk_usage import DiskUsageScreen
    from support.pilot import text_of

    screen = app.screen
    if not isinstance(screen, DiskUsageScreen) or screen.audit is None:
        return ""
    return text_of(screen.query_one("#disk-body", Static))
