"""`queue move` of a group's cell (one torchrun job over several boxes) to a single box
(UX trial H9): the plan says how the cell ran and shows the command the destination runs
under its own template, which may be another program. Three loopback boxes; box1 and
box2 form the group ``pair``, box3 is a plain box with its own run template."""

from __future__ import annotations

from support.cli import arun
from support.queues import SCRIPT_RUN

from rgt_tui.services.queue.move import plan_lines, plan_move

GROUP = """
[[groups]]
name = "pair"
hosts = ["box1", "box2"]
queue = "{queue}"
run = "torchrun --nnodes {{nnodes}} --node-rank {{node_rank}} ddp_train.py {{out}} {{epochs}} {{cfg}}"
durable_dir = "~/persist"
"""


async def test_moving_a_group_cell_to_a_single_box_says_so_and_shows_its_command(
    make_queue_fleet,
):
    qf = await make_queue_fleet(3, run=SCRIPT_RUN)
    queue = qf.queue_file("pair")
    qf.write_queue("configs/big.yaml run 200\n", "pair")
    qf.write_queue("", "box3")
    hosts = qf.loopback.hosts_file
    hosts.write_text(hosts.read_text() + GROUP.format(queue=queue))
    qf._fleet = None  # the fleet file changed: load it again

    transport = qf.transport("pair")
    try:
        plan = await plan_move(qf.fleet, qf.host("pair"), ["big"], "box3", transport)
    finally:
        await transport.close()
    assert plan.ok, plan.problems
    durable = qf.host("box3").durable_dir.rstrip("/")
    (warning,) = [w for w in plan.warnings if "runs as one job" in w]
    assert warning.startswith(
        "big runs as one job over 2 boxes on pair (box1, box2); on box3 it runs alone, under "
        f"box3's own run template: bash configs/big.yaml big {durable}/big run 200 — check"
    ), warning
    assert f"warning: {warning}" in plan_lines(plan)

    shown = await arun("queue", "move", "big", "--to", "box3", "--hosts", hosts)
    assert "runs as one job over 2 boxes" in shown.stdout, shown.stdout + shown.stderr


async def test_moving_to_a_group_with_a_box_recorded_torn_down_is_refused(make_queue_fleet):
    """The group's journal holds no teardown: its boxes' do (a user's hour moved a cell
    to a group whose rank 0 was torn down, unwarned, where a move to the box warned; a
    move there is now refused, as to the box: hour s22a #1)."""
    import time

    from rgt_tui.domain.box_identity import BoxIdentity
    from rgt_tui.paths import journal_dir
    from rgt_tui.services.journal import Journal, TeardownRecord

    qf = await make_queue_fleet(3, run=SCRIPT_RUN)
    qf.write_queue("", "pair")
    qf.write_queue("configs/small.yaml run 2\n", "box3")
    hosts = qf.loopback.hosts_file
    hosts.write_text(hosts.read_text() + GROUP.format(queue=qf.queue_file("pair")))
    qf._fleet = None
    at, box = time.time() - 60, "0ld0ld0ld0ld0ld0ld0ld0ld0ld0ld00"
    journal = Journal(journal_dir(hosts))
    journal.observe_box("box1", BoxIdentity(box, None), at - 3600)
    journal.add_teardown("box1", TeardownRecord(at, "true", 0, "", True, box_id=box))

    transport = qf.transport("box3")
    try:
        plan = await plan_move(qf.fleet, qf.host("box3"), ["small"], "pair", transport)
    finally:
        await transport.close()
    assert not plan.ok
    assert [p for p in plan.problems if p.startswith("box1 is recorded as torn down (")]
