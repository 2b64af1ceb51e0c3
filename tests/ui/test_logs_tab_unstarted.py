"""The Logs tab on a cell that has not run, in a queue that does not run: it says the log
will not come by itself, not only "waiting for the file to appear" (a user's hour, on a
cell a launch from a later start had passed over). A real loopback box, the real App."""

from __future__ import annotations

import time
from pathlib import Path

from support.pilot import SIZE, make_app, open_logs_tab, text_of, wait_for
from support.queues import SCRIPT_RUN, wait_view
from textual.widgets import Static

from rgt_tui.domain.queue_state import FINISHED, RUNNING
from rgt_tui.screens.tabs.logs import LogsTab
from rgt_tui.services.queue.launch import launch, plan_launch


async def cell_status(app, pilot, cell: str, shows: str) -> str:  # type: ignore[no-untyped-def]
    """The Logs tab's status line for ``cell``, once it ``shows`` that text."""
    tab = await open_logs_tab(app, pilot)
    assert isinstance(tab, LogsTab)
    await wait_for(lambda: tab._cells, what="the cells read", pilot=pilot)
    status = tab.query_one("#logs-status", Static)
    tab.choose(cell)
    return await wait_for(
        lambda: shows in text_of(status) and text_of(status), what=f"{cell}'s status", pilot=pilot
    )


async def test_a_cell_passed_over_by_the_start_says_it_has_not_started(  # type: ignore[no-untyped-def]
    make_queue_fleet, tmp_path: Path
) -> None:
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.write_queue("".join(f"{qf.cell_script(n, 'echo ran')} t 1\n" for n in ("a", "b")))
    transport = qf.transport()
    try:
        plan = await plan_launch(qf.fleet, qf.host(), transport, start_index=1)
        assert plan.ok, plan.problems
        await launch(plan, transport)
    finally:
        await transport.close()
    await wait_view(qf, lambda v: v.state == FINISHED, what="b to run")
    app = make_app(tmp_path, fleet=qf.fleet, start_monitors=True, clock=time.time)
    async with app.run_test(size=SIZE) as pilot:
        said = await cell_status(app, pilot, "a", "no log yet")
        tab, status = app.screen.query_one(LogsTab), app.screen.query_one("#logs-status", Static)
        # Not "waiting for the file to appear": nothing is coming by itself.
        assert "no log yet — cell a has not started and the queue is finished" in said, said
        assert "waiting" not in said
        tab.choose("b")  # its log is there: nothing of the kind
        await wait_for(lambda: "ran" in tab.lines, what="b's log", pilot=pilot)
        assert "has not started" not in text_of(status)


async def test_a_cell_a_running_queue_passed_over_says_so(  # type: ignore[no-untyped-def]
    make_queue_fleet, tmp_path: Path
) -> None:
    """The same while the queue runs: the tab said nothing (its rule read "a running queue
    may still start it"), where ``logs -f`` stopped waiting; one rule serves both now
    (``domain.queue_waiting``). A cell the running queue has yet to start gets no note."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    hold = "while [ ! -e go ]; do sleep 0.1; done; echo held"
    qf.write_queue(
        "".join(f"{qf.cell_script(n, body)} t 1\n" for n, body in
                (("a", "echo ran"), ("b", hold), ("c", "echo ran")))
    )  # fmt: skip
    transport = qf.transport()
    try:
        plan = await plan_launch(qf.fleet, qf.host(), transport, start_index=1)
        assert plan.ok, plan.problems
        await launch(plan, transport)
    finally:
        await transport.close()
    await wait_view(qf, lambda v: v.cells[1].status == RUNNING, what="b to run")
    app = make_app(tmp_path, fleet=qf.fleet, start_monitors=True, clock=time.time)
    try:
        async with app.run_test(size=SIZE) as pilot:
            said = await cell_status(app, pilot, "a", "no log yet")
            tab = app.screen.query_one(LogsTab)
            status = tab.query_one("#logs-status", Static)
            assert "cell a has not started and the running queue started after it, at cell 1" in (
                said
            ), said
            tab.choose("c")  # still to run: the running queue starts it after b
            said = await wait_for(
                lambda: "appear" in text_of(status) and text_of(status),
                what="c's status",
                pilot=pilot,
            )
            assert "waiting for the file to appear" in said, said
            assert "has not started and" not in said, said
    finally:
        (qf.root() / "go").touch()
