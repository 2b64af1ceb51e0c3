"""Hour s25a #1, #2: box1's cell moved to box3, then on to box2 before box3 held it. box3's
line was deleted, but box1's file kept `#moved-to box3`: box1's views said "moved to
box3" while it ran on box2, and box1's teardown gate stayed locked on "no move is on
record". box1's line now follows the cell. Loopback boxes, the real runner."""

from __future__ import annotations

from support.queues import SCRIPT_RUN, launched_holding

from rgt_tui.services.queue.move import apply_move, plan_move
from rgt_tui.services.queue.moved_skips import moves_on_record
from rgt_tui.services.queue.view import read_queue_view


async def move(qf, source: str, cells: list[str], dest: str):  # type: ignore[no-untyped-def]
    transport = qf.transport(source)
    try:
        plan = await plan_move(qf.fleet, qf.host(source), cells, dest, transport)
        assert plan.ok, plan.problems
        return plan, await apply_move(plan, qf.host(source), transport)
    finally:
        await transport.close()


async def test_a_cell_moved_on_before_its_box_held_it_is_followed_by_its_origin(
    make_queue_fleet,
):
    qf = await make_queue_fleet(3, run=SCRIPT_RUN)
    wide = qf.cell_script("wide", "echo wide")
    qf.write_queue("", "box2")
    qf.write_queue("", "box3")
    await launched_holding(qf, f"{wide} t 1\n")  # box1 holds wide, behind a running cell

    await move(qf, "box1", ["wide"], "box3")  # box1 holds it: it becomes #moved-to box3
    assert f"#moved-to box3: {wide} t 1" in qf.queue_file("box1").read_text()
    plan, result = await move(qf, "box3", ["wide"], "box2")  # box3 never held it
    assert any("wide came to box3 from box1" in w for w in plan.warnings), plan.warnings

    box1 = qf.queue_file("box1").read_text()
    assert f"#moved-to box2: {wide} t 1" in box1 and "#moved-to box3" not in box1, box1
    assert wide not in qf.queue_file("box3").read_text().replace("# moved from", "")
    assert f"{wide} t 1" in qf.queue_file("box2").read_text()
    (said,) = result.origins
    assert "box1.txt:2 now reads '#moved-to box2: " in said, said
    # The move is on record for box1's teardown gate: box2's queue file holds the cell.
    seen = moves_on_record(qf.fleet, qf.host("box1"))
    assert seen.held == {"wide": "box2"} and not seen.unheld, seen

    transport = qf.transport("box1")
    try:
        view = await read_queue_view(qf.host("box1"), transport)
    finally:
        await transport.close()
    cell = next(c for c in view.cells if c.name == "wide")
    assert cell.label == "moved" and cell.note.startswith("moved to box2 (on from: "), cell
    assert "box3" in cell.note
    (qf.root("box1") / "go").touch()
