"""Acknowledgements belong to the launch, and a dialog never answers Enter with what the
user did not choose (issue 43 items 2 and 6), under the Pilot against real loopback
boxes. This machine has no GPU, so "gpu" fails for its own reason.

- A launch whose gpu check was acknowledged with its button, then ``R`` on its failed
  cell: the retry dialog says "acknowledged at launch: gpu (…)" and Retry (pressed on
  purpose: Enter is Cancel's) retries; revoked, the retry is refused with an Acknowledge
  button that works.
- Enter pressed while the launch plan is being re-made after Acknowledge (held back by a
  stand-in ``nvidia-smi`` on the box that answers only once the test opens its gate)
  cancels nothing; the dialog says "re-planning…"; once re-planned, Enter launches.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from support.pilot import SIZE, click, make_app, notes, screen_text, text_of, wait_for
from support.queues import SCRIPT_RUN, wait_view
from textual.widgets import Button, OptionList, Static

from rgt_tui.app import RgtApp
from rgt_tui.domain.queue_state import FAILED
from rgt_tui.screens.dialog import DialogButton
from rgt_tui.screens.fleet import FleetScreen
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.screens.launch_confirm import LaunchConfirmScreen
from rgt_tui.screens.queue_control import CellPickScreen
from rgt_tui.screens.retry_confirm import RetryConfirmScreen


async def _launch_plan(pilot: Any, app: RgtApp, acks: tuple[str, ...]) -> LaunchConfirmScreen:
    """The launch dialog once the plan made with ``acks`` arrived."""

    def ready() -> LaunchConfirmScreen | None:
        modal = app.screen
        if not isinstance(modal, LaunchConfirmScreen) or modal.plan is None:
            return None
        return modal if modal.plan.acks == acks and not modal.replanning else None

    return await wait_for(ready, what=f"the plan acknowledging {acks}", pilot=pilot)


async def _retry_plan(pilot: Any, app: RgtApp, revoked: bool, acks: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    """The retry dialog once the plan asked for (launch acks revoked or not) arrived."""

    def ready() -> RetryConfirmScreen | None:
        modal = app.screen
        if not isinstance(modal, RetryConfirmScreen) or modal.plan is None or modal.replanning:
            return None
        plan = modal.plan
        return modal if plan.revoked == revoked and modal.acks == acks else None

    return await wait_for(ready, what="the retry plan", pilot=pilot)


async def _press(pilot: Any, button: Button) -> None:
    """Focus and Enter, not a click: a click at a button the last plan just moved can land
    where it was (a loaded run waited 30 s for a plan a missed click never asked for)."""
    # Textual's Button ignores Enter within its last press's animation (-active).
    await wait_for(lambda: not button.disabled and not button.has_class("-active"), pilot=pilot)
    button.focus()
    await pilot.press("enter")


def _failed(retries: int):  # type: ignore[no-untyped-def]
    def check(view) -> bool:  # type: ignore[no-untyped-def]
        cell = view.cells[0] if view.cells else None
        return (
            cell is not None and cell.status == FAILED and cell.retries == retries
            and not view.runner_alive
        )  # fmt: skip

    return check


async def _open_retry(pilot: Any, app: RgtApp, retries: int) -> None:
    """``R`` on the Queue tab once the poller saw the cell failed ``retries`` times, and
    the cell chosen in the picker."""
    screen = await wait_for(
        lambda: app.screen if isinstance(app.screen, HostDetailScreen) else None, pilot=pilot
    )
    # R is the Queue tab's key: open_host switches to it after a refresh (a moment, longer
    # on a busy machine), and an R pressed on the Overview tab is no key at all.
    await wait_for(lambda: screen.active_tab == "queue", what="the Queue tab", pilot=pilot)
    # The queue poll comes every 10 s, its box call later on a loaded machine: a wide cap.
    await wait_for(
        lambda: screen.queue_view is not None and _failed(retries)(screen.queue_view),
        90,
        what="the poller's view of the failed cell",
        pilot=pilot,
    )
    await pilot.press("R")
    await wait_for(lambda: isinstance(app.screen, CellPickScreen), 60, pilot=pilot)
    assert app.screen.query_one(OptionList).option_count == 1
    await pilot.press("enter")


async def test_retry_goes_ahead_on_the_launchs_ack_and_a_revoked_one_can_be_acknowledged(
    make_queue_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.set_preflight_ack(("torch", "driver", "arch"))  # gpu alone fails here
    qf.write_queue(f"{qf.cell_script('one', 'echo one; exit 3')} t\n")
    app = make_app(tmp_path, fleet=qf.fleet, start_monitors=True, clock=time.time)
    app.runtime.queues.poll_s = 0.5
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("L")
        modal = await _launch_plan(pilot, app, ())
        await _press(pilot, modal.query_one("#launch-ack", DialogButton))
        modal = await _launch_plan(pilot, app, ("gpu",))
        assert app.focused is modal.query_one("#launch-go", Button)
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, FleetScreen), pilot=pilot)
        await wait_view(qf, _failed(0), what="the cell to fail")

        app.open_host("box1", "queue")
        await _open_retry(pilot, app, 0)
        retry = await _retry_plan(pilot, app, revoked=False)
        said = text_of(retry.query_one("#retry-notes", Static))
        assert "acknowledged at launch: gpu (no GPU: nvidia-smi is not on the box's PATH" in said
        assert "⚠ gpu acknowledged" in text_of(retry.query_one("#retry-preflight", Static))
        assert not retry.query_one("#retry-ack", DialogButton).display
        go = retry.query_one("#retry-go", Button)
        assert retry.plan is not None and retry.plan.ok and not go.disabled
        assert app.focused is retry.query_one("#retry-cancel", Button)  # Enter alone: cancel
        # The dialog's last state reaches the screen on its next refresh (a loaded CI run
        # read the screen before it had drawn).
        await wait_for(lambda: "Revoke launch acks" in screen_text(app), pilot=pilot)
        await _press(pilot, go)  # goes ahead without asking again
        await wait_for(lambda: not isinstance(app.screen, RetryConfirmScreen), pilot=pilot)
        await wait_view(qf, _failed(1), what="the retried cell to fail again")
        assert any("one will run again (launched for it)" in n for n in notes(app))

        # Revoked: refused on the failed check, with its Acknowledge button, Cancel focused.
        await _open_retry(pilot, app, 1)
        retry = await _retry_plan(pilot, app, revoked=False)
        await _press(pilot, retry.query_one("#retry-revoke", DialogButton))
        retry = await _retry_plan(pilot, app, revoked=True)
        assert "revoked for this retry" in text_of(retry.query_one("#retry-notes", Static))
        assert retry.query_one("#retry-go", Button).disabled
        ack = retry.query_one("#retry-ack", DialogButton)
        assert ack.display and ack.caption == "Acknowledge gpu"
        assert app.focused is retry.query_one("#retry-cancel", Button)
        assert "Preflight failed" in text_of(retry.query_one("#retry-status", Static))

        await _press(pilot, ack)
        retry = await _retry_plan(pilot, app, revoked=True, acks=("gpu",))
        assert retry.plan is not None and retry.plan.ok
        assert app.focused is retry.query_one("#retry-cancel", Button)
        await _press(pilot, retry.query_one("#retry-go", Button))
        await wait_for(lambda: not isinstance(app.screen, RetryConfirmScreen), pilot=pilot)
    await wait_view(qf, _failed(2), what="the acknowledged retry to run")


def _gated_smi(folder: Path, gate: Path) -> Path:
    """An ``nvidia-smi`` that answers (nothing, exit 2: no GPU to report) only once
    ``gate`` exists: the test holds preflight, and so the re-plan, on it."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "nvidia-smi"
    script.write_text(f"#!/bin/sh\nwhile [ ! -e '{gate}' ]; do sleep 0.05; done\nexit 2\n")
    script.chmod(0o755)
    return folder


