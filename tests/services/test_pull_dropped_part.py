"""A part kept from a cut pull that cannot be the box's file now (rewritten there since)
is thrown away by the plan, and the file comes again whole: said, never silent (h616 #2;
docs/pulls.md, "Files that came again")."""

from __future__ import annotations

import asyncio

import pytest
from support import MIB
from support.pulls import box_results, fast, host_of, pull, random_file, sha

from rgt_tui.cli.pull_text import format_pull_result
from rgt_tui.services.pull import PullError
from rgt_tui.services.pull.budget import Bandwidth
from rgt_tui.services.records import manifest_path


def _saved(path) -> tuple[int, int] | None:  # type: ignore[no-untyped-def]
    """Which manifest record is there (each save is a new file, renamed into place)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_mtime_ns


async def _cut_once_hashed(host, box, results) -> None:  # type: ignore[no-untyped-def]
    """A pull into ``results`` whose box stops mid-file once the pull saved the box's
    manifest (so the next pull knows which version the kept part was of)."""
    saved = manifest_path(results / host.name)
    before = _saved(saved)
    stopping: list[asyncio.Future] = []

    def stop_mid_file(p) -> None:  # type: ignore[no-untyped-def]
        mid = any(f.done >= 4 * MIB for f in p.active)
        if not stopping and mid and _saved(saved) != before:
            stopping.append(asyncio.ensure_future(box.stop()))

    # 80 Mbit/s: the file takes seconds to come, the box hashes it in a fraction of one.
    slow = fast(max_attempts=2, progress_interval_s=0, budget=Bandwidth.from_mbit(80))
    with pytest.raises(PullError, match="lost the connection"):
        await pull(host, results, options=slow, on_progress=stop_mid_file)
    await asyncio.gather(*stopping)


@pytest.mark.parametrize("copy_here", [False, True], ids=["nothing-here", "an-earlier-copy"])
async def test_a_kept_part_of_a_file_rewritten_on_the_box_since_comes_again_said(
    make_loopback_fleet, tmp_path, copy_here
):
    """The box's file is rewritten after a pull was cut mid-file: its kept part was thrown
    away without a word ("1 pulled (0 resumed)", no AGAIN line). Nothing here yet, the
    listing decides (early.py); an earlier copy here, the file waits for its hash and the
    plan decides (plan.py): both say it, and count its bytes once."""
    fleet = await make_loopback_fleet(1)
    size = 40 * MIB
    on_box = box_results(fleet) / "ckpt" / "last.pt"
    random_file(on_box, size)
    host, box = host_of(fleet), fleet.box("box1")
    if copy_here:
        assert (await pull(host, tmp_path, options=fast())).ok
        random_file(on_box, size)
    await _cut_once_hashed(host, box, tmp_path)
    part = tmp_path / "box1" / ".rgt" / "parts" / "ckpt" / "last.pt.part"
    assert 4 * MIB <= part.stat().st_size < size
    with on_box.open("r+b") as f:  # four bytes rewritten on the box: another version
        f.seek(1000)
        f.write(b"\0\1\2\3")
    digest = sha(on_box)
    await box.start()

    result, sent = await pull(host, tmp_path, options=fast(), counted=True)
    assert result.ok and sha(tmp_path / "box1" / "ckpt" / "last.pt") == digest
    (done,) = result.pulled
    assert done.resumed_from == 0 and sent == size
    why = "the box's file changed since the part was kept"
    assert result.again == (("ckpt/last.pt", size, why),)
    assert result.moved == size  # it crossed the link once in this pull
    said = format_pull_result(result)
    assert f"AGAIN     ckpt/last.pt (40M) came again whole: {why}" in said, said
