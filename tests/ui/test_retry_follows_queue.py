"""The retry dialog follows the queue it plans on (h611 #2): opened while the queue ran
("The running queue runs it before its next cell"), left open while the queue ended, its
Retry marked a cell nothing would run. The plan is made again when the queue ends, says
why, and then offers the launch that runs the cell."""

from __future__ import annotations

import time
from pathlib import Path

from support.pilot import SIZE, make_app, text_of, wait_for
from support.queues import GATE, SCRIPT_RUN, wait_view
from textual.widgets import OptionList, Static

from rgt_tui.domain.queue_state import FAILED, RUNNING
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.screens.queue_control import CellPickScreen
from rgt_tui.screens.retry_confirm import RetryConfirmScreen
from rgt_tui.services.queue.launch import launch, plan_launch


async def test_a_retry_plan_made_while_the_queue_ran_is_made_again_when_it_ends(
    make_queue_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    one = qf.cell_script("one", "echo one; exit 3")
    gate = qf.cell_script("gate", GATE)
    qf.write_queue(f"{one} t\n{gate} t\n")
    transport = qf.transport()
    try:
        await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
    finally:
        await transport.close()
    await wait_view(
        qf,
        lambda v: [c.status for c in v.cells] == [FAILED, RUNNING],
        what="the first cell failed, the gate running",
    )
    app = make_app(tmp_path, fleet=qf.fleet, start_monitors=True, clock=time.time)
    app.runtime.queues.poll_s = 0.5
    async with app.run_test(size=SIZE) as pilot:
        app.open_host("box1", "queue")
        screen = await wait_for(
            lambda: app.screen if isinstance(app.screen, HostDetailScreen) else None, pilot=pilot
        )
        await wait_for(
            lambda: (
                screen.active_tab == "queue"
                and screen.queue_view is not None
                and screen.queue_view.runner_alive
            ),
            90,
            what="the poller's view of the running queue",
            pilot=pilot,
        )
        await pilot.press("R")
        await wait_for(lambda: isinstance(app.screen, CellPickScreen), 60, pilot=pilot)
        assert app.screen.query_one(OptionList).option_count == 1  # the failed cell alone
        await pilot.press("enter")
        modal = await wait_for(
            lambda: (
                isinstance(m := app.screen, RetryConfirmScreen)
                and m.plan is not None
                and not m.replanning
                and m
            ),
            what="the retry plan",
            pilot=pilot,
        )
        assert modal.plan.running
        notes = modal.query_one("#retry-notes", Static)
        assert "The running queue runs it before its next cell" in text_of(notes)

        (qf.root() / "go").touch()  # the gate opens: the queue ends with the dialog open
        status = modal.query_one("#retry-status", Static)
        await wait_for(
            lambda: (
                modal.plan is not None
                and not modal.plan.running
                and not modal.replanning
                and "the queue ended while this was open" in text_of(status)
            ),
            90,
            what="the plan made again",
            pilot=pilot,
        )
        said = text_of(notes)
        assert "The running queue" not in said, said
        assert "The queue is not running: it is launched for this cell" in said, said
        assert app.focused is modal.query_one("#retry-cancel")
