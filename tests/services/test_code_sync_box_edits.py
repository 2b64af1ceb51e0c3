"""ux-d #3, #8, #14, #16, #17: what a sync says about the box's own edits.

- A sync that leaves box-only files says the box still differs (no ✓, no "matches", no
  "already in sync"), as ``--check`` does by failing.
- A file a sync put there and the box edited stays "changed on the box since a sync put
  it there" on the next sync too (the record keeps what the sync installed).
- A tracked file edited on the box is named before (``--check``) and after the sync that
  replaces it, which first keeps the box's copy in ``~/.rgt/sync-kept/<token>/`` there.
- The Readiness lines say when the sync ended, and a sync that sent nothing says so
  (never "by none").

Real components: loopback asyncssh boxes, git, the console entry point.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from support.cli import arun
from support.code_trees import add_code, git, git_tree, write

from rgt_tui.content.ready_text import sync_result_lines
from rgt_tui.services.code_sync import code_status, sync_code
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.transport import transport_for

EDITED = "changed on the box since a sync put it there"


async def _synced_then_edited(make_loopback_fleet, tmp_path):
    """box1 synced with a tree holding configs/exp_v2.yaml; then, on the box, that file and
    src/train.py edited and configs/boxonly.yaml added; here exp_v2.yaml removed by git."""
    loop = await make_loopback_fleet(1)
    code = tmp_path / "proj"
    git_tree(code)
    write(code, "configs/exp_v2.yaml", "lr: 0.2\n")
    git(code, "add", "-A")
    git(code, "commit", "-q", "-m", "exp v2")
    add_code(loop.hosts_file, code)
    host = load_fleet(loop.hosts_file).host("box1")
    root = loop.box("box1").root
    t = transport_for(host)
    try:
        await sync_code(host, t, method="sftp")
    finally:
        await t.close()
    write(root, "configs/exp_v2.yaml", "lr: 0.2  # tuned on the box\n")
    write(root, "configs/boxonly.yaml", "mine: 1\n")
    write(root, "src/train.py", "print('train')\n# box edit\n")
    git(code, "rm", "-q", "configs/exp_v2.yaml")
    git(code, "commit", "-q", "-m", "drop exp v2")
    return loop.hosts_file, host, root


async def test_a_sync_names_box_edits_and_never_says_in_sync_while_the_box_differs(
    make_loopback_fleet, tmp_path
):
    _, host, root = await _synced_then_edited(make_loopback_fleet, tmp_path)
    t = transport_for(host)
    try:
        before = await code_status(host, t)
        first = await sync_code(host, t, method="sftp")
        second = await sync_code(host, t, method="sftp")
        (root / "configs/exp_v2.yaml").unlink()
        (root / "configs/boxonly.yaml").unlink()
        third = await sync_code(host, t, method="sftp")
    finally:
        await t.close()
    # --check names the box edit a sync would overwrite (ux-d #14).
    assert before is not None and before.box_edited == ("src/train.py",)
    assert (
        "src/train.py was changed on the box since the last sync: rgt-tui sync box1 "
        "replaces it, keeping the box's copy in ~/.rgt/sync-kept/ there" in (before.problem() or "")
    )
    # The sync replaced it, kept the box's edit first, and says where.
    assert first.overwritten == ("src/train.py",) and first.files_sent == 1
    assert (root / "src/train.py").read_text() == "print('train')\n"
    kept = Path(first.kept_in) / "src" / "train.py"
    assert kept.read_text() == "print('train')\n# box edit\n"
    assert first.left == (
        f"configs/exp_v2.yaml ({EDITED})",
        "configs/boxonly.yaml (not put there by rgt-tui sync)",
    )
    said = [line.plain for line in sync_result_lines(first, "box1")]
    assert said[0].startswith("⚠ synced 1 file, ") and "✓" not in "".join(said)
    assert said[1].startswith(
        "  the box still differs: 2 files left on it, not in the tree; rgt-tui sync box1 "
        "--check (and preflight's code check) fails until they are removed"
    ), said
    assert "matches" not in "".join(said)
    assert (
        "  src/train.py was changed on the box since the last sync: replaced; the box's "
        f"copy is kept in {first.kept_in} (not pulled: copy what you need home)" in said
    ), said
    # The next sync still knows a sync put exp_v2.yaml there (ux-d #8), sends nothing and
    # says so (ux-d #17: never "by none").
    assert second.left == first.left and second.files_sent == 0 and not second.overwritten
    said = [line.plain for line in sync_result_lines(second, "box1")]
    assert said[0].startswith("⚠ nothing to send to box1 (") and "by none" not in said[0]
    assert "the box still differs: 2 files left on it" in said[1]
    # Once they are gone, the box holds the tree.
    assert not third.left and not third.box_differs
    said = [line.plain for line in sync_result_lines(third, "box1")]
    assert said[0].startswith("✓ box1 already holds the tree (") and "by none" not in said[0]
    assert said[1].startswith("  the box's tree after this screen's sync: ")


async def test_readiness_says_when_the_sync_ended(make_loopback_fleet, tmp_path):
    """ux-d #16: an old result shown in Readiness reads as old: its time, and its date
    on another day."""
    _, host, _ = await _synced_then_edited(make_loopback_fleet, tmp_path)
    t = transport_for(host)
    try:
        result = await sync_code(host, t, method="sftp")
    finally:
        await t.close()
    ended = datetime.fromtimestamp(result.finished)
    today = sync_result_lines(result, "box1", now=result.finished)[0].plain
    later = sync_result_lines(result, "box1", now=result.finished + 3 * 86400)[0].plain
    assert today.endswith(f" · {ended:%H:%M:%S}"), today
    assert later.endswith(f" · {ended:%Y-%m-%d %H:%M}"), later


async def test_cli_sync_says_the_box_still_differs_and_check_names_the_box_edit(
    make_loopback_fleet, tmp_path
):
    hosts, _, _ = await _synced_then_edited(make_loopback_fleet, tmp_path)
    checked = await arun("sync", "box1", "--check", "--hosts", hosts, timeout=120)
    synced = await arun("sync", "box1", "--hosts", hosts, "--sftp", timeout=120)
    again = await arun("sync", "box1", "--hosts", hosts, "--sftp", timeout=120)
    assert checked.returncode == 1
    assert "src/train.py was changed on the box since the last sync" in checked.stdout
    assert synced.returncode == 0, synced.stderr
    assert (
        "box1: src/train.py was changed on the box since the last sync: replaced; the box's "
        "copy is kept in " in synced.stdout
    ), synced.stdout
    assert "/.rgt/sync-kept/" in synced.stdout
    assert "box1: sent 1 of 4 files, " in synced.stdout
    assert "; the box still differs: 2 files left on it" in synced.stdout
    assert again.returncode == 0, again.stderr
    assert "already in sync" not in again.stdout
    assert (
        "box1: nothing to send (4 files already there); the box still differs: 2 files left"
        in again.stdout
    )
    assert f"configs/exp_v2.yaml ({EDITED})" in again.stdout


async def test_an_edit_made_on_the_box_while_the_files_are_sent_is_kept(
    make_loopback_fleet, tmp_path
):
    """Which box files a sync keeps aside was decided from the scan before the upload:
    a file edited on the box while the files were being sent (after the scan, before the
    switch) was replaced with no copy. The box now decides under the queue lock, at the
    switch, against what the last sync put there."""
    _, host, root = await _synced_then_edited(make_loopback_fleet, tmp_path)
    code = tmp_path / "proj"
    t = transport_for(host)
    try:
        await sync_code(host, t, method="sftp")  # the box edits of the setup are kept
        write(code, "src/train.py", "print('train v2')\n")
        write(code, "src/model/net.py", "NET = 2\n")
        git(code, "commit", "-qam", "v2")

        def edit_on_the_box(done: int, total: int, path: str) -> None:
            # During the upload: the scan that chose what to send is already taken.
            write(root, "src/train.py", "print('train')\n# edited during the sync\n")

        result = await sync_code(host, t, method="sftp", on_progress=edit_on_the_box)
    finally:
        await t.close()
    assert (root / "src/train.py").read_text() == "print('train v2')\n"
    assert result.overwritten == ("src/train.py",), result
    kept = Path(result.kept_in)
    assert (kept / "src/train.py").read_text() == "print('train')\n# edited during the sync\n"
    assert (root / "src/model/net.py").read_text() == "NET = 2\n"
    assert not (kept / "src/model/net.py").exists()  # what the last sync put there


async def test_the_check_names_a_file_no_sync_put_there_that_a_sync_would_replace(
    make_loopback_fleet, tmp_path
):
    """`sync --check` named box edits of synced files but was silent about a file the box
    holds that no sync put there (a clone's), which the sync then replaced, keeping a
    copy (a user's hour)."""
    loop = await make_loopback_fleet(1)
    code = tmp_path / "proj"
    git_tree(code)
    add_code(loop.hosts_file, code)
    host = load_fleet(loop.hosts_file).host("box1")
    write(loop.box("box1").root, "src/train.py", "print('cloned on the box')\n")
    t = transport_for(host)
    try:
        status = await code_status(host, t)
    finally:
        await t.close()
    assert status is not None and status.box_found == ("src/train.py",)
    assert (
        "src/train.py is on the box, not put there by a sync: rgt-tui sync box1 replaces it, "
        "keeping the box's copy in ~/.rgt/sync-kept/ there" in (status.problem() or "")
    ), status.problem()


async def test_a_link_the_user_made_on_the_box_is_kept_as_a_link_before_it_is_replaced(
    make_loopback_fleet, tmp_path
):
    """h543 #4: a link on the box where the tree has a file (`eval.py -> results/mine.py`)
    was replaced with no copy and no word. No sync makes links: it is the user's, kept in
    sync-kept (as the link) and named, like a file no sync put there."""
    loop = await make_loopback_fleet(1)
    code = tmp_path / "proj"
    git_tree(code)
    write(code, "eval.py", "print('eval')\n")
    git(code, "add", "-A")
    git(code, "commit", "-q", "-m", "eval")
    add_code(loop.hosts_file, code)
    host = load_fleet(loop.hosts_file).host("box1")
    root = loop.box("box1").root
    write(root, "results/my_real_eval.py", "print('mine')\n")
    (root / "eval.py").symlink_to("results/my_real_eval.py")
    t = transport_for(host)
    try:
        result = await sync_code(host, t, method="sftp")
    finally:
        await t.close()
    assert (root / "eval.py").read_text() == "print('eval')\n" and not (
        root / "eval.py"
    ).is_symlink()
    assert result.replaced_found == ("eval.py",), result
    kept = Path(result.kept_in) / "eval.py"
    assert kept.is_symlink() and str(kept.readlink()) == "results/my_real_eval.py"
    assert (root / "results/my_real_eval.py").read_text() == "print('mine')\n"


async def test_every_path_in_the_way_on_the_box_is_named_before_a_byte_is_sent(
    make_loopback_fleet, tmp_path
):
    """h543 #7: a folder where the tree has a file and a file where it has a folder were
    refused one per sync, each after sending the files again. h573 #4: --check said
    "rgt-tui sync" over them, and the sync sent every file for the switch to refuse."""
    import pytest
    from support.code_trees import staging_left

    from rgt_tui.services.code_sync import SyncError

    loop = await make_loopback_fleet(1)
    code = tmp_path / "proj"
    git_tree(code)
    write(code, "data.py", "DATA = 1\n")
    write(code, "models/net.py", "NET = 1\n")
    write(code, "models/head.py", "HEAD = 1\n")
    write(code, "lib/deep/util.py", "UTIL = 1\n")
    git(code, "add", "-A")
    git(code, "commit", "-q", "-m", "tree")
    add_code(loop.hosts_file, code)
    host = load_fleet(loop.hosts_file).host("box1")
    root = loop.box("box1").root
    write(root, "data.py/keep.txt", "the box's own folder\n")
    write(root, "models", "the box's own file\n")
    write(tmp_path / "elsewhere", "deep/util.py", "NOT OURS\n")
    (root / "lib").symlink_to(tmp_path / "elsewhere")
    t = transport_for(host)
    try:
        status = await code_status(host, t)
        with pytest.raises(SyncError) as by_rsync:
            await sync_code(host, t, method="rsync")
        staged = staging_left(root)
        with pytest.raises(SyncError) as refused:
            await sync_code(host, t, method="sftp")
    finally:
        await t.close()
    in_the_way = [
        f"{root}/data.py is a directory where the tree has a file",
        f"{root}/lib is a symlink on the box (a sync never writes through one)",
        f"{root}/models is a file where the tree has a directory",
    ]
    assert status is not None and not status.in_sync
    assert status.in_the_way == "; ".join(in_the_way), status.in_the_way
    # The move-aside alone: a sync, or a code_exclude of a blocking folder, would not do
    # (h585 #5).
    assert status.problem() == "; ".join(in_the_way) + (
        " — move each aside on the box (rgt-tui shell box1), then rgt-tui sync box1"
    )
    assert status.fix() == "move each aside on the box (rgt-tui shell box1), then rgt-tui sync box1"
    assert by_rsync.value.message == refused.value.message == "; ".join(in_the_way)
    assert refused.value.fix == "move each aside on the box (rgt-tui shell box1), then sync again"
    assert staged == [] and not staging_left(root)  # refused before staging a byte
    assert (root / "models").read_text() == "the box's own file\n"
    assert (root / "data.py" / "keep.txt").exists()
    assert (tmp_path / "elsewhere/deep/util.py").read_text() == "NOT OURS\n"


async def test_the_switch_names_what_was_put_in_the_way_after_the_scan(
    make_loopback_fleet, tmp_path
):
    """The box's switch keeps its own check, under the lock: a folder made after the
    sync's scan (by a run, by the user in a shell) is refused there, every path at once."""
    import pytest

    from rgt_tui.services.code_sync import SyncError
    from rgt_tui.services.code_sync.box import stage_on_box, switch_on_box

    loop = await make_loopback_fleet(1)
    host = load_fleet(loop.hosts_file).host("box1")
    root = loop.box("box1").root
    write(root, "a.py/keep.txt", "made after the scan\n")
    write(root, "pkg", "a file now\n")
    t = transport_for(host)
    try:
        await t.connect()
        staging, _ = await stage_on_box(t, "box1", host.workdir, "abc124", "rgt-box1", ["pkg"])
        write(Path(staging), "a.py", "A\n")
        write(Path(staging), "pkg/b.py", "B\n")
        with pytest.raises(SyncError) as refused:
            await switch_on_box(t, "box1", host.workdir, "abc124", "rgt-box1", ["a.py", "pkg/b.py"])
    finally:
        await t.close()
    message = refused.value.message
    assert f"{root}/a.py is a directory where the tree has a file" in message, message
    assert message.count(f"{root}/pkg is a file where the tree has a directory") == 1
    assert message.endswith(": move each aside, then sync again")
    assert (root / "pkg").read_text() == "a file now\n"


async def test_a_symlink_only_the_record_names_is_not_in_the_way(make_loopback_fleet, tmp_path):
    """h584 #1: the box's tools/ moved to a bigger disk and symlinked back, then the tree
    dropped tools/prep.py: the check blocked launches over a path no switch puts, and the
    sync could not clear it."""
    loop = await make_loopback_fleet(1)
    code = tmp_path / "proj"
    git_tree(code)
    write(code, "tools/prep.py", "PREP = 1\n")
    git(code, "add", "-A")
    git(code, "commit", "-q", "-m", "tools")
    add_code(loop.hosts_file, code)
    host = load_fleet(loop.hosts_file).host("box1")
    root = loop.box("box1").root
    t = transport_for(host)
    try:
        await sync_code(host, t, method="sftp")
        (root / "tools").rename(tmp_path / "bigdisk")
        (root / "tools").symlink_to(tmp_path / "bigdisk")
        git(code, "rm", "-q", "tools/prep.py")
        git(code, "commit", "-q", "-m", "drop prep")
        status = await code_status(host, t)
        write(code, "src/train.py", "print('v2')\n")
        git(code, "commit", "-q", "-am", "v2")
        result = await sync_code(host, t, method="sftp")
    finally:
        await t.close()
    assert status is not None and status.in_the_way == "", status.in_the_way
    assert result.files_sent == 1 and (root / "src/train.py").read_text() == "print('v2')\n"
    assert (tmp_path / "bigdisk" / "prep.py").read_text() == "PREP = 1\n"  # never written through


async def test_a_folder_the_prune_cannot_empty_is_named_before_a_byte_is_sent(
    make_loopback_fleet, tmp_path
):
    """h584 #2, h585 #1: tools/ synced as a folder, then a file in the tree; on the box
    tools/ also held Python's __pycache__ (or a file the rules ignore): the check said
    "rgt-tui sync", and the sync removed the old code, sent the new and then refused at
    the switch, leaving neither version to run."""
    import pytest
    from support.code_trees import staging_left

    from rgt_tui.services.code_sync import SyncError

    loop = await make_loopback_fleet(1)
    code = tmp_path / "proj"
    git_tree(code)
    write(code, "tools/prep.py", "PREP = 1\n")
    write(code, "lib/util.py", "UTIL = 1\n")
    git(code, "add", "-A")
    git(code, "commit", "-q", "-m", "tools")
    add_code(loop.hosts_file, code)
    host = load_fleet(loop.hosts_file).host("box1")
    root = loop.box("box1").root
    t = transport_for(host)
    try:
        await sync_code(host, t, method="sftp")
        write(root, "tools/__pycache__/prep.cpython-311.pyc", "bytecode\n")
        write(root, "lib/run.log", "ignored here (*.log)\n")
        for folder in ("tools", "lib"):
            git(code, "rm", "-q", "-r", folder)
            write(code, folder, f"{folder} is a file now\n")
        git(code, "add", "-A")
        git(code, "commit", "-q", "-m", "files now")
        status = await code_status(host, t)
        with pytest.raises(SyncError) as refused:
            await sync_code(host, t, method="sftp")
        staged = staging_left(root)
        (root / "tools").rename(tmp_path / "tools-aside")  # the user moves it aside
        # lib/ holds a file the rules ignore besides the sync's own: named too, and the
        # sync removes nothing (h585 #1: it removed the old code, then refused).
        status_lib = await code_status(host, t)
        with pytest.raises(SyncError) as refused_lib:
            await sync_code(host, t, method="sftp")
    finally:
        await t.close()
    both = (
        f"{root}/lib is a directory where the tree has a file; "
        f"{root}/tools is a directory where the tree has a file"
    )
    assert status is not None and status.in_the_way == both
    assert refused.value.message == both
    assert staged == [] and not staging_left(root)
    assert (tmp_path / "tools-aside/__pycache__/prep.cpython-311.pyc").exists()
    assert status_lib is not None
    assert status_lib.in_the_way == f"{root}/lib is a directory where the tree has a file"
    assert refused_lib.value.message == f"{root}/lib is a directory where the tree has a file"
    assert (root / "lib/util.py").exists() and (root / "lib/run.log").exists()
    assert not staging_left(root)


@pytest.mark.parametrize("left", ["excluded", "link", "git"])
async def test_a_sync_never_removes_the_old_code_and_then_refuses(
    make_loopback_fleet, tmp_path, left
):
    """h586 #1: lib/ synced as a folder, then a file in the tree; lib/ also held a file
    the rules now exclude, a link, or a nested .git (none of which the prune removes): the
    check said "rgt-tui sync", and the sync removed lib/util.py and then refused, leaving
    neither version to run. Now it refuses before removing anything."""
    from support.code_trees import staging_left

    from rgt_tui.services.code_sync import SyncError

    loop = await make_loopback_fleet(1)
    code = tmp_path / "proj"
    git_tree(code)
    write(code, "lib/util.py", "UTIL = 1\n")
    if left == "excluded":
        write(code, "lib/data.csv", "a,b\n")
    git(code, "add", "-A")
    git(code, "commit", "-q", "-m", "lib")
    add_code(loop.hosts_file, code)
    host = load_fleet(loop.hosts_file).host("box1")
    root = loop.box("box1").root
    t = transport_for(host)
    try:
        await sync_code(host, t, method="sftp")
        if left == "link":
            (root / "lib" / "cfg.yaml").symlink_to(tmp_path / "nowhere")
        elif left == "git":
            write(root, "lib/.git/HEAD", "ref: refs/heads/main\n")
        git(code, "rm", "-q", "-r", "lib")
        write(code, "lib", "lib is a file now\n")
        if left == "excluded":
            write(code, ".gitignore", "data/\n*.log\n*.csv\n")
        git(code, "add", "-A")
        git(code, "commit", "-q", "-m", "lib is a file")
        with pytest.raises(SyncError) as refused:
            await sync_code(host, t, method="sftp")
    finally:
        await t.close()
    assert refused.value.message == f"{root}/lib is a directory where the tree has a file"
    assert (root / "lib/util.py").read_text() == "UTIL = 1\n"  # the old code, still there
    assert not staging_left(root)
