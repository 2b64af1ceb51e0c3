"""ux-a #1: `add` run in a project tree puts the fleet file and the queue files in the code
tree. A sync never sends them (they name every box: its address, key path, teardown
command, and every box's queue), says what it left out, removes the copies an earlier
sync put there, and they do not count as uncommitted changes; the changes that do count
are named. Real components: loopback asyncssh boxes, git, the console entry point.
"""

from __future__ import annotations

from support.cli import arun
from support.code_trees import box_files, git, git_tree, older_sync, write
from support.fleet_files import set_host_key

from rgt_tui.content.ready_text import sync_result_lines
from rgt_tui.services.code_sync import code_status, fleet_files, sync_code
from rgt_tui.services.fleet.add_keys import QUEUE_TEMPLATE
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.transport import transport_for

HELD = ("hosts.toml", "queues/box1.txt", "queues/box2.txt")


async def _fleet_in_tree(make_loopback_fleet, tmp_path):
    """A two-box fleet whose file and queue files lie in box1's git code tree, untracked."""
    loop = await make_loopback_fleet(2)
    code = tmp_path / "proj"
    git_tree(code)
    hosts = code / "hosts.toml"
    hosts.write_text(loop.hosts_file.read_text())
    for box in ("box1", "box2"):
        set_host_key(hosts, "queue", f"queues/{box}.txt", box)
        write(code, f"queues/{box}.txt", f"# {box}'s cells\n")
    set_host_key(hosts, "code", str(code), "box1")
    return load_fleet(hosts), code, loop.box("box1").root


async def test_the_fleet_file_and_its_queues_are_never_sent_and_a_copy_already_there_goes(
    make_loopback_fleet, tmp_path
):
    fleet, code, root = await _fleet_in_tree(make_loopback_fleet, tmp_path)
    host = fleet.host("box1")
    held = fleet_files(fleet)
    t = transport_for(host)
    try:
        # What an earlier version sent (nothing held back): the file is on the box.
        await older_sync(host, t)
        assert set(HELD) <= box_files(root)
        before = await code_status(host, t, withhold=held)
        result = await sync_code(host, t, method="sftp", withhold=held)
        status = await code_status(host, t, withhold=held)
        write(code, "src/train.py", "print('changed')\n")
        changed = await code_status(host, t, withhold=held)
    finally:
        await t.close()
    assert not set(HELD) & box_files(root)
    assert result.withheld == HELD and sorted(result.removed) == list(HELD)
    # The TUI's y says the same as the CLI: what it removed and what it never sends.
    said = [line.plain for line in sync_result_lines(result, "box1")]
    assert said[2].startswith("  removed on box1 (an earlier sync put them there")
    assert all(p in said[2] for p in HELD)
    assert said[3].startswith("  not sent: hosts.toml, queues/box1.txt, queues/box2.txt — ")
    # Before the sync: not code, so in sync, but what the next sync removes is said.
    assert before is not None and before.in_sync and sorted(before.unsent_left) == list(HELD)
    assert before.unsent_note().endswith("— rgt-tui sync box1 removes them")
    assert status is not None and status.in_sync and not status.local.dirty
    assert status.unsent_left == ()
    assert status.problem() is None  # the untracked fleet file is not an uncommitted change
    assert changed is not None and changed.uncommitted == ("src/train.py",)
    problem = changed.problem() or ""
    assert f"uncommitted changes in {code}: src/train.py (1 file)" in problem


