"""A file system that reports more inodes free than exist (CephFS's f_ffree of -1, some
FUSE mounts) has no inode figure, as one that reports none: a negative count made the
client refuse the whole disk, its bytes and their alerts too (a review)."""

from __future__ import annotations

import os

from support.samples import agent_sample

from rgt_tui.agent.probe.disks import _entry
from rgt_tui.domain.snapshot import snapshot_from_agent


def _statvfs(files: int, ffree: int) -> os.statvfs_result:
    # (bsize, frsize, blocks, bfree, bavail, files, ffree, favail, flag, namemax)
    return os.statvfs_result((4096, 4096, 1000, 400, 300, files, ffree, ffree, 0, 255))


def test_more_inodes_free_than_exist_is_no_inode_figure_and_the_disk_stays() -> None:
    bogus = _entry("/data", "/data", _statvfs(100, 2**64 - 1))
    assert (bogus["inodes_used"], bogus["inodes_total"]) == (0, 0)
    honest = _entry("/data", "/data", _statvfs(100, 40))
    assert (honest["inodes_used"], honest["inodes_total"]) == (60, 100)
    data = agent_sample("box1")
    data["disks"] = [bogus]
    snap = snapshot_from_agent("box1", data)
    (disk,) = snap.disks
    assert disk.bytes_used == 600 * 4096 and disk.inodes_fraction == 0.0
    assert not [p for p in snap.problems if "disks." in p], snap.problems
