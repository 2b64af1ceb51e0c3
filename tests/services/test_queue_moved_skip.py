"""The skip gap (issue 40): a cell moved while its box did not answer becomes
``#moved-to`` in the local file but its box never recorded the skip. When the box comes
back and its queue is launched again from before that cell, the launch records the skip
first, so the cell never runs twice. Loopback box, real runner."""

from __future__ import annotations

import pytest
from support.queues import SCRIPT_RUN, wait_view

from rgt_tui.domain.queue_state import FAILED, FINISHED, SKIPPED
from rgt_tui.services.queue.launch import default_start, launch, plan_launch
from rgt_tui.services.queue.move import MoveError, apply_move, plan_move

# Each run of b leaves a line in $HOME/b.runs, then fails (so a resume move may take it).
B = 'echo ran >> "$HOME/b.runs"; exit 3'


async def _launch(qf, start: int = 0):
    transport = qf.transport("box1")
    try:
        plan = await plan_launch(qf.fleet, qf.host("box1"), transport, start_index=start)
        assert plan.ok, plan.problems
        await launch(plan, transport)
        return plan
    finally:
        await transport.close()


async def _move_b_while_down(qf) -> None:
    """Move cell b from box1, which does not answer, to box2 (a resume move)."""
    transport = qf.transport("box1")
    try:
        plan = await plan_move(qf.fleet, qf.host("box1"), ["b"], "box2", transport, resume=True)
        assert plan.ok and not plan.source_answered, plan.problems
        await apply_move(plan, qf.host("box1"), transport)
    finally:
        await transport.close()


async def test_a_moved_cell_its_box_never_skipped_is_skipped_before_a_relaunch(
    make_queue_fleet,
):
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    a = qf.cell_script("a", "echo a")
    b = qf.cell_script("b", B)
    qf.write_queue(f"{a} t 1\n{b} t 1\n")
    qf.write_queue("", "box2")
    await _launch(qf)
    await wait_view(qf, lambda v: v.state == FINISHED, what="box1's first run")
    runs = qf.root("box1") / "b.runs"
    assert runs.read_text() == "ran\n"

    # box1 stops answering; b (failed) is moved to box2 all the same.
    box1 = qf.loopback.box("box1")
    await box1.stop()
    await _move_b_while_down(qf)
    assert qf.queue_file("box1").read_text().endswith(f"#moved-to box2: {b} t 1\n")
    assert "skip" not in qf.state("b")  # the gap: box1 was never told
    # Asked again while box1 is still down: refused, and no "not told to skip  now"
    # warning over no cell (s43 spot hour #3).
    transport = qf.transport("box1")
    try:
        again = await plan_move(qf.fleet, qf.host("box1"), ["b"], "box2", transport, resume=True)
    finally:
        await transport.close()
    assert not again.ok and again.problems, again
    assert not any("told to skip" in w for w in again.warnings), again.warnings

    # box1 is back; its queue is launched again from cell 0.
    await box1.start()
    planned = await _launch(qf, start=0)
    said = "\n".join((*planned.warnings, *planned.notes))
    assert "b" in said and "moved to box2" in said, said
    view = await wait_view(qf, lambda v: v.state == FINISHED, what="box1's second run")
    assert runs.read_text() == "ran\n"  # b did not run a second time
    assert "skip" in qf.state("b") and "moved to box2" in qf.state("b")
    assert [(c.name, c.status) for c in view.cells][1] == ("b", SKIPPED)
    assert FAILED not in [c.status for c in view.cells]


async def test_an_append_after_the_gap_names_the_start_a_launch_uses(make_queue_fleet):
    """Hour s24a #4: `queue append` recorded the moved cell's skip, then told from the view
    of before it: "a launch from cell 1 runs it; cell 1 (b, failed) runs again first"
    and --start 1, while a launch started past the moved cell."""
    from rgt_tui.services.queue.append import append_cells

    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    a = qf.cell_script("a", "echo a")
    b = qf.cell_script("b", B)
    c = qf.cell_script("c", "echo c")
    qf.write_queue(f"{a} t 1\n{b} t 1\n")
    qf.write_queue("", "box2")
    await _launch(qf)
    await wait_view(qf, lambda v: v.state == FINISHED, what="box1's first run")
    box1 = qf.loopback.box("box1")
    await box1.stop()
    await _move_b_while_down(qf)
    await box1.start()
    qf.append_queue(f"{c} t 1\n", "box1")
    transport = qf.transport("box1")
    try:
        result = await append_cells(qf.fleet, qf.host("box1"), transport)
    finally:
        await transport.close()
    assert "skip" in qf.state("b")  # recorded first
    assert result.start == 2, result.detail
    assert result.detail == "the queue is not running: a launch from cell 2 runs it"
    transport = qf.transport("box1")
    try:  # a launch with no start given begins where append said
        planned = await plan_launch(qf.fleet, qf.host("box1"), transport, preflight=False)
    finally:
        await transport.close()
    assert default_start(planned) == 2


async def test_a_move_planned_while_its_box_was_down_is_refused_once_the_box_is_back(
    make_queue_fleet,
):
    """h592 #1: planned while box1 did not answer, applied after box1 came back (a network
    drop): the line was moved as planned, the box never told to skip it, and the cell ran
    on both boxes. Applied now, the move sees the box answer and moves nothing."""
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    a = qf.cell_script("a", "echo a")
    b = qf.cell_script("b", B)
    qf.write_queue(f"{a} t 1\n{b} t 1\n")
    qf.write_queue("", "box2")
    await _launch(qf)
    await wait_view(qf, lambda v: v.state == FINISHED, what="box1's first run")
    before = (qf.queue_file("box1").read_text(), qf.queue_file("box2").read_text())

    box1 = qf.loopback.box("box1")
    await box1.stop()
    transport = qf.transport("box1")
    try:
        plan = await plan_move(qf.fleet, qf.host("box1"), ["b"], "box2", transport, resume=True)
        assert plan.ok and not plan.source_answered, plan.problems
        await box1.start()  # back before the user said yes
        with pytest.raises(MoveError, match="box1 answers again since the move was planned"):
            await apply_move(plan, qf.host("box1"), transport)
    finally:
        await transport.close()
    assert (qf.queue_file("box1").read_text(), qf.queue_file("box2").read_text()) == before
