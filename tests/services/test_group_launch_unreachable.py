"""A group's launch with one box down (h617 #2): the plan stops at once, as
``rgt-tui preflight GROUP`` does, naming the rank and its box — not the group — and runs
none of the group's checks (rendezvous, nic, clocks…) over the box that did not answer,
nor calls a box check passed on "every box" when only the others answered. Loopback
boxes; ``pair`` is box1 (rank 0) and box2 (rank 1)."""

from __future__ import annotations

from support.cli import arun
from support.queues import SCRIPT_RUN

from rgt_tui.services.queue.backends import backend_for

GROUP = """
[[groups]]
name = "pair"
hosts = ["box1", "box2"]
queue = "{queue}"
run = "bash {{cfg}} {{node_rank}} {{out}}"
workdir = "~"
durable_dir = "~/results"
"""


async def test_a_group_launch_with_a_box_down_names_that_box_and_stops(make_queue_fleet):
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    for box in ("box1", "box2"):
        line = qf.cell_script("a", "true", name=box)
    qf.write_queue(f"{line} t 1\n", "pair")
    path = qf.loopback.hosts_file
    path.write_text(path.read_text() + GROUP.format(queue=qf.queue_file("pair")))
    qf._fleet = None
    await qf.loopback.box("box2").stop()

    group = qf.host("pair")
    transport = qf.transport("pair")
    try:
        plan = await backend_for(group).plan_launch(qf.fleet, transport)
    finally:
        await transport.close()
    assert not plan.ok
    (problem,) = plan.problems
    assert problem.startswith("rank 1 (box2) is unreachable: connection refused by "), problem
    assert "for box2)" in problem  # the fix names the box's own ssh entry
    assert plan.preflight is None  # no check of the group's ran over a box that is down

    shown = await arun("launch", "pair", "--yes", "--hosts", path)
    assert shown.returncode == 1, shown.stdout + shown.stderr
    assert "REFUSED: rank 1 (box2) is unreachable: connection refused" in shown.stdout
    for said in ("every box", "rendezvous", "pair is unreachable"):
        assert said not in shown.stdout + shown.stderr, shown.stdout
