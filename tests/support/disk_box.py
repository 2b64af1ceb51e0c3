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
