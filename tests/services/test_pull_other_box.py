"""A results folder holding another box's pulled copy (a box torn down and a new one added
under its name, h619 #2): the pull refuses it on the listing, before anything is
written, and says how to keep that copy; the same box pulls on as before."""

from __future__ import annotations

import pytest
from support.pulls import box_results, fast, host_of, pull, random_file

from rgt_tui.services.pull import PullError


async def test_a_new_box_under_the_name_is_refused_and_the_old_copy_is_left_whole(
    make_loopback_fleet, tmp_path
):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    random_file(res / "ckpt.pt", 4096)
    (res / "metrics.json").write_text('{"acc": 0.9}')
    first = await pull(host_of(fleet), tmp_path, options=fast())
    assert first.ok
    dest = tmp_path / "box1"
    kept = {p.name: p.read_bytes() for p in dest.iterdir() if p.is_file()}

    # Another box now answers under the name: its own id, its own files.
    box_id = fleet.box("box1").root / ".rgt" / "box-id"
    old_id = box_id.read_text().strip()
    box_id.write_text("f" * 32 + "\n")
    random_file(res / "ckpt.pt", 8192)
    (res / "metrics.json").write_text('{"acc": 0.1}')
    with pytest.raises(PullError) as refused:
        await pull(host_of(fleet), tmp_path, options=fast())
    said = str(refused.value)
    # The same host key (one loopback box), another id: another login's ~/.rgt.
    assert "holds the pulled copy of another account on this same machine, not of" in said
    assert f"(box id {old_id[:12]}, now ffffffffffff, with the same host key)" in said, said
    assert "nothing was pulled" in said, said
    assert f"mv {dest} {dest}-{old_id[:12]}" in said, said
    assert {p.name: p.read_bytes() for p in dest.iterdir() if p.is_file()} == kept
    assert not (dest / ".rgt" / "replaced").exists()

    # Its folder moved away, the new box pulls into a fresh one.
    dest.rename(tmp_path / f"box1-{old_id[:12]}")
    again = await pull(host_of(fleet), tmp_path, options=fast())
    assert again.ok and (dest / "metrics.json").read_text() == '{"acc": 0.1}'


def test_the_refusal_tells_a_box_from_an_account_and_an_unreported_id_by_its_key():
    """Review h620 #7: the same host key under another id is another login on the same
    machine, said so; with no id reported, the host keys still tell two machines apart."""
    from pathlib import Path

    from rgt_tui.domain.manifest import Manifest
    from rgt_tui.services.pull.other_box import other_box_refusal

    def m(box_id, key):  # type: ignore[no-untyped-def]
        return Manifest("gpuA", (), (), taken_at=1.0, box_id=box_id, host_key=key)

    dest = Path("/r/gpuA")
    a, b = "a" * 32, "b" * 32
    assert other_box_refusal(m(a, "K1"), m(a, "K1"), dest) is None
    assert other_box_refusal(None, m(a, "K1"), dest) is None
    assert other_box_refusal(m(None, "K1"), m(None, "K1"), dest) is None
    box = str(other_box_refusal(m(a, "K1"), m(b, "K2"), dest))
    assert "another box, not of the one answering now (box aaaaaaaaaaaa, now box bbbb" in box
    account = str(other_box_refusal(m(a, "K1"), m(b, "K1"), dest))
    assert "another account on this same machine" in account, account
    unreported = str(other_box_refusal(m(a, "K1"), m(None, "K2"), dest))
    assert "another box, not of the one answering now (another host key)" in unreported
