"""Issue 39: "in sync" covers the whole synced tree. Box-only files the rules would send
count (a commit's rename leaves the old file on the box); a sync removes only what an
earlier sync installed and still holds as installed; the user's files are never removed."""

from __future__ import annotations

import dataclasses
import hashlib

import pytest
from support.code_trees import SYNC_RECORD, add_code, git, git_tree, write
from support.queues import GATE, SCRIPT_RUN, wait_view

from rgt_tui.cli.launch import preflight_lines
from rgt_tui.content.ready_text import sync_result_lines
from rgt_tui.domain.queue_state import FINISHED
from rgt_tui.services.code_sync import SyncError, code_status, sync_code
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.queue.launch import launch, plan_launch
from rgt_tui.transport import transport_for


def _tree(code):
    """git_tree plus a config the next commit renames."""
    git_tree(code)
    write(code, "configs/exp.yaml", "lr: 0.1\n")
    git(code, "add", "-A")
    git(code, "commit", "-q", "-m", "config")


def _rename(code):
    git(code, "mv", "configs/exp.yaml", "configs/exp_v2.yaml")
    git(code, "commit", "-q", "-m", "rename")


async def _box1(make_loopback_fleet, code, exclude=()):
    fleet = await make_loopback_fleet(1)
    add_code(fleet.hosts_file, code, exclude)
    return load_fleet(fleet.hosts_file).host("box1"), fleet.box("box1").root


async def test_a_file_the_commit_renamed_fails_the_check_by_name_and_the_next_sync_removes_it(
    make_loopback_fleet, tmp_path
):
    code = tmp_path / "proj"
    _tree(code)
    host, root = await _box1(make_loopback_fleet, code)
    t = transport_for(host)
    try:
        first = await sync_code(host, t, method="sftp")
        installed = (root / SYNC_RECORD).read_text()
        _rename(code)
        stale = await code_status(host, t)
        result = await sync_code(host, t, method="sftp")
        after = await code_status(host, t)
    finally:
        await t.close()
    assert first.files_sent == 5 and "\tconfigs/exp.yaml\n" in installed
    assert stale is not None and not stale.in_sync and stale.differs == ("configs/exp_v2.yaml",)
    assert stale.box_only == ("configs/exp.yaml",) and stale.box_only_synced == 1
    assert stale.box is not None and stale.box.tree != stale.local.tree
    problem = stale.problem()
    assert problem is not None
    assert "on the box only: configs/exp.yaml (1 file the local tree does not have)" in problem
    assert "rgt-tui sync box1 removes it" in problem and stale.fix() == "rgt-tui sync box1"
    assert result.removed == ("configs/exp.yaml",) and result.left == ()
    assert not (root / "configs/exp.yaml").exists()
    assert (root / "configs/exp_v2.yaml").read_text() == "lr: 0.1\n"
    assert after is not None and after.in_sync and after.problem() is None
    assert after.box is not None and after.box.tree == after.local.tree == result.identity.tree
    record = (root / SYNC_RECORD).read_text()
    assert "\tconfigs/exp_v2.yaml\n" in record and "configs/exp.yaml" not in record


