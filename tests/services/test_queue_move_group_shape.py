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
    (warning,) = [w for w in plan.warnings if "ran as one job" in w]
    assert warning.startswith(
        "big ran as one job over 2 boxes (pair: box1, box2); on box3 it runs alone, under "
        f"box3's own run template: bash configs/big.yaml big {durable}/big run 200 — check"
    ), warning
    assert f"warning: {warning}" in plan_lines(plan)

    shown = await arun("queue", "move", "big", "--to", "box3", "--hosts", hosts)
    assert "ran as one job over 2 boxes" in shown.stdout, shown.stdout + shown.stderr
