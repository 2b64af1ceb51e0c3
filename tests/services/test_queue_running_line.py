"""A running cell's last printed line, read by the queue probe the poll already runs
(issue 41: a group's pane shows each rank's last log line), and shown on the rank's line."""

from __future__ import annotations

from support.queues import SCRIPT_RUN, wait_view

from rgt_tui.content.host_text import rank_line
from rgt_tui.domain.group_run import RankView
from rgt_tui.domain.queue_state import RUNNING, CellView, QueueView
from rgt_tui.services.queue.launch import launch, plan_launch

# Prints its progress, then waits for $HOME/go (the test never opens it: the cell runs on).
TRAIN = (
    'echo "step 1 loss 0.9"; printf "step 2 loss 0.7\\r"; echo "step 3 loss 0.5"; echo; '
    'while [ ! -e "$HOME/go" ]; do sleep 0.05; done'
)


async def test_a_running_cells_last_printed_line_is_in_the_queue_view(make_queue_fleet):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    train = qf.cell_script("train", TRAIN)
    qf.write_queue(f"{train} t 1\n")
    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
    await transport.close()
    view = await wait_view(
        qf,
        lambda v: v.cells[0].status == RUNNING and v.cells[0].last_line != "",
        what="the running cell's last line",
    )
    # The last non-blank line, past a carriage-return progress line and a blank one.
    assert view.cells[0].last_line == "step 3 loss 0.5"


def _rank(cell: CellView) -> RankView:
    view = QueueView("box1", "running", (cell,), None, "boot", 100, None)
    return RankView(0, "box1", view)


def test_rank_line_shows_a_running_cells_last_line_cut():
    cell = CellView(0, "train", RUNNING, started_at=10, last_line="step 3 loss 0.5")
    assert rank_line(_rank(cell)).plain == "   └ running train: step 3 loss 0.5"
    long = CellView(0, "train", RUNNING, started_at=10, last_line="x" * 500)
    assert rank_line(_rank(long)).plain == "   └ running train: " + "x" * 200
