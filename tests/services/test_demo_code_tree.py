"""The demo's code tree: the boxes start in sync with it (preflight's `code` passes, `y`
says so), every box holds every box's configs (a moved cell finds its own), and an edit
of the local train.py is what the next sync sends. Real components: loopback asyncssh
boxes with the demo workload installed, the product's sync over SFTP."""

from __future__ import annotations

from rgt_tui.demo.code_tree import share_code_tree
from rgt_tui.demo.loopback import LoopbackFleet
from rgt_tui.services.code_sync import code_status, fleet_files, sync_code
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.transport import transport_for


async def test_the_demo_boxes_start_in_sync_and_an_edit_is_sent(tmp_path):
    loopback = LoopbackFleet(2, tmp_path / "demo", workload=True)
    await loopback.start()
    try:
        tree = share_code_tree(loopback)
        fleet = load_fleet(loopback.hosts_file)
        assert fleet.host("box2").ready.code == tree
        # box2 holds box1's configs too: a cell moved there finds its config.
        assert (loopback.box("box2").root / "configs" / "box1_wide.json").is_file()
        held = fleet_files(fleet)
        statuses = {}
        for name in ("box1", "box2"):
            t = transport_for(fleet.host(name))
            try:
                statuses[name] = await code_status(fleet.host(name), t, withhold=held)
            finally:
                await t.close()
        assert all(s is not None and s.in_sync for s in statuses.values()), statuses
        # What a shell leaves in a demo box's home (its workdir) is not a difference.
        (loopback.box("box2").root / ".bash_history").write_text("ls\n")
        t = transport_for(fleet.host("box2"))
        try:
            shelled = await code_status(fleet.host("box2"), t, withhold=held)
        finally:
            await t.close()
        assert shelled is not None and shelled.in_sync, shelled
        (tree / "train.py").write_text((tree / "train.py").read_text() + "# tuned\n")
        host = fleet.host("box1")
        t = transport_for(host)
        try:
            before = await code_status(host, t, withhold=held)
            result = await sync_code(host, t, method="sftp", withhold=held)
            after = await code_status(host, t, withhold=held)
        finally:
            await t.close()
        assert before is not None and not before.in_sync
        assert result.files_sent == 1 and after is not None and after.in_sync
        # The demo's own file is one a sync put there: replaced as such, nothing kept
        # aside as "not put there by a sync" (hour s20c #12).
        assert result.replaced_found == () and result.overwritten == () and not result.kept_in
        assert (loopback.box("box1").root / "train.py").read_text().endswith("# tuned\n")
    finally:
        await loopback.stop()
