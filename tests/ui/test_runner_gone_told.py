"""A queue's runner seen running, then gone without its done record (killed from
outside): the TUI tells it once, as watch does (a toast, listed under n), not only as a
line under the pane's "✓ no alerts". Real loopback box, real views read from it."""

from __future__ import annotations

from pathlib import Path

from support.pilot import make_app, wait_for
from support.queues import SCRIPT_RUN, launched_holding, wait_view

from rgt_tui.controllers.notices import notices_of
from rgt_tui.domain.queue_state import STOPPED


async def test_a_runner_gone_is_told_once(make_queue_fleet, tmp_path: Path) -> None:
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    running = await launched_holding(qf, f"{qf.cell_script('next', 'echo hi')} t\n")
    app = make_app(tmp_path, fleet=qf.fleet)
    async with app.run_test(notifications=True) as pilot:
        await pilot.pause()
        app.runtime.queue_viewed("box1", running)
        qf.kill_session()  # the runner and its cell, from outside: no done record
        gone = await wait_view(qf, lambda v: v.state == STOPPED, what="the runner gone")
        app.runtime.queue_viewed("box1", gone)
        title = "box1: the queue stopped: its runner is gone"

        def told() -> list[str]:
            return [n.title for n in notices_of(app).items() if n.title.startswith(title)]

        await wait_for(told, pilot=pilot)
        app.runtime.queue_viewed("box1", gone)  # read again: nothing new to tell
        await pilot.pause()
        assert len(told()) == 1
        notice = next(n for n in notices_of(app).items() if n.title.startswith(title))
        assert "rgt-tui diagnose box1" in notice.text and "resume from cell 0" in notice.text
