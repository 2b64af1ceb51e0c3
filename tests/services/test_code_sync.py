"""Code sync over loopback asyncssh boxes (U42): what is sent, what stays, what is refused."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest
from support.code_trees import add_code, box_files, git, git_tree, staging_left, write
from support.queues import GATE, SCRIPT_RUN, wait_view

from rgt_tui.domain.queue_state import FINISHED
from rgt_tui.services.code_sync import SyncError, code_status, sync_code
from rgt_tui.services.code_sync.box import stage_on_box, switch_on_box
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.queue.launch import launch, plan_launch
from rgt_tui.transport import transport_for


async def _box1(make_loopback_fleet, code, exclude=()):
    fleet = await make_loopback_fleet(1)
    add_code(fleet.hosts_file, code, exclude)
    host = load_fleet(fleet.hosts_file).host("box1")
    return host, fleet.box("box1").root


def _mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


async def test_a_git_tree_is_synced_without_its_ignored_folder_and_box_only_files_stay(
    make_loopback_fleet, tmp_path
):
    code = tmp_path / "proj"
    head = git_tree(code)
    write(code, "secret/key.txt", "not for the box\n")  # untracked, left out by code_exclude
    write(code, "new.py", "NEW = 1\n")  # untracked, not ignored: sent, and the tree is dirty
    host, root = await _box1(make_loopback_fleet, code, ("secret/",))
    write(root, "old_results.log", "the box's own\n")  # ignored here, not in the tree: left alone
    before = box_files(root)
    seen: list[tuple[int, int, str]] = []
    t = transport_for(host)
    try:
        result = await sync_code(host, t, method="sftp", on_progress=lambda *a: seen.append(a))
        status = await code_status(host, t)
        again = await sync_code(host, t, method="sftp")
    finally:
        await t.close()
    sent = {".gitignore", "src/train.py", "src/model/net.py", "run.sh", "new.py"}
    assert box_files(root) == before | sent
    assert (root / "old_results.log").read_text() == "the box's own\n"
    assert not (root / "data").exists() and not (root / "notes.log").exists()
    assert _mode(root / "run.sh") == 0o755 and _mode(root / "src/train.py") == 0o644
    assert (result.method, result.files_sent, result.files_total) == ("sftp", 5, 5)
    assert result.bytes_sent == sum((code / p).stat().st_size for p in sent)
    assert result.identity.commit == head and result.identity.dirty
    assert seen and seen[-1][0] == seen[-1][1] == result.bytes_sent
    assert status is not None and status.in_sync and status.box is not None
    assert status.box.tree == status.local.tree == result.identity.tree
    assert status.problem() == (
        f"uncommitted changes in {code}: new.py (1 file) — commit them, or acknowledge the code check"
    )
    assert (again.method, again.files_sent) == ("none", 0)
    assert not staging_left(root)


async def test_a_file_changed_on_the_box_is_found_by_hash_and_only_it_is_sent(
    make_loopback_fleet, tmp_path
):
    code = tmp_path / "proj"
    git_tree(code)
    host, root = await _box1(make_loopback_fleet, code)
    t = transport_for(host)
    try:
        await sync_code(host, t, method="sftp")
        # Same size, same mtime second: only the hash can tell.
        target = root / "src" / "train.py"
        st = target.stat()
        target.write_text("print('TRAIN')\n")
        os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
        (root / "run.sh").chmod(0o644)  # the executable bit counts too
        status = await code_status(host, t)
        result = await sync_code(host, t, method="sftp")
        after = await code_status(host, t)
    finally:
        await t.close()
    assert status is not None and not status.in_sync
    assert status.differs == ("run.sh", "src/train.py") and status.differ_count == 2
    problem = status.problem()
    assert problem is not None
    assert "2 files missing or changed (run.sh, src/train.py)" in problem
    # Both were changed on the box since the sync put them there: the check says a sync
    # overwrites them (ux-d #14).
    assert status.box_edited == ("run.sh", "src/train.py")
    assert problem.endswith(
        "run.sh, src/train.py were changed on the box since the last sync: rgt-tui sync box1 "
        "replaces them, keeping the box's copies in ~/.rgt/sync-kept/ there"
    )
    assert status.fix() == "rgt-tui sync box1"
    assert status.box is not None and status.box.tree != status.local.tree
    assert result.files_sent == 2 and result.overwritten == ("run.sh", "src/train.py")
    assert target.read_text() == "print('train')\n" and _mode(root / "run.sh") == 0o755
    # The box's edits were kept before the switch, never lost (a user's hour).
    kept = Path(result.kept_in)
    assert kept.parent.name == "sync-kept" and kept.parent.parent.name == ".rgt"
    assert (kept / "src" / "train.py").read_text() == "print('TRAIN')\n"
    assert _mode(kept / "run.sh") == 0o644
    assert after is not None and after.in_sync and after.problem() is None


async def test_a_plain_tree_honours_its_gitignore_files_and_code_exclude(
    make_loopback_fleet, tmp_path
):
    code = tmp_path / "plain"
    write(code, ".gitignore", "*.pyc\ncache/\n!keep.pyc\n")
    write(code, "a.py", "A\n")
    write(code, "a.pyc", "compiled\n")
    write(code, "keep.pyc", "kept\n")
    write(code, "cache/x.py", "cached\n")
    write(code, "sub/.gitignore", "local.txt\n")
    write(code, "sub/local.txt", "only here\n")
    write(code, "sub/b.py", "B\n")
    write(code, "scratch.tmp", "tmp\n")
    write(code, ".git/config", "not a repo, but never sent\n")
    (code / "link.py").symlink_to(code / "a.py")
    os.mkfifo(code / "pipe")
    host, root = await _box1(make_loopback_fleet, code, ("*.tmp",))
    before = box_files(root)
    t = transport_for(host)
    try:
        result = await sync_code(host, t, method="sftp")
    finally:
        await t.close()
    sent = {".gitignore", "a.py", "keep.pyc", "sub/.gitignore", "sub/b.py"}
    assert box_files(root) == before | sent
    assert result.identity.commit == "" and not result.identity.dirty
    assert sorted(result.skipped) == [
        "link.py (a symlink: not followed)",
        "pipe (not a regular file)",
    ]


async def test_a_repository_inside_the_tree_and_an_odd_name_are_said_each_with_its_fix(
    make_loopback_fleet, tmp_path
):
    """h603 #8, #9: a repository inside a git tree (git lists it as one entry) was left out
    as "not a regular file", with the fix for a symlink; a name not UTF-8 read '\\udcff'."""
    from support.code_trees import git, git_tree

    from rgt_tui.services.code_sync.types import skipped_note

    code = tmp_path / "proj"
    write(code, "train.py", "import lib\n")
    inner = code / "third_party" / "lib"
    write(inner, "lib.py", "X = 1\n")
    git(inner, "init", "-q")
    git(inner, "add", "-A")
    git(inner, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "inner")
    (code / os.fsdecode(b"odd\xff.py")).write_text("Y = 1\n")
    git_tree(code)  # the outer tree: the inner one is a gitlink entry
    host, root = await _box1(make_loopback_fleet, code)
    t = transport_for(host)
    try:
        result = await sync_code(host, t, method="sftp")
    finally:
        await t.close()
    assert "third_party/lib/ (a git repository inside the tree: its files are not sent)" in (
        result.skipped
    ), result.skipped
    assert "'odd\\xff.py' (a name with control characters or not UTF-8)" in result.skipped
    note = skipped_note(result.skipped)
    assert "install it on the box, or vendor its files" in note, note
    assert "rename a file whose name is not plain text" in note and "symlink" not in note
    # The box holds the inner repository's files (cloned there, or synced before the
    # tree became a git one): "git check-ignore failed … is in submodule" (h606 #1).
    write(root, "third_party/lib/lib.py", "X = 1\n")
    t = transport_for(host)
    try:
        again = await sync_code(host, t, method="sftp")
        status = await code_status(host, t)
    finally:
        await t.close()
    assert status is not None and again.skipped == result.skipped


async def test_a_box_symlink_is_never_followed_or_written_through(make_loopback_fleet, tmp_path):
    code = tmp_path / "proj"
    write(code, "config.py", "LOCAL = 1\n")
    write(code, "lib/util.py", "UTIL = 1\n")
    outside = tmp_path / "outside"
    write(outside, "config.py", "LOCAL = 1\n")  # same content: still not "in sync"
    write(outside, "libdir/util.py", "UTIL = 1\n")
    host, root = await _box1(make_loopback_fleet, code)
    (root / "config.py").symlink_to(outside / "config.py")
    (root / "lib").symlink_to(outside / "libdir")
    t = transport_for(host)
    try:
        status = await code_status(host, t)
        with pytest.raises(SyncError) as refused:
            await sync_code(host, t, method="sftp")
        (root / "lib").unlink()  # the user moves the linked folder aside
        result = await sync_code(host, t, method="sftp")
    finally:
        await t.close()
    assert status is not None and status.differs == ("config.py", "lib/util.py")
    assert f"{root}/lib is a symlink on the box" in refused.value.message
    assert result.files_sent == 2
    # The link at config.py was replaced by the file; what it pointed at is unchanged.
    assert not (root / "config.py").is_symlink()
    assert (root / "config.py").read_text() == "LOCAL = 1\n"
    assert (outside / "config.py").read_text() == "LOCAL = 1\n"
    assert sorted(os.listdir(outside / "libdir")) == ["util.py"]
    assert not staging_left(root)


async def test_a_leftover_staging_dir_is_removed_by_the_next_sync(make_loopback_fleet, tmp_path):
    code = tmp_path / "proj"
    write(code, "a.py", "A\n")
    host, root = await _box1(make_loopback_fleet, code)
    write(root, ".rgt-sync.0badc0ffee00/a.py", "half sent\n")  # another sync's, sending now
    t = transport_for(host)
    try:
        # h603 #6: removing it broke that sync mid-send ("no such file on box2"). Written
        # to within 2 minutes, it is left alone, and this sync refused, saying why.
        with pytest.raises(SyncError) as refused:
            await sync_code(host, t, method="sftp")
        assert "another sync is sending to " in refused.value.message
        assert ".rgt-sync.0badc0ffee00" in refused.value.message
        assert (root / ".rgt-sync.0badc0ffee00" / "a.py").read_text() == "half sent\n"
        # An interrupted sync's (nothing written for 5 minutes): removed by the next.
        old = time.time() - 300
        for p in (root / ".rgt-sync.0badc0ffee00" / "a.py", root / ".rgt-sync.0badc0ffee00"):
            os.utime(p, (old, old))
        result = await sync_code(host, t, method="sftp")
    finally:
        await t.close()
    assert result.files_sent == 1 and (root / "a.py").read_text() == "A\n"
    assert not (root / ".rgt-sync.0badc0ffee00").exists()


async def test_a_sync_is_refused_while_the_queue_runs_and_rewrites_nothing(
    make_queue_fleet, tmp_path
):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    code = tmp_path / "proj"
    write(code, "train.py", "V1\n")
    # The queue's cells are written into the workdir by the test, not synced: not code.
    add_code(qf.loopback.hosts_file, code, ("cells/",))
    gate = qf.cell_script("gate", GATE)
    qf.write_queue(f"{gate} t 1\n")
    host, root = qf.host(), qf.root()
    t = qf.transport()
    try:
        await sync_code(host, t, method="sftp")
        # A sync that staged before the queue started: its switch is refused at the box.
        staging, _ = await stage_on_box(t, "box1", host.workdir, "abc123", "rgt-box1", [])
        await t.put_file(code / "train.py", f"{staging}/late.py", mode=0o644)
        plan = await plan_launch(qf.fleet, host, t)
        assert plan.ok, plan.problems
        await launch(plan, t)
        with pytest.raises(SyncError) as late:
            await switch_on_box(t, "box1", host.workdir, "abc123", "rgt-box1", ["late.py"])
        assert "is running" in late.value.message and not (root / "late.py").exists()
        write(code, "train.py", "V2\n")
        write(code, "new.py", "NEW\n")
        with pytest.raises(SyncError) as refused:
            await sync_code(host, t, method="sftp")
        status = await code_status(host, t)
        assert (root / "train.py").read_text() == "V1\n" and not (root / "new.py").exists()
        assert not staging_left(root)
        (root / "go").touch()
        await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to finish")
        result = await sync_code(host, t, method="sftp")
    finally:
        await t.close()
    message = refused.value.message
    assert "the queue on box1 is running (runner pid" in message
    assert "a sync never rewrites files a running queue uses" in message
    assert refused.value.fix == "wait for the queue to finish (or stop it), then rgt-tui sync box1"
    assert status is not None and status.differs == ("new.py", "train.py")
    assert result.files_sent == 2 and (root / "train.py").read_text() == "V2\n"


async def test_no_code_set_is_no_status_and_a_sync_says_what_to_set(make_loopback_fleet):
    fleet = await make_loopback_fleet(1)
    host = load_fleet(fleet.hosts_file).host("box1")
    t = transport_for(host)
    try:
        assert await code_status(host, t) is None
        with pytest.raises(SyncError) as refused:
            await sync_code(host, t)
    finally:
        await t.close()
    assert refused.value.message == "no code directory is set for box1"
    assert "code = " in refused.value.fix


def test_git_is_the_judge_of_dirty(tmp_path):
    from rgt_tui.services.code_sync.listing import list_tree

    code = tmp_path / "proj"
    head = git_tree(code)
    clean = list_tree(code, (), "h")
    write(code, "src/train.py", "changed\n")
    dirty = list_tree(code, (), "h")
    git(code, "commit", "-qam", "second")
    assert (clean.commit, clean.dirty) == (head, False)
    assert dirty.dirty and dirty.identity.tree != clean.identity.tree
    assert [f.path for f in clean.files] == [
        ".gitignore",
        "run.sh",
        "src/model/net.py",
        "src/train.py",
    ]


async def test_this_machine_is_synced_by_a_plain_copy(tmp_path, home):
    code = tmp_path / "proj"
    git_tree(code)
    workdir = tmp_path / "work"
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(f'[[hosts]]\nname = "here"\nssh = "local"\nworkdir = "{workdir}"\n')
    add_code(hosts, code)
    host = load_fleet(hosts).host("here")
    t = transport_for(host)
    result = await sync_code(host, t)
    assert (result.method, result.files_sent) == ("copy", 4)
    assert (workdir / "run.sh").read_text() == "#!/bin/sh\necho run\n"
    assert _mode(workdir / "run.sh") == 0o755 and not (workdir / "data").exists()


@pytest.mark.parametrize("method", ["sftp", "rsync"])
async def test_a_file_the_tree_turned_into_a_folder_and_back_syncs(
    make_loopback_fleet, tmp_path, method
):
    """``thing`` synced as a file, then made a folder here: the sync refused "a file where
    the tree has a directory: move it aside", although the box's copy was the one the sync
    put there, unchanged, and --check said only that it would be removed (s36 acts hour
    #6). It goes first, by the prune's rule; and back again, a folder to a file."""
    code = tmp_path / "proj"
    git_tree(code)
    write(code, "thing", "a file\n")
    host, root = await _box1(make_loopback_fleet, code)
    t = transport_for(host)
    try:
        await sync_code(host, t, method=method)
        assert (root / "thing").read_text() == "a file\n"
        (code / "thing").unlink()
        write(code, "thing/x.py", "X = 1\n")
        checked_folder = await code_status(host, t)  # not "move it aside": sync does
        to_folder = await sync_code(host, t, method=method)
        assert (root / "thing" / "x.py").read_text() == "X = 1\n"
        assert "thing" in to_folder.removed and to_folder.kept_in == ""
        (code / "thing" / "x.py").unlink()
        (code / "thing").rmdir()
        write(code, "thing", "a file again\n")
        checked_file = await code_status(host, t)
        to_file = await sync_code(host, t, method=method)
        assert (root / "thing").read_text() == "a file again\n"
        assert "thing/x.py" in to_file.removed
        status = await code_status(host, t)
    finally:
        await t.close()
    assert status is not None and status.in_sync
    for checked in (checked_folder, checked_file):
        assert checked is not None and checked.in_the_way == "", checked.in_the_way
        assert checked.fix() == "rgt-tui sync box1"
    assert not staging_left(root)
