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


def _box1_working_on(fleet, code, root, disk):  # type: ignore[no-untyped-def]
    """box1 with ``code`` as its tree and its workdir on ``disk`` (``root``'s was)."""
    add_code(fleet.hosts_file, code)
    text = fleet.hosts_file.read_text()
    fleet.hosts_file.write_text(
        text.replace(f'workdir = "{root}"', f'workdir = "{disk / "code"}"', 1)
    )
    return load_fleet(fleet.hosts_file).host("box1")


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
        host = _box1_working_on(fleet, code, root, disk)
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


async def test_small_files_are_counted_in_the_disks_blocks(make_loopback_fleet, tmp_path):
    """h603 #4: 3,000 small files and a big one fit by their sizes, not by the disk's 4 KiB
    blocks: the sync went on and failed as rsync's "error in file IO … check the
    connection". 1,200 files of 100 bytes (120 KB, 4.9 MB in blocks) on a 4 MiB disk."""
    fleet = await make_loopback_fleet(1)
    code = tmp_path / "proj"
    for i in range(1200):
        write(code, f"pkg/m{i:04d}.py", "x = 1\n" * 16)
    root = fleet.box("box1").root
    with tmpfs(root / "small", "4m") as disk:
        host = _box1_working_on(fleet, code, root, disk)
        transport = transport_for(host)
        try:
            with pytest.raises(SyncError) as refused:
                await sync_code(host, transport, method="rsync")
        finally:
            await transport.close()
        said = f"{refused.value.message} — {refused.value.fix}"
        assert f"the box's disk holding {disk / 'code'} has" in said, said
        assert "this sync needs 4.7M there, in its 4 KiB blocks" in said, said


def test_rsyncs_own_cause_is_said_not_only_its_last_line(tmp_path):
    """h603 #4: a full disk and a file gone while sent read "rsync exited with 11: rsync
    error: error in file IO (code 11) … check the connection": rsync's cause lines were
    dropped. Real rsync's words: into a full tmpfs, and of a file that is not there."""
    import subprocess

    from rgt_tui.services.code_sync.rsync import rsync_failure

    src = tmp_path / "src"
    src.mkdir()
    (src / "big.bin").write_bytes(os.urandom(3 << 20))
    with tmpfs(tmp_path / "full", "1m") as disk:
        done = subprocess.run(
            ["rsync", "-a", f"{src}/", f"{disk}/"], capture_output=True, text=True
        )
    said = rsync_failure("box1", done.returncode, done.stderr)
    assert done.returncode == 11 and "No space left on device" in said.message, said
    assert "check the connection" not in said.fix and "disk holding the workdir is full" in (
        said.fix
    ), said.fix
    assert "Broken pipe" not in said.message, said.message
    gone = subprocess.run(
        ["rsync", "-a", str(src / "gone.py"), str(tmp_path / "to") + "/"],
        capture_output=True,
        text=True,
    )
    said = rsync_failure("box1", gone.returncode, gone.stderr)
    assert gone.returncode == 23 and "No such file or directory" in said.message, said
    assert "changed or vanished here while it was sent" in said.fix, said.fix


def test_rsyncs_cause_comes_before_an_ssh_banner_and_a_local_file_is_not_the_boxs():
    """Review h605 #4: a login banner on stderr put "ssh: ** Authorized use only **" in the
    message and hid the full disk; a file here rsync could not read was blamed on the box.
    The lines as rsync 3.2 and sshd write them."""
    from rgt_tui.services.code_sync.rsync import rsync_failure

    banner = (
        "** Authorized use only **\n"
        'rsync: [receiver] write failed on "/w/big.bin": No space left on device (28)\n'
        "rsync error: error in file IO (code 11) at receiver.c(380) [receiver=3.2.7]\n"
    )
    said = rsync_failure("box1", 11, banner)
    assert "No space left on device" in said.message and "Authorized" not in said.message
    local = (
        'rsync: [sender] send_files failed to open "/home/me/proj/a.py": Permission denied (13)\n'
        "rsync error: some files/attrs were not transferred (see previous errors) (code 23)\n"
    )
    said = rsync_failure("box1", 23, local)
    assert "a file of the code tree here cannot be read" in said.fix, said.fix
    refused = (
        "root@10.0.0.5: Permission denied (publickey).\n"
        "rsync: connection unexpectedly closed (0 bytes received so far) [sender]\n"
        "rsync error: unexplained error (code 255) at io.c(232) [sender=3.2.7]\n"
    )
    said = rsync_failure("box1", 255, refused)
    assert (
        said.message == "rsync exited with 255: ssh: root@10.0.0.5: Permission denied (publickey)."
    )
    assert "found no key box1 accepts" in said.fix, said.fix
