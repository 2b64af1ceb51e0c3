"""The launch (L) and retry (R) dialogs under the keyboard, against real loopback boxes:
every Tab stop shows where the focus is (the scrolling plan and the cells' table were
stops that showed nothing, and Enter there did nothing); why a launch is refused comes
first in the plan, under the status line's "Refused", with no Acknowledge button that
could not change it; and the plan scrolls by keys, as tall as the terminal allows."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from support.pilot import make_app, screen_text, text_of, wait_for
from support.queues import GATE, SCRIPT_RUN, wait_view
from test_retry_dialog_safe import finished_queue, open_retry
from textual.containers import ScrollableContainer
from textual.widget import Widget
from textual.widgets import Input, Static

from rgt_tui.app import RgtApp
from rgt_tui.domain.queue_state import RUNNING
from rgt_tui.screens.dialog import MARK_LEFT, DialogButton, ReplanScreen
from rgt_tui.screens.launch_confirm import LaunchConfirmScreen
from rgt_tui.screens.retry_confirm import RetryConfirmScreen
from rgt_tui.services.queue.launch import launch, plan_launch


def shows_focus(widget: Widget | None) -> bool:
    """A button marked ``▶ … ◀``, or the start box (its hint line says what Enter does)."""
    if isinstance(widget, DialogButton):
        return str(widget.label).startswith(MARK_LEFT)
    return isinstance(widget, Input)


async def tab_stops(pilot: Any, screen: ReplanScreen[Any], presses: int) -> list[Widget | None]:
    """What each of ``presses`` Tabs focuses, once it shows its focus (a stop that never
    does fails here, naming it)."""
    seen = []
    for _ in range(presses):
        before = screen.focused
        await pilot.press("tab")
        await wait_for(
            lambda before=before: screen.focused is not before and shows_focus(screen.focused),
            10,
            what=f"the Tab stop after {before} to show its focus (now: {screen.focused})",
            pilot=pilot,
        )
        seen.append(screen.focused)
    return seen


async def test_a_refused_launch_says_why_first_scrolls_by_keys_and_shows_each_tab_stop(
    make_queue_fleet: Any, tmp_path: Path
) -> None:
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    cells = [qf.cell_script("gate", GATE)] + [
        qf.cell_script(f"cell{i:02}", "exit 0") for i in range(30)
    ]
    qf.write_queue("".join(f"{c} t\n" for c in cells))
    transport = qf.transport()
    plan = await plan_launch(qf.fleet, qf.host(), transport)
    plan = await plan_launch(qf.fleet, qf.host(), transport, acks=plan.unacknowledged)
    await launch(plan, transport)
    await transport.close()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="the gate cell to run")
    qf.set_preflight_ack(("torch",))  # gpu and driver fail here: Acknowledge would be offered
    app: RgtApp = make_app(tmp_path, fleet=qf.fleet, start_monitors=True, clock=time.time)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("L")
        modal = await wait_for(
            lambda: (
                app.screen
                if isinstance(app.screen, LaunchConfirmScreen) and app.screen.plan is not None
                else None
            ),
            60,
            what="the launch plan",
            pilot=pilot,
        )
        assert modal.plan is not None and any("already running" in p for p in modal.plan.problems)
        assert modal.plan.unacknowledged  # gpu failed too: not what refuses it
        status = text_of(modal.query_one("#launch-status", Static))
        assert "Refused: this queue cannot be launched now" in status
        refused = modal.query_one("#launch-refused", Static)
        assert "✖ the queue on box1 is already running" in text_of(refused)
        assert "Refused" not in text_of(modal.query_one("#launch-notes", Static))
        # On screen as the dialog opens, not below the fold of 31 cells.
        await wait_for(lambda: "is already running" in screen_text(app), pilot=pilot)
        assert not modal.query_one("#launch-ack", DialogButton).display
        assert not modal.query_one("#launch-go", DialogButton).display

        stops = await tab_stops(pilot, modal, 4)
        assert {w.id for w in stops if w is not None} == {"launch-start", "launch-cancel"}

        body = modal.query_one("#launch-body", ScrollableContainer)
        await wait_for(
            lambda: body.max_scroll_y > 0, what="a plan taller than the body", pilot=pilot
        )
        await wait_for(lambda: "PgUp PgDn: scroll" in screen_text(app), pilot=pilot)
        body.scroll_home(animate=False)  # Tab to the start box scrolled it into view
        await wait_for(lambda: body.scroll_y == 0, pilot=pilot)
        await pilot.press("pagedown")
        await wait_for(lambda: body.scroll_y > 1, what="PageDown to scroll the plan", pilot=pilot)
        paged = body.scroll_y
        await pilot.press("pageup")
        await wait_for(lambda: body.scroll_y == 0, what="PageUp to scroll back", pilot=pilot)
        await pilot.press("down")
        await wait_for(lambda: body.scroll_y == 1, what="↓ to scroll a line", pilot=pilot)
        assert paged > 1

        low = body.region.height
        await pilot.resize_terminal(80, 50)
        await wait_for(lambda: body.region.height > low + 10, what="a taller body", pilot=pilot)
        box = modal.query_one("#launch-box")
        assert box.region.bottom <= 50 and modal.query_one("#launch-cancel").region.bottom <= 50
        await pilot.press("escape")
    (qf.root() / "go").touch()


async def test_the_first_tab_from_cancel_in_the_retry_dialog_lands_on_a_marked_button(
    make_queue_fleet: Any, tmp_path: Path
) -> None:
    qf = await finished_queue(make_queue_fleet)
    app = make_app(tmp_path, fleet=qf.fleet, start_monitors=True, clock=time.time)
    app.runtime.queues.poll_s = 0.5
    async with app.run_test(size=(100, 30)) as pilot:
        retry: RetryConfirmScreen = await open_retry(pilot, app, 0)  # broke, failed
        assert retry.plan is not None and retry.plan.ok
        assert app.focused is retry.query_one("#retry-cancel")
        stops = await tab_stops(pilot, retry, 3)
        assert stops == [retry.query_one(f"#retry-{b}") for b in ("go", "resume", "cancel")]
        await pilot.press("tab")
        await wait_for(lambda: "▶ Retry ◀" in screen_text(app), pilot=pilot)
        assert "Enter: start it over" in screen_text(app)
        await pilot.press("escape")
