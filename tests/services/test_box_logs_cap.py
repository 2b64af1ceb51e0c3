"""What the logs step of a pull leaves on the box for its caps is named with its size:
a queue.log over the cap is the run's whole story, once called "1 older log files"
(hour s20a #3)."""

from __future__ import annotations

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
