"""The plan dialog's preflight section and Acknowledge buttons, and the y (sync) and P
(preflight) keys, under the Pilot against real loopback boxes: the box script runs for
real, and this machine has no GPU, so "gpu" fails for its own reason."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from support.code_trees import add_code, git, git_tree
from support.pilot import (
    SIZE,
    click,
    make_app,
    notes,
    palette_titles,
    screen_text,
    text_of,
    wait_for,
)
from support.queues import SCRIPT_RUN, wait_view
from textual.widgets import Button, Static

from rgt_tui.app import RgtApp
from rgt_tui.screens.dialog import DialogButton
from rgt_tui.screens.fleet import FleetScreen
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.screens.launch_confirm import LaunchConfirmScreen
from rgt_tui.services.fleet.file import load_fleet


def _app(fleet: Any, tmp_path: Path) -> RgtApp:
    return make_app(tmp_path, fleet=fleet, start_monitors=True, clock=time.time)


def _ack(modal: LaunchConfirmScreen) -> DialogButton:
    return modal.query_one("#launch-ack", DialogButton)


async def _plan_with(pilot: Any, app: RgtApp, acks: tuple[str, ...]) -> LaunchConfirmScreen:
    """The modal once the plan made with ``acks`` arrived."""

    def ready() -> LaunchConfirmScreen | None:
        modal = app.screen
        if not isinstance(modal, LaunchConfirmScreen) or modal.plan is None:
            return None
        return modal if modal.plan.acks == acks else None

    return await wait_for(ready, what=f"the plan acknowledging {acks}", pilot=pilot)


async def test_plan_dialog_shows_failed_checks_and_launch_waits_for_each_acknowledgement(
    make_queue_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    # The cells are bash: torch (and arch, unchecked without it) are the fleet file's acks.
    qf.set_preflight_ack(("torch", "arch"))
    qf.write_queue(f"{qf.cell_script('one', 'echo one')} t\n")
    app = _app(qf.fleet, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:  # the buttons fit the smallest screen
        await pilot.press("L")
        modal = await _plan_with(pilot, app, ())
        shown = text_of(modal.query_one("#launch-preflight", Static))
        assert "2 failed checks to fix, or to acknowledge to launch anyway" in shown
        assert "✖ gpu failed: no GPU: nvidia-smi is not on the box's PATH" in shown
        assert "fix: pick a box with a GPU" in shown
        assert "⚠ torch acknowledged: torch does not import" in shown  # preflight_ack
        assert "✓ tmux" in shown
        # Not among the refusals: the preflight section says it, with the buttons.
        plan_text = text_of(modal.query_one("#launch-notes", Static))
        assert "Refused" not in plan_text and "no GPU" not in plan_text
        assert "will run nothing until each failed preflight check is acknowledged" in plan_text
        status = text_of(modal.query_one("#launch-status", Static))
        assert "Preflight failed: fix the box, or acknowledge each failed check" in status
        go = modal.query_one("#launch-go", Button)
        assert go.display and go.disabled
        assert _ack(modal).display and _ack(modal).caption == "Acknowledge gpu"
        assert app.focused is modal.query_one("#launch-cancel", Button)  # Enter launches nothing
        # On screen once painted (the plan's widgets change before the next paint).
        await wait_for(
            lambda: "Acknowledge gpu" in screen_text(app) and "Launch" in screen_text(app),
            what="the buttons painted",
            pilot=pilot,
        )

        await click(pilot, _ack(modal))
        modal = await _plan_with(pilot, app, ("gpu",))
        assert modal.query_one("#launch-go", Button).disabled  # driver still fails
        assert _ack(modal).caption == "Acknowledge driver"
        assert "⚠ gpu acknowledged: no GPU" in text_of(modal.query_one("#launch-preflight", Static))

        await click(pilot, _ack(modal))
        modal = await _plan_with(pilot, app, ("gpu", "driver"))
        go = modal.query_one("#launch-go", Button)
        assert modal.plan is not None and modal.plan.ok
        assert not go.disabled and app.focused is go and not _ack(modal).display
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, FleetScreen), pilot=pilot)
    await wait_view(qf, lambda v: v.count("done") == 1, what="the acknowledged launch")


async def test_y_syncs_the_code_and_p_shows_the_preflight_report_on_the_queue_tab(
    make_queue_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    # A queue a launch would take (its config a file of the code tree): without one, P
    # says a launch refuses the missing queue file.
    qf.write_queue("src/model/net.py t\n")
    head = git_tree(tmp_path / "code")
    add_code(qf.loopback.hosts_file, tmp_path / "code")
    app = _app(load_fleet(qf.loopback.hosts_file), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        titles = await palette_titles(app)
        assert "Sync code: box1" in titles and "Preflight: box1" in titles

        await pilot.press("y")
        detail = await wait_for(
            lambda: isinstance(app.screen, HostDetailScreen) and app.screen, pilot=pilot
        )
        body = detail.query_one(".ready-body", Static)

        def said(words: str) -> bool:
            return detail.active_tab == "queue" and body.display and words in text_of(body)

        await wait_for(lambda: said("✓ synced 4 files"), what="the sync's outcome", pilot=pilot)
        assert f"git {head[:10]}" in text_of(body)
        assert (qf.root() / "src" / "model" / "net.py").read_text() == "NET = 1\n"
        assert not (qf.root() / "data").exists()  # .gitignore'd: not sent

        await pilot.press("P")
        await wait_for(lambda: said("preflight on box1: "), what="the report", pilot=pilot)
        text = text_of(body)
        # The fleet file acknowledges torch, gpu, driver, arch (QUEUE_PREFLIGHT_ACK): said so
        assert "⚠ gpu acknowledged: no GPU: nvidia-smi is not on the box's PATH" in text
        assert "✓ code" in text and "✓ synced" in text  # the sync's outcome stays
        assert "4 acknowledged: ready to launch" in text and "failed" not in text

        # The same keys on the fleet screen's help: read from the bindings.
        await pilot.press("escape")
        await wait_for(lambda: isinstance(app.screen, FleetScreen), pilot=pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        help_text = "\n".join(text_of(s) for s in app.screen.query(Static).results(Static))
        assert "Push the host's code to the box, checked by hash" in help_text
        assert "Check the box: torch, GPU, driver, disk, code" in help_text


async def test_launch_pressed_on_a_plan_made_before_a_fleet_edit_plans_again(
    make_queue_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """s37 fleet hour #3 and its review: an edit of the host's entry applied while the
    dialog is open; Launch on the plan shown would run with the old workdir. It plans
    again with the entry as applied (here: a workdir not on the box, refused)."""
    import dataclasses

    from rgt_tui.screens.launch_confirm import STALE_PLAN

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.set_preflight_ack(("torch", "arch", "gpu", "driver"))
    qf.write_queue(f"{qf.cell_script('one', 'echo one')} t\n")
    app = _app(qf.fleet, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("L")
        modal = await _plan_with(pilot, app, ())
        assert modal.plan is not None and modal.plan.ok, modal.plan.problems
        host = app.fleet.host("box1")
        moved = dataclasses.replace(host, workdir=host.workdir + "-renamed")
        app.fleet = dataclasses.replace(app.fleet, hosts=(moved,))  # as the reload applies it
        await click(pilot, "#launch-go")
        await wait_for(
            lambda: (
                STALE_PLAN in text_of(modal.query_one("#launch-status", Static))
                or (modal.plan is not None and not modal.plan.ok)
            ),
            what="the plan made again",
            pilot=pilot,
        )
        await wait_for(
            lambda: modal.plan is not None and not modal.plan.ok, what="the new plan", pilot=pilot
        )
        assert any("-renamed does not exist" in p for p in modal.plan.problems)
        assert isinstance(app.screen, LaunchConfirmScreen)  # nothing launched
    view = await wait_view(qf, lambda v: True, what="the queue as it is")
    assert view.launch is None


async def test_a_sync_after_the_plan_refuses_launch_and_the_dialog_plans_again(
    make_queue_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """s60's note: a sync that landed while the plan was on screen made the box refuse the
    launch (code-changed); the dialog said it twice (a toast and its status) and left Enter
    on Cancel under a plan that could no longer run. It plans again, says why once above
    the new plan, and that plan launches with the code now on the box."""
    from rgt_tui.services.code_sync import sync_code

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.set_preflight_ack(("torch", "arch", "gpu", "driver"))
    code = tmp_path / "code"
    git_tree(code)
    add_code(qf.loopback.hosts_file, code, ("cells/",))
    fleet = load_fleet(qf.loopback.hosts_file)
    qf.write_queue(f"{qf.cell_script('one', 'echo one')} t\n")
    transport = qf.transport()
    await transport.connect()
    try:
        await sync_code(fleet.host("box1"), transport)
        app = _app(fleet, tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("L")
            modal = await _plan_with(pilot, app, ())
            assert modal.plan is not None and modal.plan.ok, modal.plan.problems
            first = modal.plan
            (code / "src" / "train.py").write_text("print('synced while the plan was up')\n")
            git(code, "commit", "-qam", "changed while the plan was up")
            synced = await sync_code(fleet.host("box1"), transport)  # another terminal
            await click(pilot, "#launch-go")
            status = modal.query_one("#launch-status", Static)
            await wait_for(
                lambda: (
                    modal.plan is not None
                    and modal.plan is not first
                    and not modal.replanning
                    and "Not launched" in text_of(status)
                ),
                what="the plan made again",
                pilot=pilot,
            )
            said = text_of(status)
            assert "was synced since the plan checked it" in said, said
            assert "1 cell in the queue" in said, said  # the new plan's own status, below
            assert not any("launch failed" in n for n in notes(app)), notes(app)
            assert modal.plan.ok and modal.plan.code_id.startswith(
                f"tree={synced.identity.tree}"
            ), modal.plan.code_id
            assert app.focused is modal.query_one("#launch-go", Button)
            await pilot.press("enter")
            await wait_for(lambda: isinstance(app.screen, FleetScreen), pilot=pilot)
        await wait_view(qf, lambda v: v.count("done") == 1, what="the launch")
    finally:
        await transport.close()
