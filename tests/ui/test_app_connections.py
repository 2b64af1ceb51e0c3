"""One SSH connection per host (DESIGN data flow 2), counted at a real loopback server.

The TUI drives every screen of a host — each detail tab, the Logs tab following a log,
the launch dialog and a launch, a diagnosis, an append, a pull, a verify and the teardown
checklist — while its telemetry streams; the box must have accepted exactly one
connection: every screen and job borrows the host's shared one.
"""

from __future__ import annotations

from pathlib import Path

from support.pilot import SIZE, screen_text, shown_notifications, wait_for
from support.teardown_ui import job_done
from textual.widgets import Button

from rgt_tui.app import RgtApp
from rgt_tui.domain.queue_state import FINISHED
from rgt_tui.screens.diagnosis import DiagnosisScreen
from rgt_tui.screens.fleet import FleetScreen
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.screens.launch_confirm import LaunchConfirmScreen
from rgt_tui.screens.tabs.logs import LogsTab


async def test_every_screen_and_job_of_a_host_shares_its_one_connection(
    make_queue_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(1, workload=True)
    box = qf.loopback.box("box1")
    app = RgtApp(qf.fleet, config_dir=tmp_path / "config")
    app.runtime.queues.poll_s = 0.5
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: "● 1 up" in screen_text(app), what="telemetry", pilot=pilot)

        # A launch: plan, confirm, and the queue runs to its end.
        await pilot.press("L")
        modal = await wait_for(
            lambda: isinstance(app.screen, LaunchConfirmScreen) and app.screen.plan and app.screen,
            what="the launch plan",
            pilot=pilot,
        )
        modal.query_one("#launch-go", Button).press()
        await wait_for(lambda: isinstance(app.screen, FleetScreen), pilot=pilot)
        # (Watched through the app's own poller: the test opens no connection of its own.)
        await wait_for(
            lambda: (v := app.runtime.queues.views.get("box1")) is not None and v.state == FINISHED,
            120,
            what="the queue's end",
            pilot=pilot,
        )

        # A diagnosis, then every tab of the detail screen (Logs follows the queue log).
        await pilot.press("d")
        await wait_for(lambda: isinstance(app.screen, DiagnosisScreen), pilot=pilot)
        await wait_for(lambda: app.screen.diagnosis is not None, what="the diagnosis", pilot=pilot)
        await pilot.press("escape")
        await pilot.press("enter")
        detail = await wait_for(
            lambda: isinstance(app.screen, HostDetailScreen) and app.screen, pilot=pilot
        )
        for tab in detail.tab_classes:
            detail.action_show_tab(tab.TAB_ID)
            await pilot.pause(0.3)
        detail.action_show_tab("logs")
        logs = detail.tabs["logs"]
        assert isinstance(logs, LogsTab)
        await wait_for(lambda: "QUEUE DONE" in "\n".join(logs.lines), what="the log", pilot=pilot)

        # An append (nothing new, over the box), a pull, a verify, the checklist.
        await pilot.press("a")
        await wait_for(
            lambda: any(n.title == "box1: no new cells" for n in shown_notifications(app)),
            pilot=pilot,
        )
        await pilot.press("p")
        await job_done(app, pilot, "box1", "pull_result")
        await pilot.press("v")
        await job_done(app, pilot, "box1", "verify_report")
        await pilot.press("t")
        await wait_for(lambda: app.jobs.state("box1").gate is not None, 60, pilot=pilot)

        assert app.jobs.state("box1").pull_result.ok
        assert box.connections_made == 1, f"{box.connections_made} connections to box1"
