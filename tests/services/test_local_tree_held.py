"""HostTree keeps the last folders it reached open (issue 44: thousands of small files no
longer walk their folders again for each part, rename and check). A held folder must
never become a way around the walk's rule: no write through a local link, and a folder
removed meanwhile is made again, as an unheld one would be."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from rgt_tui.services.pull.local_tree import HostTree


def _write(tree: HostTree, rel: str, data: bytes) -> None:
    fd = tree.open_part(rel)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def test_a_held_folder_removed_meanwhile_is_made_again(tmp_path: Path) -> None:
    tree = HostTree(tmp_path / "box1")
    try:
        _write(tree, "runs/a/one", b"1")
        shutil.rmtree(tmp_path / "box1" / "runs")
        _write(tree, "runs/a/two", b"2")
    finally:
        tree.close()
    assert (tmp_path / "box1" / "runs" / "a" / "two").read_bytes() == b"2"


def test_a_link_put_where_a_held_folder_was_is_not_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "a").mkdir(parents=True)
    tree = HostTree(tmp_path / "box1")
    try:
        _write(tree, "runs/a/one", b"1")
        # Someone moves the folder away and leaves a link to a place outside the tree.
        os.rename(tmp_path / "box1" / "runs", tmp_path / "moved")
        os.symlink(elsewhere, tmp_path / "box1" / "runs")
        _write(tree, "runs/a/two", b"2")
        _write(tree, "runs/b/three", b"3")
    finally:
        tree.close()
    assert sorted(p.name for p in elsewhere.rglob("*")) == ["a"]  # nothing written there
    assert (tmp_path / "moved" / "a" / "two").read_bytes() == b"2"  # the held folder itself
    assert not (tmp_path / "box1" / "runs").is_symlink()  # the walk replaced the link
    assert (tmp_path / "box1" / "runs" / "b" / "three").read_bytes() == b"3"


def test_closing_the_tree_closes_every_held_folder(tmp_path: Path) -> None:
    before = len(os.listdir("/proc/self/fd"))
    tree = HostTree(tmp_path / "box1")
    for i in range(100):  # more than are held
        _write(tree, f"f{i}/part", b"x")
    tree.close()
    assert len(os.listdir("/proc/self/fd")) == before
