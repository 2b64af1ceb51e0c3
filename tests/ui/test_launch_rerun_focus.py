"""A start typed before done cells (they would run again: paid work) leaves the launch
dialog's focus on Cancel: Enter closes it, and only a deliberate Shift+Tab to Launch runs them.
Loopback box, the real runner."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support.pilot import SIZE, screen_text, wait_for
from support.queues import SCRIPT_RUN, wait_view
from test_app_queue import planned, queue_app
from textual.widgets import Button, Input

from rgt_tui.domain.queue_state import FINISHED
from rgt_tui.screens.dialog import DialogButton
from rgt_tui.screens.fleet import FleetScreen
from rgt_tui.services.queue.launch import launch, plan_launch


async def test_a_start_before_done_cells_focuses_cancel_not_launch(
    make_queue_fleet: Any, tmp_path: Path
) -> None:
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    cells = [qf.cell_script(n, "exit 0") for n in ("a", "b")] + [qf.cell_script("c", "exit 3")]
    qf.write_queue("".join(f"{c} t\n" for c in cells))
    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
    await transport.close()
    await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to finish")

    qf.set_preflight_ack(("torch",))  # gpu (no GPU here) is left to acknowledge
    app = queue_app(qf, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("L")
        modal = await planned(pilot, app)
        start = modal.query_one("#launch-start", Input)
        assert start.value == "2"  # the first cell not done

        start.focus()
        await pilot.press("end", "backspace", "0")
        await wait_for(lambda: modal.plan is not None and modal.plan.start_index == 0, pilot=pilot)
        # Acknowledge each failed check (the button takes the focus from the box).
        while modal.plan is not None and modal.plan.unacknowledged:
            acks = modal.plan.acks
            # Focus and Enter, not a click: a click at a button the last plan just moved
            # can land where it was (lost on a loaded CI machine, the test waited 30 s).
            ack = modal.query_one("#launch-ack", DialogButton)
            # Textual's Button ignores Enter within its last press's animation (-active):
            # the previous acknowledgement's, which a loaded machine keeps on past its
            # re-plan (the last CI run lost an Enter there and waited 30 s).
            await wait_for(
                lambda b=ack: (
                    not modal.replanning and not b.disabled and not b.has_class("-active")
                ),
                pilot=pilot,
            )
            ack.focus()
            await pilot.press("enter")
            await wait_for(
                lambda a=acks: modal.plan is not None and modal.plan.acks != a, pilot=pilot
            )
        assert modal.plan is not None and modal.plan.ok and modal.plan.start_index == 0
        await wait_for(lambda: "2 done cells will run again" in screen_text(app), pilot=pilot)
        # The last acknowledgement's re-plan hands the focus to Cancel, not Launch.
        assert app.focused is modal.query_one("#launch-cancel", Button)
        # The status names the key that reaches Launch (Tab went to the start box).
        assert "Shift+Tab to Launch if you mean it" in screen_text(app)
        await pilot.press("shift+tab")
        assert app.focused is modal.query_one("#launch-go", Button)
        await pilot.press("tab")  # back to Cancel
        assert app.focused is modal.query_one("#launch-cancel", Button)
        await pilot.press("enter")  # closes; nothing is launched
        await wait_for(lambda: isinstance(app.screen, FleetScreen), pilot=pilot)
    view = await wait_view(qf, lambda v: v.state == FINISHED, what="the queue as it was")
    assert [c.status for c in view.cells] == ["done", "done", "failed"]
