"""Local disk space: refuse a pull that cannot fit, and stop cleanly when the disk fills.

These mount a small tmpfs (CI runs as root), so a full disk is a real ENOSPC.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os

import pytest
from support import MIB
from support.machine import tmpfs
from support.pulls import box_results, fast, host_of, pull, random_file, sha

from rgt_tui.services.pull import LocalDiskFull, NotEnoughSpace, PullOptions
from rgt_tui.services.records import pulled_path


async def test_disk_filling_mid_pull_stops_clearly_and_keeps_the_part(
    make_loopback_fleet, tmp_path
):
    fleet = await make_loopback_fleet(1)
    random_file(box_results(fleet) / "old.pt", 3 * MIB)
    filled = []

    def fill_when_pulling(p):
        # Another writer takes most of the disk once the pull has passed its space check.
        if p.phase == "pulling" and not filled:
            filled.append(True)
            (disk / "other-job.bin").write_bytes(b"\0" * (5 * MIB))

    with tmpfs(tmp_path / "disk", "10m") as disk:
        assert (await pull(host_of(fleet), disk, options=fast())).ok
        # A new checkpoint: the listing (9 MiB) does not fit the 7 MiB left, so nothing
        # starts before the exact plan (6 MiB to pull) passes its check; then the disk fills.
        random_file(box_results(fleet) / "ckpt" / "best.pt", 6 * MIB)
        with pytest.raises(LocalDiskFull) as caught:
            await pull(host_of(fleet), disk, options=fast(), on_progress=fill_when_pulling)
        dest = disk / "box1"
        error = caught.value
        part = dest / ".rgt" / "parts" / "ckpt" / "best.pt.part"
        assert error.path == part and error.folder == dest
        assert str(part) in error.message and "NOT marked pulled" in error.message
        assert "free space" in (error.fix or "")
        assert 0 < part.stat().st_size < 6 * MIB  # the partial copy is kept for a resume
        assert not (dest / "ckpt" / "best.pt").exists()
        assert error.result is not None and error.result.pulled == ()
        record = pulled_path(dest)
        assert "ckpt/best.pt" not in json.loads(record.read_text())["files"]

        (disk / "other-job.bin").unlink()  # the user frees space: the same pull resumes
        result = await pull(host_of(fleet), disk, options=fast())
        assert result.ok and result.pulled[0].resumed_from > 0


async def test_disk_filling_while_the_box_still_hashes_stops_clearly(
    make_loopback_fleet, tmp_path, caplog
):
    """The same during an early start (small files first, then each large one as the box
    reports it): whichever write meets the full disk first, the pull stops with the disk
    named, nothing unchecked is marked pulled, and freeing space lets it finish. The
    early copies' own error, when the pull reported another first, is not logged as
    "Task exception was never retrieved"."""
    fleet = await make_loopback_fleet(1)
    digest = random_file(box_results(fleet) / "ckpt" / "best.pt", 12 * MIB)
    (box_results(fleet) / "metrics.json").write_text("{}")
    filled = []

    def fill_mid_file(p):
        if not filled and any(f.path == "ckpt/best.pt" and f.done > 0 for f in p.active):
            filled.append(True)
            (disk / "other-job.bin").write_bytes(b"\0" * (10 * MIB))

    with tmpfs(tmp_path / "disk", "16m") as disk:
        with pytest.raises(LocalDiskFull) as caught:
            await pull(
                host_of(fleet),
                disk,
                options=fast(progress_interval_s=0),
                on_progress=fill_mid_file,
            )
        dest = disk / "box1"
        # The folder of whichever write met the full disk first: a part, or the
        # manifest's record written while the early copies filled the disk.
        assert filled and caught.value.folder in (dest, dest / ".rgt")
        # Its own record is said as one, not as "this file" (hour s45b #8).
        said = caught.value.message
        if caught.value.path.parent == dest / ".rgt":
            assert "this pull's record is not written, so nothing of it counts as pulled" in said
        else:
            assert "this file is NOT marked pulled" in said, said
        assert not (dest / "ckpt" / "best.pt").exists()
        record = pulled_path(dest)
        assert not record.exists() or "ckpt/best.pt" not in json.loads(record.read_text())["files"]
        del caught  # its traceback holds the pull's frames, and the early copies' task
        gc.collect()  # where asyncio logs a task's error nobody read
        assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]

        (disk / "other-job.bin").unlink()
        result = await pull(host_of(fleet), disk, options=fast())
        assert result.ok and sha(dest / "ckpt" / "best.pt") == digest


async def test_the_refusal_names_the_earlier_copies_pulls_set_aside(make_loopback_fleet, tmp_path):
    """A file rewritten on the box before each pull leaves one more earlier copy in
    .rgt/replaced/ every time, never deleted: the disk fills one pull at a time (hour
    s20a #2). The refusal that ends it names them as what may be freed."""
    fleet = await make_loopback_fleet(1)
    with tmpfs(tmp_path / "disk") as disk:  # 8 MiB
        for _ in range(4):  # 2 MiB each time: set aside, then refused
            random_file(box_results(fleet) / "last.pt", 2 * MIB)
            try:
                await pull(host_of(fleet), disk, options=fast(margin_min_bytes=MIB))
            except NotEnoughSpace as caught:
                error = caught
                break
        else:
            raise AssertionError("the disk never filled")
        assert ".rgt/replaced/ there holds" in (error.fix or ""), error.fix
        assert "earlier cop" in (error.fix or "") and "never delete" in (error.fix or "")


async def test_pull_that_cannot_fit_is_refused_before_any_byte(make_loopback_fleet, tmp_path):
    fleet = await make_loopback_fleet(1)
    random_file(box_results(fleet) / "big.pt", 20 * MIB)
    random_file(box_results(fleet) / "small.json", 100)
    with tmpfs(tmp_path / "disk") as disk:
        with pytest.raises(NotEnoughSpace) as caught:
            await pull(host_of(fleet), disk, options=fast())
        error = caught.value
        assert error.remaining == 20 * MIB + 100 and error.needed > error.remaining
        assert error.available < error.needed and "nothing was pulled" in error.message
        assert "free at least" in (error.fix or "") and "expand" in (error.fix or "")
        # The one file that needs most of it is named (h591 #4: a sparse 1 TB file among
        # thousands read as "free at least 1016G" with nothing to say which).
        assert "of it, big.pt alone is 20M" in error.message, error.message
        assert "move it out of the pull on the box" in (error.fix or "")
        assert not [p for p in (disk / "box1").rglob("*") if ".rgt" not in p.parts]

        # The default margin (5 %, at least 1 GiB) refuses even a tiny pull to a tiny disk.
        (box_results(fleet) / "big.pt").unlink()
        with pytest.raises(NotEnoughSpace) as tiny:
            await pull(host_of(fleet), disk, options=PullOptions())
        assert tiny.value.needed >= 1 << 30 and "1.0G" in tiny.value.message
        assert "alone is" not in tiny.value.message  # the margin, not a file, is the most


async def test_repull_on_a_tight_disk_counts_only_what_is_missing(make_loopback_fleet, tmp_path):
    """The early start on small files needs every listed byte to fit; when it does not,
    the pull waits for the exact plan instead of refusing what would fit."""
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    random_file(res / "ckpt" / "best.pt", 5 * MIB)
    for i in range(3):
        (res / f"eval_{i}.json").write_text(json.dumps({"i": i}))
    with tmpfs(tmp_path / "disk") as disk:
        first = await pull(host_of(fleet), disk, options=fast())
        assert first.ok and len(first.pulled) == 4
        (res / "eval_new.json").write_text('{"new": true}')  # 5 MiB listed, 8 MiB disk, ~3 free
        again = await pull(host_of(fleet), disk, options=fast())
        assert again.ok and [f.path for f in again.pulled] == ["eval_new.json"]
        assert "ckpt/best.pt" in again.skipped
        assert json.loads((disk / "box1" / "eval_new.json").read_text()) == {"new": True}


async def test_files_that_cannot_fit_are_refused_on_the_listing_not_after_hashing(
    make_loopback_fleet, tmp_path
):
    """ux-i 6: a sparse file of 1 TiB on the box (no bytes on its disk; hashing its zeros
    takes the box many minutes): nothing of it is here, so no hash can make it fit, and
    the pull says so as soon as the box has listed it, in the same words."""
    fleet = await make_loopback_fleet(1)
    random_file(box_results(fleet) / "small.json", 100)
    (box_results(fleet) / "huge_sparse.bin").touch()
    os.truncate(box_results(fleet) / "huge_sparse.bin", 1 << 40)
    with tmpfs(tmp_path / "disk") as disk:
        with pytest.raises(NotEnoughSpace) as caught:
            # A bound, not a wait: the listing comes in a second or two; hashing the
            # file first took the box minutes.
            await asyncio.wait_for(pull(host_of(fleet), disk, options=fast()), 60)
        error = caught.value
        assert error.remaining == (1 << 40) + 100 and "nothing was pulled" in error.message
        assert "free at least" in (error.fix or "")
        assert not [p for p in (disk / "box1").rglob("*") if ".rgt" not in p.parts]


async def test_a_disk_out_of_inodes_mid_pull_says_inodes_not_space(make_loopback_fleet, tmp_path):
    """h563 #4: every inode taken once the pull passed its check, `df -h` still showing
    free space: "disk full … free space on that disk" misled the user."""
    fleet = await make_loopback_fleet(1)
    for n in range(20):
        (box_results(fleet) / "runs" / f"r{n}").mkdir(parents=True)
        (box_results(fleet) / "runs" / f"r{n}" / "metrics.json").write_text("{}")
    filled: list[int] = []

    def take_every_inode(p):  # type: ignore[no-untyped-def]
        if p.phase == "pulling" and not filled:
            try:
                while True:
                    (disk / f"empty{len(filled)}").touch()
                    filled.append(1)
            except OSError:
                pass

    with tmpfs(tmp_path / "disk", "10m", inodes=200) as disk:
        with pytest.raises(LocalDiskFull) as caught:
            await pull(host_of(fleet), disk, options=fast(), on_progress=take_every_inode)
        assert "local disk out of inodes while writing" in caught.value.message
        assert "df -i" in (caught.value.fix or ""), caught.value.fix
