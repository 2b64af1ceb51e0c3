"""A queue launched from the TUI whose cells failed at once ended between two polls: the
end was told only for a queue some poll had seen running, so nothing said it (the s39
note's group that failed in its first poll; a single box's ``import`` error alike). Real
loopback box, real launch dialog, views read from the box and handed to the App."""

from __future__ import annotations

from pathlib import Path

from support.pilot import make_app, wait_for
from support.queues import SCRIPT_RUN, launched_holding, wait_view

from rgt_tui.controllers.notices import notices_of
from rgt_tui.domain.queue_state import FINISHED
from rgt_tui.screens.fleet import FleetScreen
from rgt_tui.screens.launch_confirm import LaunchConfirmScreen


async def test_a_queue_launched_here_that_fails_at_once_is_told_once_and_the_old_end_never(
    make_queue_fleet, tmp_path: Path
) -> None:
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    # An earlier launch, ended before the TUI opened: its end is old news.
    await launched_holding(qf)
    (qf.root() / "go").touch()
    old = await wait_view(qf, lambda v: v.state == FINISHED, what="the first queue to end")
    app = make_app(tmp_path, fleet=qf.fleet)
    async with app.run_test(notifications=True) as pilot:
        await pilot.pause()

        def told() -> list[str]:
            return [n.title for n in notices_of(app).items() if ": queue finished" in n.title]

        app.runtime.queue_viewed("box1", old)
        await pilot.pause()
        assert told() == []
        qf.append_queue(f"{qf.cell_script('broke', 'exit 3')} t\n")
        await pilot.press("L")
        dialog = await wait_for(
            lambda: (
                isinstance(app.screen, LaunchConfirmScreen)
                and app.screen.plan is not None
                and app.screen
            ),
            what="the launch plan",
            pilot=pilot,
        )
        assert dialog.plan is not None and dialog.plan.ok, dialog.plan.problems
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, FleetScreen), pilot=pilot)
        app.runtime.queue_viewed("box1", old)  # a poll before the box wrote the new launch
        await pilot.pause()
        assert told() == []
        ended = await wait_view(
            qf,
            lambda v: v.state == FINISHED and v.launch is not None and v.launch != old.launch,
            what="the new queue to end",
        )
        app.runtime.queue_viewed("box1", ended)  # no poll saw it run
        await wait_for(told, pilot=pilot)
        assert told() == ["box1: queue finished: 1/2 done, 1 failed"], told()
        app.runtime.queue_viewed("box1", ended)  # read again: nothing new to tell
        await pilot.pause()
        assert len(told()) == 1
