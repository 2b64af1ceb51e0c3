"""Cells named with a space or a leading dot (``'cells/slow run.sh'``, ``cells/.hid.sh``):
the queue file accepts them and the runner runs them, so the box's controls take them
too. Its name check refused both, and such a cell could be neither killed, retried nor
moved (h583 #1). Over the loopback box and its real runner; cells wait on gate files."""

from __future__ import annotations

from support.queues import SCRIPT_RUN, wait_view
from support.waiting import wait_for

from rgt_tui.domain.queue_state import DONE, FAILED, FINISHED, KILLED, RUNNING, SKIPPED
from rgt_tui.services.queue.control import kill_cell, plan_retry, retry_cells, skip_cell
from rgt_tui.services.queue.launch import launch, plan_launch
from rgt_tui.services.queue.view import read_queue_view


async def test_a_cell_named_with_a_space_or_a_dot_is_killed_retried_and_skipped(
    make_queue_fleet,
):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    slow = qf.cell_script(
        "slow run", 'echo started; while [ ! -e "$HOME/go" ]; do sleep 0.05; done'
    )
    hid = qf.cell_script(".hid", 'if [ -e "$HOME/go" ]; then exit 0; fi; echo "not yet"; exit 3')
    later = qf.cell_script(".later", "echo later ran")
    qf.write_queue(f"'{slow}' t\n{hid} t\n{later} t\n")
    host = qf.host()
    transport = qf.transport()
    try:
        # A plan, as the launch dialog and the CLI make it.
        plan = await plan_launch(qf.fleet, host, transport)
        assert plan.ok, plan.problems
        await transport.connect()
        await skip_cell(transport, "box1", ".later", "moved to box2")  # a move's record
        await launch(plan, transport)
        await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="'slow run' to run")
        killed = await kill_cell(host, transport, then="next", grace_s=5)
        assert killed.cell is not None and killed.cell.name == "slow run"
        assert killed.cell.status == KILLED
        view = await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to finish")
        assert [(c.name, c.status) for c in view.cells] == [
            ("slow run", KILLED),
            (".hid", FAILED),
            (".later", SKIPPED),
        ]
        (qf.root() / "go").touch()
        retry = await plan_retry(qf.fleet, host, transport, ["slow run", ".hid"])
        assert retry.ok, retry.problems
        await retry_cells(retry, transport)
        await wait_for(
            lambda: (
                [line.split()[0] for line in qf.state(".hid").splitlines()][-1:] == ["end"]
                and len(qf.state(".hid").splitlines()) == 5
            ),
            what="the retried cells to run again",
        )
        view = await wait_view(qf, lambda v: v.state == FINISHED, what="the retry to finish")
        shown = await read_queue_view(host, transport)
    finally:
        await transport.close()
    assert [(c.name, c.status) for c in view.cells][:2] == [("slow run", DONE), (".hid", DONE)]
    assert shown.cells[2].status == SKIPPED and "later ran" not in qf.state(".later")
    assert [line.split()[0] for line in qf.state("slow run").splitlines()] == [
        "start", "kill", "end", "retry", "start", "end",
    ]  # fmt: skip
