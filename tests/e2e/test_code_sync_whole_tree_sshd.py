"""Issue 39 over OpenSSH's sshd, by rsync and through the command line: a file the commit
renamed fails `sync --check` by name (exit 1) until a sync removes it; the box's own
files stay."""

from __future__ import annotations

from support.cli import rgt
from support.code_trees import add_code, git, git_tree, write

from rgt_tui.services.code_sync import code_status, sync_code
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.transport import transport_for


def _tree(code):
    git_tree(code)
    write(code, "configs/exp.yaml", "lr: 0.1\n")
    git(code, "add", "-A")
    git(code, "commit", "-q", "-m", "config")


async def test_rsync_sync_removes_what_the_commit_renamed_and_nothing_else(
    openssh_server, tmp_path
):
    server = openssh_server
    code = tmp_path / "proj"
    _tree(code)
    add_code(server.hosts_file, code)
    host = load_fleet(server.hosts_file).host(server.host_name)
    root = server.workdir
    t = transport_for(host)
    try:
        first = await sync_code(host, t)
        write(root, "mine.txt", "the box's own\n")
        git(code, "mv", "configs/exp.yaml", "configs/exp_v2.yaml")
        git(code, "commit", "-q", "-m", "rename")
        stale = await code_status(host, t)
        result = await sync_code(host, t)
    finally:
        await t.close()
    assert first.method == "rsync" and result.method == "rsync", result.note
    assert stale is not None and stale.box_only == ("configs/exp.yaml", "mine.txt")
    assert result.removed == ("configs/exp.yaml",)
    assert result.left == ("mine.txt (not put there by rgt-tui sync)",)
    assert not (root / "configs/exp.yaml").exists()
    assert (root / "mine.txt").read_text() == "the box's own\n"


def test_sync_check_names_the_box_only_file_and_exits_1_until_a_sync_removes_it(
    openssh_server, tmp_path
):
    server = openssh_server
    code = tmp_path / "proj"
    _tree(code)
    add_code(server.hosts_file, code)
    hosts = server.hosts_file
    # The queue still names the config the rename takes away (hour s20b #6).
    queue = tmp_path / "queue.txt"
    queue.write_text("configs/exp.yaml train 1\n")
    with open(hosts, "a") as f:
        f.write(f'queue = "{queue}"\nrun = "python3 train.py {{cfg}} {{out}}"\n')
    synced = rgt("sync", "real1", "--hosts", hosts)
    git(code, "mv", "configs/exp.yaml", "configs/exp_v2.yaml")
    git(code, "commit", "-q", "-m", "rename")
    stale = rgt("sync", "real1", "--check", "--hosts", hosts)
    again = rgt("sync", "real1", "--hosts", hosts)
    same = rgt("sync", "real1", "--check", "--hosts", hosts)
    assert synced.returncode == 0, synced.stderr
    assert stale.returncode == 1, stale.stdout + stale.stderr
    assert "on the box only: configs/exp.yaml" in stale.stdout
    assert "rgt-tui sync real1 removes it" in stale.stdout
    assert again.returncode == 0, again.stderr
    assert "real1: removed configs/exp.yaml (an earlier sync put it there" in again.stdout
    assert f"it is the config of cell exp ({queue}:1): a run or retry of it on real1" in (
        again.stdout
    ), again.stdout
    assert same.returncode == 0 and "real1: in sync (5 files)" in same.stdout
    assert not (server.workdir / "configs/exp.yaml").exists()


async def test_a_kept_copy_cut_short_is_not_left_as_a_backup(openssh_server, tmp_path):
    """h512 #3: a box out of space while keeping its edited copy of a file refused the
    switch, and left the copy cut short in ~/.rgt/sync-kept, which the teardown gate then
    counted as the box's own copy. The box runs out here by its login's file size limit
    (`ulimit -f` in its ~/.bashrc: sshd's bash reads it), as a full disk stops `cp`."""
    import pytest

    from rgt_tui.services.code_sync import SyncError

    server = openssh_server
    code = tmp_path / "proj"
    _tree(code)
    write(code, "src/big.py", "x = 1\n" * 50_000)  # 300 KB
    git(code, "add", "-A")
    git(code, "commit", "-q", "-m", "big")
    add_code(server.hosts_file, code)
    host = load_fleet(server.hosts_file).host(server.host_name)
    root = server.workdir
    t = transport_for(host)
    try:
        await sync_code(host, t, method="sftp")
        edited = "y = 2\n" * 50_000
        write(root, "src/big.py", edited)  # edited on the box: kept before a switch
        write(code, "src/big.py", "z = 3\n" * 50_000)
        (root / ".bashrc").write_text("ulimit -f 100\n")  # 100 KiB a file
        with pytest.raises(SyncError, match="cannot keep the box's copy of src/big.py"):
            await sync_code(host, t, method="sftp")
    finally:
        await t.close()
    assert (root / "src/big.py").read_text() == edited  # nothing switched
    kept = root / ".rgt" / "sync-kept"
    assert not kept.exists() or not any(kept.iterdir()), list(kept.rglob("*"))