async def test_copies_of_the_fleet_file_by_name_or_by_content_are_held_back_too(
    make_loopback_fleet, tmp_path
):
    """A new user's hour (s39 #1): ``hosts.toml~`` (an editor's backup) and
    ``hosts.toml.bak`` (a user's) went to the box with every sync, only the exact path
    held back; so did a copy under another name. They name every box as the fleet file
    does: held back by name beside it, and by content (a ``[[hosts]]`` table) anywhere;
    a TOML file of the project's own is still sent."""
    fleet, code, root = await _fleet_in_tree(make_loopback_fleet, tmp_path)
    host = fleet.host("box1")
    text = fleet.path.read_text()
    # A copy named without ``.toml`` went to every box (h553 #4): held back by content.
    copies = (
        "hosts.toml~",
        "hosts.toml.bak",
        ".hosts.toml.swp",
        "old/fleet-before.toml",
        "hosts.backup",
        "old/fleet-good",
    )
    for rel in copies:
        write(code, rel, text)
    write(code, "configs/model.toml", "[model]\nwidth = 512\n")
    # A project's own [[hosts]] (a cluster config: addresses, no ssh) is the project's.
    write(code, "configs/cluster.toml", '[[hosts]]\naddr = "10.0.0.5"\ngpus = 8\n')
    # Files that are no TOML with a [[hosts]] line in them are the project's (review
    # h554 #1: a Python template and a README example were held back, removed from the box).
    mine = {
        "src/gen_cluster.py": 'TEMPLATE = """\n[[hosts]]\nname = "a"\nssh = "b"\n"""\n',
        "docs/setup.md": '# Setup\n\n```toml\n[[hosts]]\nname = "gpu1"\nssh = "x"\n```\n',
    }
    for rel, content in mine.items():
        write(code, rel, content)
    t = transport_for(host)
    try:
        await older_sync(host, t)  # copies sent with the rest
        assert set(copies) <= box_files(root)
        result = await sync_code(host, t, method="sftp", withhold=fleet_files(fleet))
        status = await code_status(host, t, withhold=fleet_files(fleet))
    finally:
        await t.close()
    on_box = box_files(root)
    assert not set(copies) & on_box, on_box
    assert "configs/model.toml" in on_box and "configs/cluster.toml" in on_box
    assert set(mine) <= on_box and not set(mine) & set(result.withheld), result.withheld
    assert set(copies) <= set(result.withheld), result.withheld
    assert set(copies) <= set(result.removed), result.removed
    assert status is not None and status.in_sync, status
    assert not set(copies) & set(status.uncommitted)  # never sent: no uncommitted change


async def test_a_queue_file_add_made_and_no_entry_names_now_is_held_back(
    make_loopback_fleet, tmp_path
):
    """h522 #3: after an entry was renamed (README step 10's way to reuse a box), its old
    queue file, which the fleet file no longer names, went to the box with the next sync
    and counted as an uncommitted change. A file that starts with the header `add` writes
    is held back like the queue files the fleet file names; a queue-like file of the
    project's own (no such header) is still sent."""
    fleet, code, root = await _fleet_in_tree(make_loopback_fleet, tmp_path)
    host = fleet.host("box1")
    old = "queues/box1-before-rename.txt"
    write(code, old, QUEUE_TEMPLATE.format(name="box1") + "configs/a.yaml train\n")
    write(code, "data/splits.txt", "# rgt-tui is not named here\ntrain 0.9\n")
    git(code, "add", "-f", old, "data/splits.txt")  # committed, as a user's tree holds them
    git(code, "commit", "-qm", "queues")
    t = transport_for(host)
    try:
        result = await sync_code(host, t, method="sftp", withhold=fleet_files(fleet))
        status = await code_status(host, t, withhold=fleet_files(fleet))
    finally:
        await t.close()
    on_box = box_files(root)
    assert old not in on_box and "data/splits.txt" in on_box, on_box
    assert old in result.withheld, result.withheld
    assert status is not None and old not in status.uncommitted


