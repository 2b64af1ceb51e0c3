"""A folder the box cannot create is refused with mkdir's own reason (hour s17b, finding
6): only a full disk is pointed at df; a file in the way or a read-only mount is said as
that, with the fleet-file key that names the folder. Over the real loopback box, as root
(a chmod stops no one there, so the refusals come from a file on the path, a read-only
tmpfs and a tmpfs out of inodes)."""

from __future__ import annotations

import dataclasses

import pytest
from support.code_trees import add_code, write
from support.machine import read_only_tmpfs, tmpfs

from rgt_tui.services.box_script import after_queue_ctl, box_refusal, run_box_script
from rgt_tui.services.code_sync import SyncError, sync_code
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.transport import transport_for


async def _sync_refused(make_loopback_fleet, tmp_path, workdir) -> str:
    code = tmp_path / "proj"
    write(code, "a.py", "A\n")
    fleet = await make_loopback_fleet(1)
    add_code(fleet.hosts_file, code)
    host = dataclasses.replace(load_fleet(fleet.hosts_file).host("box1"), workdir=str(workdir))
    t = transport_for(host)
    try:
        with pytest.raises(SyncError) as refused:
            await sync_code(host, t, method="sftp")
    finally:
        await t.close()
    return refused.value.message


async def test_a_workdir_under_a_file_says_a_file_is_in_the_way(make_loopback_fleet, tmp_path):
    afile = tmp_path.resolve() / "afile"
    afile.write_text("a file, not a folder\n")
    message = await _sync_refused(make_loopback_fleet, tmp_path, afile / "code")
    assert message == (
        f"cannot stage the code in {afile}/code: cannot create {afile}/code: Not a directory: "
        "a file is in the way on that path — move it aside, or set workdir to another folder"
    )


async def test_a_full_disk_is_the_only_reason_pointed_at_df(make_loopback_fleet, tmp_path):
    with tmpfs(tmp_path / "full", inodes=8) as full:
        with pytest.raises(OSError):  # every inode used: a real ENOSPC for mkdir
            for i in range(100):
                (full / f"f{i}").touch()
        message = await _sync_refused(make_loopback_fleet, tmp_path, full / "code")
    assert message == (
        f"cannot stage the code in {full}/code: cannot create {full}/code: "
        "No space left on device (df -h; df -i)"
    )


async def test_a_durable_dir_on_a_read_only_mount_is_said_so(make_loopback_fleet, tmp_path):
    fleet = await make_loopback_fleet(1)
    host = load_fleet(fleet.hosts_file).host("box1")
    t = transport_for(host)
    try:
        await t.connect()
        with read_only_tmpfs(tmp_path / "ro") as ro:
            result = await run_box_script(
                t, after_queue_ctl("resume_ctl.sh"), "resume_ctl", "stage", str(ro / "ckpts"),
                "abc123", input="", timeout=30,
            )  # fmt: skip
    finally:
        await t.close()
    refused = box_refusal(result, "resume_ctl")
    assert refused is not None and refused.code == "io"
    assert refused.message == (
        f"cannot create {ro}/ckpts: Read-only file system: it is on a read-only mount — "
        "set durable_dir to a folder this login can write"
    )


async def test_a_push_that_finds_its_out_filled_since_the_plan_does_not_say_move_it_aside(
    make_loopback_fleet, tmp_path
):
    """Two moves of one cell: the second's push finds {out} filled by the first, whose run
    there resumes from it (h592 #5). Refused without the advice to move it aside."""
    fleet = await make_loopback_fleet(1)
    host = load_fleet(fleet.hosts_file).host("box1")
    durable = tmp_path.resolve() / "ckpts"
    t = transport_for(host)

    async def ctl(*args: str):
        result = await run_box_script(
            t, after_queue_ctl("resume_ctl.sh"), "resume_ctl", *args, input="", timeout=30
        )
        return result, box_refusal(result, "resume_ctl")

    try:
        await t.connect()
        _, refused = await ctl("stage", str(durable), "abc123")
        assert refused is None
        (durable / "cell").mkdir()
        (durable / "cell" / "last.pt").write_bytes(b"the other move's checkpoint")
        _, refused = await ctl("commit", str(durable), "cell", "abc123")
    finally:
        await t.close()
    assert refused is not None and refused.code == "exists"
    assert refused.message == (
        f"{durable}/cell holds files written since the move was planned (another move of "
        "this cell, or the cell itself running there?): look at them (rgt-tui queue show) "
        "before moving anything there aside"
    )
    assert (durable / "cell" / "last.pt").read_bytes() == b"the other move's checkpoint"


async def test_a_file_that_cannot_be_switched_in_says_why_and_that_a_sync_finishes_it(
    make_loopback_fleet, tmp_path
):
    """h603 #5: a folder of the workdir the login cannot write (here a read-only mount:
    root ignores modes) stopped the switch with "cannot move configs/a.yaml into place
    (0 of 2 files switched)": no reason, no way on."""
    code = tmp_path / "proj"
    write(code, "a.py", "A\n")
    write(code, "configs/a.yaml", "lr: 1\n")
    fleet = await make_loopback_fleet(1)
    add_code(fleet.hosts_file, code)
    workdir = tmp_path.resolve() / "work"
    (workdir / "configs").mkdir(parents=True)
    host = dataclasses.replace(load_fleet(fleet.hosts_file).host("box1"), workdir=str(workdir))
    t = transport_for(host)
    try:
        with read_only_tmpfs(workdir / "configs"), pytest.raises(SyncError) as refused:
            await sync_code(host, t, method="sftp")
    finally:
        await t.close()
    said = refused.value.message
    assert "cannot move configs/a.yaml into place: Read-only file system: it is on a " in (said), (
        said
    )
    assert "files switched; once that is fixed, sync again to switch the rest)" in said, said
