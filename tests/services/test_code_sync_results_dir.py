"""ux-f #1: with the fleet file inside the code tree, ``results_dir`` (``./results`` beside
it) lies in the tree too. A sync never sends the pulled results to a box, they do not
change the tree hash or count as uncommitted changes (preflight's ``code`` check), the
sync says it left them out, and a copy an earlier sync put there is removed. Real
components: loopback asyncssh boxes, git, the console entry point.
"""

from __future__ import annotations

from support.cli import arun
from support.code_trees import git_tree, older_sync, write
from support.fleet_files import set_host_key

from rgt_tui.content.ready_text import sync_result_lines
from rgt_tui.services.code_sync import code_status, fleet_files, sync_code
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.transport import transport_for

# What a pull and a verify of box1 leave under results_dir.
PULLED = (
    "results/box1/.rgt/verification.json",
    "results/box1/.rgt/box-logs/.rgt/pulled.json",
    "results/box1/no_aug/ckpt.txt",
)


def _results_on_box(root) -> set[str]:
    """Every file under the box's ``<workdir>/results`` (its ``.rgt/`` folders too)."""
    return {p.relative_to(root).as_posix() for p in (root / "results").rglob("*") if p.is_file()}


async def _fleet_with_results_in_tree(make_loopback_fleet, tmp_path):
    """A two-box fleet whose file (so its default results_dir) lies in box1's git code
    tree, with pulled results in it, untracked and not ignored."""
    loop = await make_loopback_fleet(2)
    code = tmp_path / "proj"
    git_tree(code)
    hosts = code / "hosts.toml"
    hosts.write_text(loop.hosts_file.read_text())
    set_host_key(hosts, "code", str(code), "box1")
    for rel in PULLED:
        write(code, rel, f"pulled {rel}\n")
    fleet = load_fleet(hosts)
    assert fleet.results_dir.resolve() == (code / "results").resolve()
    return fleet, code, loop.box("box1").root


async def test_pulled_results_in_the_tree_are_never_sent_nor_code_and_an_old_copy_goes(
    make_loopback_fleet, tmp_path
):
    fleet, code, root = await _fleet_with_results_in_tree(make_loopback_fleet, tmp_path)
    host = fleet.host("box1")
    held = fleet_files(fleet)
    t = transport_for(host)
    try:
        # What an earlier version sent (results not held back): the results are on the box.
        await older_sync(host, t)
        assert _results_on_box(root) == set(PULLED)
        result = await sync_code(host, t, method="sftp", withhold=held)
        status = await code_status(host, t, withhold=held)
        # A new pull changes nothing the code check sees.
        write(code, "results/box1/no_aug/ckpt_2.txt", "pulled later\n")
        later = await code_status(host, t, withhold=held)
    finally:
        await t.close()
    assert not _results_on_box(root)
    assert sorted(result.removed) == sorted(["hosts.toml", *PULLED])
    assert result.withheld == ("hosts.toml", "results/")
    said = [line.plain for line in sync_result_lines(result, "box1")]
    assert any(
        "not sent: hosts.toml — the fleet file" in s and "; results/ — the fleet's results_dir" in s
        for s in said
    ), said
    assert status is not None and status.in_sync and status.problem() is None, status
    assert later is not None and later.in_sync and later.problem() is None, later
    assert later.local.tree == status.local.tree


async def test_cli_sync_and_check_leave_the_results_dir_out(make_loopback_fleet, tmp_path):
    fleet, code, root = await _fleet_with_results_in_tree(make_loopback_fleet, tmp_path)
    hosts = str(fleet.path)
    synced = await arun("sync", "box1", "--hosts", hosts, "--sftp", timeout=120)
    checked = await arun("sync", "box1", "--check", "--hosts", hosts, timeout=120)
    assert synced.returncode == 0, synced.stderr
    assert "box1: not sent: hosts.toml — the fleet file" in synced.stdout
    assert "results/ — the fleet's results_dir" in synced.stdout
    assert not _results_on_box(root)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "box1: in sync" in checked.stdout