async def test_cli_sync_says_what_it_left_out_and_check_names_the_uncommitted_files(
    make_loopback_fleet, tmp_path
):
    fleet, code, root = await _fleet_in_tree(make_loopback_fleet, tmp_path)
    hosts = str(fleet.path)
    write(code, "new.py", "NEW = 1\n")  # untracked and sent: an uncommitted change
    git(code, "rm", "-q", "--cached", "run.sh")  # deleted from the index: another
    t = transport_for(fleet.host("box1"))
    try:
        await older_sync(fleet.host("box1"), t)  # an earlier version sent the fleet file
    finally:
        await t.close()
    synced = await arun("sync", "box1", "--hosts", hosts, "--sftp", timeout=120)
    checked = await arun("sync", "box1", "--check", "--hosts", hosts, timeout=120)
    assert synced.returncode == 0, synced.stderr
    assert "box1: not sent: hosts.toml, queues/box1.txt, queues/box2.txt — the fleet file" in (
        synced.stdout
    )
    # Held back, not gone from the tree (review h554 #1: "the tree no longer has it").
    assert "box1: removed hosts.toml (an earlier sync put it there; it is held back" in (
        synced.stdout
    ), synced.stdout
    assert not set(HELD) & box_files(root)
    assert checked.returncode == 1
    assert f"uncommitted changes in {code}: run.sh, new.py (2 files)" in checked.stdout


async def test_cli_check_says_a_fleet_copy_an_earlier_sync_left_and_stays_in_sync(
    make_loopback_fleet, tmp_path
):
    """s39's re-check: ``sync --check`` said "in sync" while the box held the fleet file
    an older rgt-tui had sent; the next sync removes it, and the check now says so."""
    fleet, code, root = await _fleet_in_tree(make_loopback_fleet, tmp_path)
    host = fleet.host("box1")
    t = transport_for(host)
    try:
        await older_sync(host, t)
    finally:
        await t.close()
    checked = await arun("sync", "box1", "--check", "--hosts", str(fleet.path), timeout=120)
    assert checked.returncode == 0, checked.stdout + checked.stderr  # the code is the same
    assert (
        "box1: on the box from an earlier sync, no longer sent: hosts.toml, queues/box1.txt, "
        "queues/box2.txt — rgt-tui sync box1 removes them"
    ) in checked.stdout
    assert "box1: in sync (" in checked.stdout
    assert set(HELD) <= box_files(root)  # a check removes nothing


async def test_preflights_crlf_check_reads_no_fleet_file_sync_never_sends(
    make_loopback_fleet, tmp_path
):
    from rgt_tui.services.code_sync.crlf import crlf_preflight

    fleet, code, _ = await _fleet_in_tree(make_loopback_fleet, tmp_path)
    host = fleet.host("box1")
    held = fleet_files(fleet)
    # A fleet file saved with Windows line endings never reaches the box: not a failure.
    fleet.path.write_bytes(fleet.path.read_bytes().replace(b"\n", b"\r\n"))
    check = await crlf_preflight(host, held)
    assert check.ok, check
    # A script that is sent still fails, by name.
    write(code, "src/prep.sh", "echo hi\r\n")
    check = await crlf_preflight(host, held)
    assert not check.ok and "src/prep.sh" in check.detail, check


def test_a_fifo_named_like_a_toml_file_is_said_not_read(tmp_path):
    """The review of s39 (#4): the fleet-copy check opened every ``*.toml`` before the
    listing looked at what it was, and a FIFO with no writer held `sync` for good. It is
    listed as not a regular file, at once."""
    import os

    from rgt_tui.services.code_sync.listing import list_tree

    code = tmp_path / "proj"
    write(code, "train.py", "print('hi')\n")
    os.mkfifo(code / "pipe.toml")
    tree = list_tree(code, (), "box1")
    assert "pipe.toml (not a regular file)" in tree.skipped, tree.skipped


def test_a_toml_file_nested_past_the_parsers_depth_is_held_back_not_a_traceback(tmp_path):
    """The s40 audit: ``[[hosts]]`` then 500 open brackets raised RecursionError out of
    the fleet-copy check, and every sync, launch, preflight and ``queue show`` of the tree
    ended in a traceback without naming the file. It is held back as a fleet file that
    cannot be read is."""
    from rgt_tui.services.code_sync.listing import list_tree

    code = tmp_path / "proj"
    write(code, "train.py", "print('hi')\n")
    write(code, "settings.toml", "[[hosts]]\nname = 'a'\nssh = 'b'\nx = " + "[" * 500 + "\n")
    tree = list_tree(code, (), "box1")
    assert "settings.toml" in tree.withheld, tree.withheld
    assert [f.path for f in tree.files] == ["train.py"]
