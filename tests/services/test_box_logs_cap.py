"""What the logs step of a pull leaves on the box for its caps is named with its size:
a queue.log over the cap is the run's whole story, once called "1 older log files"
(hour s20a #3)."""

from __future__ import annotations

import os

from rgt_tui.domain.manifest import Manifest, ManifestEntry
from rgt_tui.services.pull.box_logs import MAX_BYTES, left_out_note, select_logs


def test_a_log_over_the_cap_is_left_out_by_name_and_size_and_the_rest_still_come() -> None:
    entries = (
        ManifestEntry(0, "queue.log", MAX_BYTES + (44 << 20), 300.0, "ab" * 32),
        ManifestEntry(0, "cells/c0.log", 1000, 200.0, "cd" * 32),
        ManifestEntry(0, "cells/notes.txt", 10, 100.0, "ef" * 32),  # not a log
    )
    cut, left_out = select_logs(Manifest("box1", (), entries))
    assert [e.path for e in cut.entries] == ["cells/c0.log"]
    assert left_out == (("queue.log", MAX_BYTES + (44 << 20)),)
    note = left_out_note(left_out)
    assert note.startswith("left on the box, over the cap of 256M of logs a pull brings: ")
    assert "queue.log (300M)" in note and "before teardown" in note
    assert left_out_note(()) == ""


async def test_a_tail_stays_while_the_box_still_holds_its_log(tmp_path) -> None:
    """A log the listing refused (unreadable, changed while hashed) is still on the box:
    its tail, or why its end could not be read, stays for verify (review h524 #8); only
    a log gone from the box's queue folder drops its tail (review h516 #8)."""
    from rgt_tui.domain.manifest import PullRoot, Refusal
    from rgt_tui.services.pull.box_logs import keep_tails
    from rgt_tui.services.pull.local_tree import HostTree

    cells = tmp_path / "cells"
    cells.mkdir()
    for name in ("refused.log.tail", "gone.log.tail", "kept.log.tail"):
        (cells / name).write_text("end")
    root = PullRoot(0, "~/.rgt/queue", "/box/.rgt/queue", "")
    entry = ManifestEntry(0, "cells/kept.log", 10, 1.0, "0" * 64)
    listing = Manifest(
        "box1",
        (root,),
        (entry,),
        refused=(Refusal(0, "cells/refused.log", "changed while being hashed"),),
    )
    kept = Manifest("box1", (root,), ())
    tree = HostTree(tmp_path)
    try:
        said = await keep_tails(None, "/box/.rgt/queue", tree, listing, kept, (), set())  # type: ignore[arg-type]
    finally:
        tree.close()
    assert said == ""
    assert sorted(p.name for p in cells.iterdir()) == ["kept.log.tail", "refused.log.unread"]
    assert (cells / "refused.log.unread").read_text() == (
        "the box's listing refused it: changed while being hashed"
    )  # why, where verify reads it: never an older tail in its place (review h526 #8)


async def test_a_log_whose_name_leaves_no_room_for_its_record_is_said_not_a_crash(tmp_path) -> None:
    """A box's log named near this disk's limit (a control character is escaped to four
    bytes here) left no room for ``.unread.part``: its write raised, and every pull of
    the box failed with a traceback (h533 #1). It is said by name; the others' records
    are kept as before."""
    from rgt_tui.domain.manifest import PullRoot, Refusal
    from rgt_tui.services.pull.box_logs import keep_tails, logs_left_on_box
    from rgt_tui.services.pull.local_tree import HostTree

    long = "cells/" + "\\x01" * 62 + ".log"  # 252 bytes: fits, its record does not
    root = PullRoot(0, "~/.rgt/queue", "/box/.rgt/queue", "")
    listing = Manifest(
        "box1",
        (root,),
        (ManifestEntry(0, "cells/big.log", MAX_BYTES + 1, 5.0, "0" * 64),),
        refused=(
            Refusal(0, long, "changed while being hashed"),
            Refusal(0, "cells/short.log", "changed while being hashed"),
        ),
    )
    folder = tmp_path / ".rgt" / "box-logs"
    (folder / "cells").mkdir(parents=True)
    (folder / "cells" / "big.log.tail").write_text("end")
    os.utime(folder / "cells" / "big.log.tail", (5.0, 5.0))  # read at its listed mtime
    tree = HostTree(folder)
    try:
        said = await keep_tails(
            None,
            "/box/.rgt/queue",
            tree,
            listing,
            Manifest("box1", (root,), ()),
            (("cells/big.log", MAX_BYTES + 1),),
            set(),
        )  # type: ignore[arg-type]
    finally:
        tree.close()
    assert said.startswith("a cell log's name is too long to keep its end here: cells/\\x01"), said
    assert said.endswith("— it stays on the box; rename it there to read it"), said
    assert sorted(p.name for p in (folder / "cells").iterdir()) == [
        "big.log.tail",
        "short.log.unread",
    ]
    # The checklist tells a tail kept from a log of which nothing is here (h533 #3).
    left = logs_left_on_box(tmp_path)
    assert left.tailed == ("cells/big.log",) and left.unread == ("cells/short.log",)
