"""Transport.put_file (code sync's SFTP path): a new file, exact mode, never through a link."""

from __future__ import annotations

import os
import stat

import pytest

from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.transport import transport_for
from rgt_tui.transport.local import LocalTransport


async def _check(t, box_dir, tmp_path):
    source = tmp_path / "src.py"
    source.write_bytes(b"x" * (3 << 20) + b"end\n")  # several pieces
    outside = tmp_path / "outside.txt"
    outside.write_text("keep\n")
    (box_dir / "link.py").symlink_to(outside)
    pieces: list[int] = []
    await t.put_file(source, f"{box_dir}/new.sh", mode=0o755, on_bytes=pieces.append)
    await t.put_file(source, f"{box_dir}/plain.py", mode=0o644)
    with pytest.raises(FileExistsError):
        await t.put_file(source, f"{box_dir}/link.py", mode=0o644)
    with pytest.raises(ValueError):
        await t.put_file(source, f"{box_dir}/wide.py", mode=0o777)
    assert (box_dir / "new.sh").read_bytes() == source.read_bytes()
    assert sum(pieces) == source.stat().st_size and len(pieces) > 1
    assert stat.S_IMODE((box_dir / "new.sh").stat().st_mode) == 0o755
    assert stat.S_IMODE((box_dir / "plain.py").stat().st_mode) == 0o644
    assert outside.read_text() == "keep\n" and (box_dir / "link.py").is_symlink()
    assert sorted(os.listdir(box_dir)) == ["link.py", "new.sh", "plain.py"]  # no temp left


async def test_put_file_on_this_machine(tmp_path):
    box = tmp_path / "box"
    box.mkdir()
    old = os.umask(0o077)  # a tight umask must not narrow the mode asked for
    try:
        await _check(LocalTransport(), box, tmp_path)
    finally:
        os.umask(old)


async def test_put_file_over_sftp(make_loopback_fleet, tmp_path):
    fleet = await make_loopback_fleet(1)
    box = fleet.box("box1").root / "code"
    box.mkdir()
    t = transport_for(load_fleet(fleet.hosts_file).host("box1"))
    try:
        await t.connect()
        await _check(t, box, tmp_path)
    finally:
        await t.close()