async def test_files_a_sync_did_not_put_there_are_never_removed_and_code_like_ones_are_named(
    make_loopback_fleet, tmp_path
):
    code = tmp_path / "proj"
    _tree(code)
    host, root = await _box1(make_loopback_fleet, code)
    t = transport_for(host)
    try:
        await sync_code(host, t, method="sftp")
        write(root, "data/user.bin", "the user's data\n")  # ignored here (data/)
        write(root, "outputs/run.log", "a log\n")  # ignored here (*.log)
        write(root, "results.csv", "the user's results\n")  # not ignored: looks like code
        write(root, ".cache/x.py", "a cache\n")  # not ignored either
        git(code, "rm", "-q", "src/model/net.py")
        git(code, "commit", "-q", "-m", "drop net")
        before = await code_status(host, t)
        result = await sync_code(host, t, method="sftp")
        after = await code_status(host, t)
    finally:
        await t.close()
    assert before is not None
    assert before.box_only == (".cache/x.py", "results.csv", "src/model/net.py")
    assert before.box_only_synced == 1
    problem = before.problem()
    assert problem is not None and "data/user.bin" not in problem and "run.log" not in problem
    assert "rgt-tui sync box1 removes 1; 2 not put there by rgt-tui sync" in problem
    assert result.removed == ("src/model/net.py",) and not (root / "src/model").exists()
    assert result.left == (
        ".cache/x.py (not put there by rgt-tui sync)",
        "results.csv (not put there by rgt-tui sync)",
    )
    for rel, text in [
        ("data/user.bin", "the user's data\n"),
        ("outputs/run.log", "a log\n"),
        ("results.csv", "the user's results\n"),
        (".cache/x.py", "a cache\n"),
    ]:
        assert (root / rel).read_text() == text
    assert after is not None and not after.in_sync and after.differs == ()
    assert after.box_only == (".cache/x.py", "results.csv") and after.box_only_synced == 0
    assert (
        after.fix()
        == "remove .cache/x.py and the others on box1 (or add it to code_exclude), then check again"
    )


async def test_pythons_bytecode_cache_made_on_the_box_is_not_code(make_loopback_fleet, tmp_path):
    """h581 #4: the first cell's import made __pycache__/utils.cpython-311.pyc on the box,
    and every later check failed "on the box only … not put there by rgt-tui sync" until
    the user excluded it by hand. Nor is a local cache sent (no .gitignore line for it)."""
    code = tmp_path / "proj"
    _tree(code)
    write(code, "__pycache__/train.cpython-311.pyc", "local bytecode\n")  # untracked
    host, root = await _box1(make_loopback_fleet, code)
    t = transport_for(host)
    try:
        await sync_code(host, t, method="sftp")
        sent = (root / "__pycache__").exists()
        write(root, "__pycache__/utils.cpython-311.pyc", "made by an import on the box\n")
        write(root, "src/model/__pycache__/net.cpython-311.pyc", "and another\n")
        status = await code_status(host, t)
    finally:
        await t.close()
    assert not sent
    assert status is not None and status.in_sync and status.problem() is None, status.problem()


async def test_a_file_edited_on_the_box_after_the_sync_is_left_and_named(
    make_loopback_fleet, tmp_path
):
    code = tmp_path / "proj"
    _tree(code)
    host, root = await _box1(make_loopback_fleet, code)
    t = transport_for(host)
    try:
        await sync_code(host, t, method="sftp")
        (root / "configs/exp.yaml").write_text("lr: 0.5  # tuned on the box\n")
        _rename(code)
        result = await sync_code(host, t, method="sftp")
        again = await sync_code(host, t, method="sftp")
        status = await code_status(host, t)
    finally:
        await t.close()
    assert result.removed == ()
    assert result.left == ("configs/exp.yaml (changed on the box since a sync put it there)",)
    assert (root / "configs/exp.yaml").read_text() == "lr: 0.5  # tuned on the box\n"
    # The record keeps what the sync put there (ux-d #8): the next sync still says why it
    # leaves the file, and removes it no more than this one did (its content differs).
    installed = (code / "configs/exp_v2.yaml").read_bytes()
    assert f"{hashlib.sha256(installed).hexdigest()}\t-\tconfigs/exp.yaml" in (
        (root / SYNC_RECORD).read_text().splitlines()
    )
    assert again.removed == () and again.left == result.left
    assert (root / "configs/exp.yaml").read_text() == "lr: 0.5  # tuned on the box\n"
    assert status is not None and status.box_only == ("configs/exp.yaml",)
    assert status.box_only_synced == 0


