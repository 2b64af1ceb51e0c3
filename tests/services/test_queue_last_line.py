"""A cell's last line without its newline (a print cut short, a progress bar's closing
"\\r") stays its own line: the runner's exit line was glued to it, so the failure's note
read "ValueError: bad config key lr[rgt 2026-… ] cell 0 glued: exit 1" and the bar's
last state was lost from the log (h583 #2). Over the loopback box and its real runner."""

from __future__ import annotations

from support.queues import SCRIPT_RUN, wait_view

from rgt_tui.domain.logscan import clean_line
from rgt_tui.domain.queue_state import DONE, FAILED, FINISHED
from rgt_tui.services.queue.launch import launch, plan_launch


async def test_the_exit_line_never_joins_a_last_line_left_unfinished(make_queue_fleet):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    glued = qf.cell_script("glued", 'printf "ValueError: bad config key lr"; exit 1')
    bar = qf.cell_script("bar", 'printf "epoch 3/3: 99%%\\r"; exit 0')
    whole = qf.cell_script("whole", "echo all said")
    qf.write_queue(f"{glued} t\n{bar} t\n{whole} t\n")
    transport = qf.transport()
    try:
        plan = await plan_launch(qf.fleet, qf.host(), transport)
        assert plan.ok, plan.problems
        await launch(plan, transport)
    finally:
        await transport.close()
    view = await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to finish")
    assert [(c.name, c.status) for c in view.cells] == [
        ("glued", FAILED), ("bar", DONE), ("whole", DONE),
    ]  # fmt: skip
    assert view.cells[0].note == "ValueError: bad config key lr", view.cells[0].note
    logs = {n: (qf.qdir() / "cells" / f"{n}.log").read_bytes() for n in ("glued", "bar", "whole")}
    assert b"ValueError: bad config key lr\n[rgt " in logs["glued"]
    assert b"epoch 3/3: 99%\r\n[rgt " in logs["bar"]
    assert b"all said\n[rgt " in logs["whole"]  # a finished line gets no blank one after it
    # The bar's last state, as the log views show it (a redraw's "\r" read as they read it).
    shown = [clean_line(line) for line in logs["bar"].split(b"\n")]
    assert "epoch 3/3: 99%" in shown, shown
