"""A cell's state file the box garbled is not a cell that never ran (hour s16 #8).

A crash leaves NULs where the last records were; a full disk cuts a line; a chmod takes
read permission away. Read as "pending, no attempt", such a cell counted by the files in
its ``{out}`` at teardown, as results made outside rgt-tui do: a failed run's partial
checkpoint would then pass for its results. Over a real loopback box's probe, such a
state file reads as interrupted with why, and an empty one still reads as pending.
"""

from __future__ import annotations

from support.queues import SCRIPT_RUN, wait_view

from rgt_tui.domain.queue_state import DONE, FINISHED, INTERRUPTED, PENDING
from rgt_tui.domain.unfinished import is_unfinished, queue_cells_seen
from rgt_tui.services.queue.launch import launch, plan_launch


async def test_a_state_file_with_bytes_but_no_record_reads_interrupted_not_never_ran(
    make_queue_fleet,
):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    cells = ["nuls", "words", "emptied", "fine"]
    qf.write_queue("".join(f"{qf.cell_script(c, 'echo ran')} train\n" for c in cells))
    plan = await plan_launch(qf.fleet, qf.host(), qf.transport())
    assert plan.ok, plan.problems
    await launch(plan, qf.transport())
    await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to finish")
    states = qf.qdir() / "cells"
    (states / "nuls.state").write_bytes(b"\x00" * 64)  # what a crash leaves
    (states / "words.state").write_text("st4rt 17000 not a record\n")
    (states / "emptied.state").write_text("")  # no bytes: nothing says it ran

    view = await wait_view(
        qf, lambda v: v.cells[0].status != DONE, what="the garbled records to be read"
    )
    by_name = {c.name: c for c in view.cells}
    for name in ("nuls", "words"):
        cell = by_name[name]
        assert cell.status == INTERRUPTED, (name, cell)
        assert "state record on the box cannot be read" in cell.note, cell.note
        assert is_unfinished(cell, view)  # the teardown gate asks for it by name
    seen = queue_cells_seen(view, {}, lambda name: ())
    said = {name: what for name, _, what in seen.unfinished}
    assert sorted(said) == ["nuls", "words"], said
    assert said["nuls"].startswith("interrupted: its state record on the box cannot be read")
    assert by_name["emptied"].status == PENDING
    assert not is_unfinished(by_name["emptied"], view)  # never ran, its queue ended
    assert by_name["fine"].status == DONE
