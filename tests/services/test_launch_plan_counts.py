"""What the launch plan counts and where it starts: a cell moved away while its box did
not answer is shown moved and not counted (ux-e #5), and a launch's result counts the
cells that run, not every cell of the queue (ux-d #17). Loopback boxes, real runner."""

from __future__ import annotations

from support.queues import GATE, QUEUE_PREFLIGHT_ACK, SCRIPT_RUN, wait_view

from rgt_tui.domain.queue_state import DONE, FINISHED, INTERRUPTED, REBOOTED, RUNNING
from rgt_tui.services.queue.launch import MOVED, default_start, launch, plan_launch
from rgt_tui.services.queue.move import apply_move, plan_move


def _bash_cells(qf, *names: str) -> None:
    """These cells are bash scripts: no torch, so no architecture to match (arch)."""
    for name in names:
        qf.set_preflight_ack(tuple(dict.fromkeys((*QUEUE_PREFLIGHT_ACK, "arch"))), name)


async def _plan(qf, start: int | None = None):
    """The plan as the launch dialog and ``rgt-tui launch`` make it: without a start,
    again from ``default_start``."""
    transport = qf.transport("box1")
    try:
        plan = await plan_launch(qf.fleet, qf.host("box1"), transport, start_index=start or 0)
        if start is None and default_start(plan) != plan.start_index:
            plan = await plan_launch(
                qf.fleet, qf.host("box1"), transport, start_index=default_start(plan)
            )
        return plan
    finally:
        await transport.close()


async def _launch(qf, plan):
    transport = qf.transport("box1")
    try:
        return await launch(plan, transport)
    finally:
        await transport.close()


async def test_a_cell_moved_while_its_box_was_down_is_shown_moved_and_started_past(
    make_queue_fleet,
):
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    _bash_cells(qf, "box1", "box2")
    alpha = qf.cell_script("alpha", GATE)  # interrupted by the reboot below
    bravo = qf.cell_script("bravo", 'echo ran >> "$HOME/bravo.runs"')
    charlie = qf.cell_script("charlie", "echo c")
    qf.write_queue(f"{alpha} t 1\n{bravo} t 1\n{charlie} t 1\n")
    qf.write_queue("", "box2")
    first = await _plan(qf)
    assert first.ok, first.problems
    await _launch(qf, first)
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="alpha to run")
    qf.reboot("box1")
    view = await wait_view(qf, lambda v: v.state == REBOOTED, what="the reboot to show")
    assert view.cells[0].status == INTERRUPTED

    # box1 stops answering; alpha is moved to box2 all the same (its box is not told).
    box1 = qf.loopback.box("box1")
    await box1.stop()
    transport = qf.transport("box1")
    try:
        moving = await plan_move(
            qf.fleet, qf.host("box1"), ["alpha"], "box2", transport, resume=True
        )
        assert moving.ok and not moving.source_answered, moving.problems
        await apply_move(moving, qf.host("box1"), transport)
    finally:
        await transport.close()
    await box1.start()

    plan = await _plan(qf)
    assert plan.ok, plan.problems
    assert [(c.name, c.status) for c in plan.cells] == [
        ("alpha", MOVED), ("bravo", "pending"), ("charlie", "pending"),
    ]  # fmt: skip
    assert plan.start_index == 1
    assert [c.name for c in plan.runs] == ["bravo", "charlie"]  # "will run 2 of 3 cells"
    assert not any("not done: not run by this launch" in w for w in plan.warnings)

    # From cell 0 typed by hand: alpha is still not counted (its box skips it).
    from_zero = await _plan(qf, start=0)
    assert [c.name for c in from_zero.runs] == ["bravo", "charlie"]
    result = await _launch(qf, from_zero)
    assert result.cells == 2
    done = await wait_view(qf, lambda v: v.state == FINISHED, what="box1's relaunch")
    assert [c.label for c in done.cells] == [MOVED, DONE, DONE]
    assert (qf.root("box1") / "bravo.runs").read_text() == "ran\n"


async def test_a_launch_from_index_2_says_it_launched_the_2_cells_that_run(make_queue_fleet):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    _bash_cells(qf, "box1")
    names = ("c0", "c1", "c2", "c3")
    qf.write_queue("".join(f"{qf.cell_script(n, 'echo ok')} t 1\n" for n in names))
    plan = await _plan(qf, start=2)
    assert plan.ok, plan.problems
    assert len(plan.runs) == 2 and len(plan.cells) == 4
    result = await _launch(qf, plan)
    assert (result.start_index, result.cells) == (
        2,
        2,
    )  # the toast: "launched 2 cells from index 2"
    await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to finish")
