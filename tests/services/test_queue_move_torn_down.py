"""ux-e #7, hour s22a #1: moving a cell to a host the journal records as torn down is
refused, as a launch there is (GEN1: a box meant to be destroyed that runs work keeps
billing). Moved anyway, the cell waited where nothing would run it, and the source's gate
counted it "moved" and opened. Two loopback boxes, the real command line."""

from __future__ import annotations

import time

from support.cli import arun
from support.pilot import SIZE, make_app, wait_for
from support.queues import SCRIPT_RUN

from rgt_tui.domain.box_identity import BoxIdentity
from rgt_tui.paths import journal_dir
from rgt_tui.screens.queue_move_dialog import QueueMoveScreen
from rgt_tui.services.journal import Journal, TeardownRecord
from rgt_tui.services.queue.move import plan_lines, plan_move

WARNED = "box2 is recorded as torn down ("


async def test_a_move_to_a_torn_down_host_is_refused(make_queue_fleet, tmp_path):
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    qf.write_queue("cells/a.sh t 1\ncells/b.sh t 1\n", "box1")
    qf.write_queue("", "box2")
    hosts = qf.loopback.hosts_file

    transport = qf.transport("box1")
    try:
        before = await plan_move(qf.fleet, qf.host("box1"), ["a"], "box2", transport)
    finally:
        await transport.close()
    assert before.ok and not any(WARNED in w for w in before.warnings), before.warnings

    # box2's box torn down an hour ago, as `rgt-tui teardown` records it.
    at = time.time() - 3600
    journal = Journal(journal_dir(hosts))
    journal.observe_box("box2", BoxIdentity("0ld0ld0ld0ld0ld0ld0ld0ld0ld0ld00", None), at - 3600)
    journal.add_teardown(
        "box2", TeardownRecord(at, "true", 0, "", True, box_id="0ld0ld0ld0ld0ld0ld0ld0ld0ld0ld00")
    )

    transport = qf.transport("box1")
    try:
        plan = await plan_move(qf.fleet, qf.host("box1"), ["a"], "box2", transport)
    finally:
        await transport.close()
    assert not plan.ok
    (refusal,) = [line for line in plan_lines(plan) if WARNED in line]
    assert refusal.startswith("REFUSED: ") and "nothing would run the cell there" in refusal
    assert "billing: GEN1" in refusal, refusal

    # The dialog: the same warning, and the cursor on Cancel, not on Move (Enter moved
    # the cell onto a box meant to be gone: a user's hour).
    app = make_app(tmp_path, fleet=qf.fleet)
    async with app.run_test(size=SIZE) as pilot:
        app.push_screen(QueueMoveScreen(qf.fleet, qf.host("box1"), app.connections))
        screen = await wait_for(
            lambda: app.screen if isinstance(app.screen, QueueMoveScreen) else None, pilot=pilot
        )
        await pilot.press("a", "enter", *"box2", "enter")
        await wait_for(lambda: screen.plan is not None, what="the plan", pilot=pilot)
        await pilot.pause()
        assert not screen.plan.ok and app.focused is screen.query_one("#move-cancel")
        assert screen.query_one("#move-go").disabled

    moved = await arun("queue", "move", "b", "--to", "box2", "--yes", "--hosts", hosts)
    assert moved.returncode != 0, moved.stdout
    assert WARNED in moved.stdout + moved.stderr, moved
    assert "#moved-to" not in qf.queue_file("box1").read_text()  # nothing moved


async def test_a_finished_verified_cell_of_a_box_that_does_not_answer_is_not_moved(
    make_queue_fleet,
):
    """Hour s24a #2: box3 finished its queue, was pulled and verified, then torn down and
    gone; `m` offered its done cells as "Move, resume" onto the spare, Enter on the
    default ran them again there (billed), and nothing said box3 was torn down."""
    from support.queues import wait_view
    from support.resume_cell import pull_verify

    from rgt_tui.domain.queue_state import DONE
    from rgt_tui.services.queue.launch import launch, plan_launch

    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    done = qf.cell_script("done", 'mkdir -p "$2"; echo \'{"acc": 1}\' > "$2/metrics.json"')
    qf.write_queue(f"{done} t 1\n", "box1")
    qf.write_queue("", "box2")
    transport = qf.transport("box1")
    try:
        await launch(await plan_launch(qf.fleet, qf.host("box1"), transport), transport)
    finally:
        await transport.close()
    await wait_view(qf, lambda v: v.cells[0].status == DONE, what="the cell to finish")
    assert (await pull_verify(qf, "box1")).ok
    at = time.time()
    journal = Journal(journal_dir(qf.loopback.hosts_file))
    box_id = "0ne0ne0ne0ne0ne0ne0ne0ne0ne0ne00"
    journal.observe_box("box1", BoxIdentity(box_id, None), at - 60)
    journal.add_teardown("box1", TeardownRecord(at, None, None, "", True, box_id, True))
    await qf.loopback.box("box1").stop()  # destroyed: it does not answer

    transport = qf.transport("box1")
    try:
        plan = await plan_move(qf.fleet, qf.host("box1"), ["done"], "box2", transport, resume=True)
    finally:
        await transport.close()
    assert not plan.ok and not plan.source_answered
    (refusal,) = [p for p in plan.problems if "it finished on box1" in p]
    assert "(its records as last pulled: exit 0 at " in refusal
    assert "moving it would run it again" in refusal
    assert any(w.startswith("box1 is recorded as torn down (") for w in plan.warnings)
