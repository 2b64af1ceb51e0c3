"""The teardown checklist names what the box holds beside the results that a teardown
destroys: the box's own copies a sync replaced, kept in ``~/.rgt/sync-kept`` there. Not
results, never pulled, so never a condition of the gate; but the checklist said nothing
of them, and a user who had edited a file on the box lost it with the box.

Real components: a loopback box pulled and verified (``support.gate_box.Setup``), a
real git tree synced over it, the real journal and the command line."""

from __future__ import annotations

import os

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


async def test_the_checklist_names_a_cell_log_the_pull_left_on_the_box(ready: Setup) -> None:
    """A cell log over the cap of logs a pull brings stays on the box; only its end is
    kept here. The pull said so once; the checklist said nothing, and the teardown took
    the whole log with the box (h515 #9). A note, not a lock: logs are not results.
    The log is sparse: 256 MiB of nothing, a few blocks on disk."""
    from rgt_tui.services.pull.box_logs import MAX_BYTES

    cells = ready.box.root / ".rgt" / "queue" / "cells"
    cells.mkdir(parents=True, exist_ok=True)
    log = cells / "cellA.log"
    log.write_bytes(b"")
    os.truncate(log, MAX_BYTES + (1 << 20))
    with log.open("a") as f:
        f.write("epoch 1 done\n")
    await ready.pull_and_verify()
    report = await ready.check()
    (note,) = report.notes
    assert note.startswith(
        "1 cell log stayed on the box at the last pull, over the 256M of logs a pull "
        "brings: cells/cellA.log — only the last 512K of it is here"
    ), note
    assert report.ready_but_confirmation
    check = await ready.cli("teardown", "box1", "--check")
    assert "  note: 1 cell log stayed on the box at the last pull" in check.stdout, check.stdout
    # Pulled whole once it is small again: no note.
    os.truncate(log, 1000)
    await ready.pull_and_verify()
    assert (await ready.check()).notes == ()
    # Gone from the box's queue folder (a --fresh launch moves it aside): its tail goes
    # at the next pull, rather than name a log the box lacks (review h516 #8).
    os.truncate(log, MAX_BYTES + (1 << 20))
    await ready.pull_and_verify()
    assert len((await ready.check()).notes) == 1
    log.unlink()
    await ready.pull_and_verify()
    assert (await ready.check()).notes == ()
    kept = ready.fleet.results_dir / "box1" / ".rgt" / "box-logs" / "cells"
    assert (kept / "cellA.log").is_file() and not list(kept.glob("*.tail"))


async def test_the_checklist_says_a_refused_cell_log_has_nothing_here(ready: Setup) -> None:
    """A log the box's listing refused (here for the terminal escape in its name) has
    no tail here, only why: the note read "only the last 512K of it is here" (h533 #3)."""
    cells = ready.box.root / ".rgt" / "queue" / "cells"
    cells.mkdir(parents=True, exist_ok=True)
    (cells / "esc\x1b]0;T\x07x.log").write_bytes(b"14 bytes here\n")
    # And one whose escaped name leaves no room here for a record of it: every pull of
    # the box failed on it with a traceback (h533 #1).
    (cells / ("\x01" * 240 + ".log")).write_bytes(b"x\n")
    await ready.pull_and_verify()
    (note,) = (await ready.check()).notes
    assert note.startswith(
        "1 cell log stayed on the box unread at the last pull (the box's listing refused "
        "it, or the end could not be read): cells/esc\\x1b]0;T\\x07x.log — its end is not "
        "here; copy it from ~/.rgt/queue"
    ), note
    assert "512K" not in note
