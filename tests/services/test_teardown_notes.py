"""The teardown checklist names what the box holds beside the results that a teardown
destroys: the box's own copies a sync replaced, kept in ``~/.rgt/sync-kept`` there. Not
results, never pulled, so never a condition of the gate; but the checklist said nothing
of them, and a user who had edited a file on the box lost it with the box.

Real components: a loopback box pulled and verified (``support.gate_box.Setup``), a
real git tree synced over it, the real journal and the command line."""

from __future__ import annotations

from support.code_trees import add_code, git_tree, write
from support.gate_box import Setup

from rgt_tui.content.teardown_text import checklist_lines
from rgt_tui.services.code_sync import sync_code
from rgt_tui.transport import open_transport


async def test_the_checklist_names_the_copies_a_sync_kept_on_the_box(ready: Setup) -> None:
    assert (await ready.check()).notes == ()
    code = ready.tmp / "proj"
    git_tree(code)
    add_code(ready.loopback.hosts_file, code)
    # A file of the tree edited on the box before any sync: the sync keeps the box's copy.
    write(ready.box.root, "src/train.py", "print('tuned on the box')\n")
    async with open_transport(ready.host) as t:
        synced = await sync_code(ready.host, t, method="sftp")
    assert synced.replaced_found == ("src/train.py",) and synced.kept_in, synced

    report = await ready.check()
    (note,) = report.notes
    assert note.startswith("~/.rgt/sync-kept on the box holds 1 file: the box's own copies")
    assert "never pulled" in note and "rgt-tui shell box1" in note
    assert report.ready_but_confirmation  # a note, never a lock: they are not results
    shown = "\n".join(line.plain for line in checklist_lines(report))
    assert "note: ~/.rgt/sync-kept on the box holds 1 file" in shown
    check = await ready.cli("teardown", "box1", "--check")
    assert "  note: ~/.rgt/sync-kept on the box holds 1 file" in check.stdout, check.stdout
