"""A sync that cannot fit on the box's disk is refused before a byte is sent, saying so
(hour s17b #5): a full workdir disk read as rsync's "Broken pipe … check the connection"
or SFTP's "Failure … sync again". The box's workdir on a real small tmpfs (CI runs as
root), over a real loopback box."""

from __future__ import annotations

import os

import pytest
from support.code_trees import add_code, staging_left, write
from support.machine import tmpfs

from rgt_tui.services.code_sync import SyncError, sync_code
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.transport import transport_for


async def test_a_sync_bigger_than_the_box_disk_is_refused_naming_the_space(
    make_loopback_fleet, tmp_path
):
    fleet = await make_loopback_fleet(1)
    code = tmp_path / "proj"
    write(code, "train.py", "print('hi')\n")
    (code / "data").mkdir()
    (code / "data" / "blob.bin").write_bytes(os.urandom(6 << 20))
    root = fleet.box("box1").root
    with tmpfs(root / "small", "4m") as disk:
        add_code(fleet.hosts_file, code)
        text = fleet.hosts_file.read_text()
        fleet.hosts_file.write_text(
            text.replace(f'workdir = "{root}"', f'workdir = "{disk / "code"}"', 1)
        )
        host = load_fleet(fleet.hosts_file).host("box1")
        assert host.workdir == str(disk / "code")
        transport = transport_for(host)
        try:
            for method in ("rsync", "sftp"):
                with pytest.raises(SyncError) as refused:
                    await sync_code(host, transport, method=method)
                said = f"{refused.value.message} — {refused.value.fix}"
                assert f"the box's disk holding {disk / 'code'} has" in said, said
                assert "data/blob.bin alone is 6.0M" in said, said
                assert 'code_exclude = ["data/"]' in said, said
        finally:
            await transport.close()
        assert not (disk / "code").exists() or not staging_left(disk / "code")
