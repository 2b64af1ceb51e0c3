"""A box without ``sha256sum`` (a minimal image) refuses a sync with the tool named and
a fix line to install it (h543 #7: the message said "install coreutils", the fix line
nothing). A real loopback box whose PATH holds every tool of this machine but that one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.code_trees import add_code, write

from rgt_tui.services.code_sync import SyncError, sync_code
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.transport import transport_for


def path_without(tmp_path: Path, tool: str) -> str:
    """A bin folder of links to every command of this machine's PATH but ``tool``."""
    bin_dir = tmp_path / "bin-without"
    bin_dir.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(folder):
            continue
        for name in os.listdir(folder):
            link = bin_dir / name
            if name != tool and not link.exists() and not link.is_symlink():
                link.symlink_to(Path(folder) / name)
    return str(bin_dir)


async def test_a_box_without_sha256sum_says_how_to_get_it(make_loopback_fleet, tmp_path):
    fleet = await make_loopback_fleet(1)
    fleet.box("box1").extra_env["PATH"] = path_without(tmp_path, "sha256sum")
    code = tmp_path / "proj"
    write(code, "train.py", "print('hi')\n")
    add_code(fleet.hosts_file, code)
    host = load_fleet(fleet.hosts_file).host("box1")
    transport = transport_for(host)
    try:
        with pytest.raises(SyncError) as refused:
            await sync_code(host, transport, method="sftp")
    finally:
        await transport.close()
    assert "sha256sum is not installed on the box" in refused.value.message
    assert refused.value.fix.startswith("install coreutils on the box (rgt-tui shell box1;")