async def test_a_forged_record_line_for_a_changed_file_removes_nothing(
    make_loopback_fleet, tmp_path
):
    """The record alone never decides: the box's file must still hash to it."""
    code = tmp_path / "proj"
    _tree(code)
    host, root = await _box1(make_loopback_fleet, code)
    write(root, "notes.md", "mine\n")
    (root / SYNC_RECORD).write_text(f"{'0' * 64}\t-\tnotes.md\n{'1' * 64}\t-\t../escape.md\n")
    t = transport_for(host)
    try:
        result = await sync_code(host, t, method="sftp")
    finally:
        await t.close()
    assert result.removed == () and (root / "notes.md").read_text() == "mine\n"
    assert result.left == ("notes.md (changed on the box since a sync put it there)",)


async def test_preflight_and_the_launch_plan_name_the_box_only_file(make_queue_fleet, tmp_path):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    code = tmp_path / "code"
    _tree(code)
    # The queue's cells are written into the workdir by the test, not synced: not code.
    add_code(qf.loopback.hosts_file, code, ("cells/",))
    fleet = load_fleet(qf.loopback.hosts_file)
    host = fleet.host("box1")
    qf.write_queue(f"{qf.cell_script('one', 'echo one')} t\n")
    transport = qf.transport()
    try:
        await sync_code(host, transport)
        _rename(code)
        await sync_code(host, transport)
        write(qf.root(), "configs/exp.yaml", "lr: 0.1\n")  # the old config, back on the box
        plan = await plan_launch(fleet, host, transport)
    finally:
        await transport.close()
    assert plan.unacknowledged == ("code",)
    (problem,) = plan.problems
    assert problem.startswith("preflight check 'code' failed: on the box only: configs/exp.yaml")
    assert plan.preflight is not None
    check = next(c for c in plan.preflight.checks if c.name == "code")
    assert check.fix.startswith("remove configs/exp.yaml on box1")
    lines = preflight_lines(plan)
    assert any("FAILED" in line and "on the box only: configs/exp.yaml" in line for line in lines)
    # The code each cell would record is the box's real tree, not the local commit's.
    assert plan.preflight.code is not None and plan.preflight.code.commit == ""


async def test_a_stale_file_is_not_removed_while_the_queue_runs(make_queue_fleet, tmp_path):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    code = tmp_path / "proj"
    _tree(code)
    add_code(qf.loopback.hosts_file, code, ("cells/",))
    gate = qf.cell_script("gate", GATE)
    qf.write_queue(f"{gate} t 1\n")
    host, root = qf.host(), qf.root()
    t = qf.transport()
    try:
        await sync_code(host, t, method="sftp")
        git(code, "rm", "-q", "configs/exp.yaml")
        git(code, "commit", "-q", "-m", "drop the config")
        # The box still holds the dropped config: a launch must acknowledge that drift.
        plan = await plan_launch(qf.fleet, host, t, acks=("code",))
        assert plan.ok, plan.problems
        await launch(plan, t)
        with pytest.raises(SyncError) as refused:
            await sync_code(host, t, method="sftp")
        assert (root / "configs/exp.yaml").exists()
        (root / "go").touch()
        await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to finish")
        result = await sync_code(host, t, method="sftp")
    finally:
        await t.close()
    assert "is running" in refused.value.message
    assert "1 file to remove (configs/exp.yaml)" in refused.value.message
    assert result.removed == ("configs/exp.yaml",) and not (root / "configs").exists()