async def test_enter_while_the_launch_replans_after_acknowledge_cancels_nothing(
    make_queue_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    # The stand-in reports no processes either: gpu-busy fails too (acknowledged here).
    qf.set_preflight_ack(("torch", "driver", "gpu-busy", "arch"))
    qf.write_queue(f"{qf.cell_script('one', 'echo one')} t\n")
    gate = tmp_path / "smi-go"
    gate.touch()
    qf.loopback.box("box1").extra_path.append(_gated_smi(tmp_path / "smi", gate))
    app = make_app(tmp_path, fleet=qf.fleet)
    async with app.run_test(size=(80, 24)) as pilot:
        gate.unlink()  # the first plan's preflight waits too
        await pilot.press("L")

        def first() -> LaunchConfirmScreen | None:
            modal = app.screen
            return modal if isinstance(modal, LaunchConfirmScreen) and modal.replanning else None

        await wait_for(first, what="the first plan on its way", pilot=pilot)
        # Nothing was planned yet: "planning…", not "re-planning…" (h461 #8).
        await wait_for(lambda: "planning…" in screen_text(app), pilot=pilot)
        assert "re-planning…" not in screen_text(app)
        gate.touch()
        modal = await _launch_plan(pilot, app, ())
        assert modal.plan is not None and modal.plan.unacknowledged == ("gpu",)
        assert app.focused is modal.query_one("#launch-cancel", Button)

        gate.unlink()  # the next preflight waits on the box until the test says so
        ack = modal.query_one("#launch-ack", DialogButton)
        # Clicked where it is laid out: on a loaded machine the button shown with the plan
        # was laid out a refresh later, and a click at its old region missed (one CI run).
        await wait_for(lambda: ack.display and ack.region.width > 0, pilot=pilot)
        await click(pilot, ack)
        await wait_for(lambda: modal.replanning, what="the re-plan after Acknowledge", pilot=pilot)
        await pilot.press("enter")  # at once, while the old plan (gpu failed) is on screen
        await pilot.pause()
        assert app.screen is modal, "Enter cancelled the launch the user just acknowledged"
        text = screen_text(app)
        assert "re-planning…" in text
        assert "▶ Cancel ◀" not in text and "Enter: cancel" not in text
        assert modal.plan.acks == ()  # still the old plan: the new one is held on the box

        gate.touch()
        modal = await _launch_plan(pilot, app, ("gpu",))
        go = modal.query_one("#launch-go", Button)
        assert modal.plan is not None and modal.plan.ok and app.focused is go
        assert "re-planning…" not in screen_text(app) and "Enter: launch" in screen_text(app)
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, FleetScreen), pilot=pilot)
    await wait_view(qf, lambda v: v.count("done") == 1, what="the acknowledged launch")