async def test_box_files_named_with_no_plain_text_are_not_passed_over_as_in_sync(
    make_loopback_fleet, tmp_path
):
    """h503 #3: `.py` files on the box named with an escape, a newline or a byte that is
    no UTF-8 were dropped from the comparison, and `sync --check` said "in sync"."""
    code = tmp_path / "proj"
    _tree(code)
    host, root = await _box1(make_loopback_fleet, code)
    t = transport_for(host)
    try:
        await sync_code(host, t, method="sftp")
        assert (await code_status(host, t)).in_sync
        (root / "new\nline.py").write_text("x = 1\n")
        (root / "src").joinpath(b"bad\xffname.py".decode("utf-8", "surrogateescape")).write_text("")
        (root / "outputs").mkdir(exist_ok=True)
        (root / "outputs" / "odd\x1b.log").write_text("")  # *.log: not code, not named
        (root / "pkg\x1b[31m" / "deep").mkdir(parents=True)  # a folder so named (h505 #1)
        (root / "pkg\x1b[31m" / "deep" / "inject.py").write_text("x = 2\n")
        status = await code_status(host, t)
        result = await sync_code(host, t, method="sftp")
    finally:
        await t.close()
    assert status is not None and not status.in_sync, status
    # Made printable: the newline escaped; the byte that is no UTF-8 read as U+FFFD.
    assert status.box_unnamed == (
        "new\\nline.py",
        "pkg\\x1b[31m/",
        "src/bad\ufffdname.py",
    ), status.box_unnamed
    problem = status.problem() or ""
    assert "named with control characters or bytes that are no text" in problem, problem
    assert "odd" not in problem and "\n" not in problem
    assert (root / "new\nline.py").exists()  # never removed
    assert result.box_differs and any("remove it in a shell" in n for n in result.left)


async def test_files_code_exclude_leaves_out_after_a_sync_stay_on_the_box(
    make_loopback_fleet, tmp_path
):
    """h512 #2: `code_exclude = ["data/"]` (the README's fix for a full box) after a sync
    had sent data/ deleted the dataset on the box, saying the tree no longer had it."""
    code = tmp_path / "proj"
    _tree(code)
    write(code, "dataset/train.bin", "rows\n")
    git(code, "add", "-A")
    git(code, "commit", "-q", "-m", "data")
    host, root = await _box1(make_loopback_fleet, code)
    t = transport_for(host)
    try:
        await sync_code(host, t, method="sftp")
        assert (root / "dataset/train.bin").read_text() == "rows\n"
        ready = dataclasses.replace(host.ready, code_exclude=("dataset/",))
        excluded = dataclasses.replace(host, ready=ready)
        checked = await code_status(excluded, t)
        result = await sync_code(excluded, t, method="sftp")
        again = await sync_code(excluded, t, method="sftp")
    finally:
        await t.close()
    assert (root / "dataset/train.bin").read_text() == "rows\n"  # the dataset stays
    assert checked is not None and checked.unsent_left == () and checked.in_sync
    assert result.removed == () and result.excluded == ("dataset/train.bin",)
    assert not result.box_differs
    # Dropped from the sync's record: the box's own now, never removed later (review
    # h514 #2: kept in the record, a later sync without the exclude would remove it).
    assert "dataset/train.bin" not in (root / SYNC_RECORD).read_text()
    assert again.removed == () and again.excluded == () and not again.box_differs


async def test_files_a_new_gitignore_line_leaves_out_stay_on_the_box(make_loopback_fleet, tmp_path):
    """Review h514 #1: the same through .gitignore: a line added after a sync had sent the
    files made them stale, and the next sync removed them on the box."""
    code = tmp_path / "proj"
    _tree(code)
    write(code, "cache/feats.bin", "features\n")
    git(code, "add", "-A")
    git(code, "commit", "-q", "-m", "cache")
    host, root = await _box1(make_loopback_fleet, code)
    t = transport_for(host)
    try:
        await sync_code(host, t, method="sftp")
        git(code, "rm", "-q", "--cached", "-r", "cache")
        write(code, ".gitignore", "data/\n*.log\ncache/\n")
        git(code, "commit", "-q", "-am", "ignore the cache")
        result = await sync_code(host, t, method="sftp")
    finally:
        await t.close()
    assert (root / "cache/feats.bin").read_text() == "features\n"
    assert result.removed == () and result.excluded == ("cache/feats.bin",)
    said = " ".join(line.plain for line in sync_result_lines(result, "box1"))  # the TUI's
    assert "kept on box1, as the rules now leave them out (never removed): cache/feats.bin" in (
        said
    )
