"""Key m resumes too (issue 40): one unfinished cell typed in the Move dialog is planned
as a resume move — its pulled-and-verified checkpoint named with its step, the target's
preflight with an Acknowledge button per failed check — and moved; the target runs it
from that step. Without a verified checkpoint, only the From scratch button moves it.
Two loopback boxes, the real app (Pilot)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support.pilot import SIZE, click, make_app, notes, screen_text, text_of, wait_for
from support.queues import SCRIPT_RUN, wait_view
from support.resume_cell import cell_log, loaded_steps, pull_verify, run_until_held
from textual.widgets import Button, Static

from rgt_tui.domain.queue_state import DONE, FINISHED, KILLED, QueueView
from rgt_tui.screens.fleet import FleetScreen
from rgt_tui.screens.queue_move_dialog import QueueMoveScreen
from rgt_tui.services.queue.control import kill_cell
from rgt_tui.services.queue.resume import FROM_SCRATCH


async def kill_ck(qf) -> QueueView:
    """`queue kill` of the held cell: its state says killed, box1 still answers; the
    queue's view then."""
    transport = qf.transport("box1")
    try:
        await kill_cell(qf.host("box1"), transport, "ck", grace_s=1)
    finally:
        await transport.close()
    return await wait_view(qf, lambda v: v.cells[0].status == KILLED, what="ck to read killed")


async def open_move(app: Any, pilot: Any, *, typed: bool = True) -> QueueMoveScreen:
    """``m`` on box1; then (``typed``) ck to box2 planned."""
    await pilot.press("m")
    screen = await wait_for(
        lambda: app.screen if isinstance(app.screen, QueueMoveScreen) else None,
        what="the move dialog",
        pilot=pilot,
    )
    assert screen.host.name == "box1"
    if typed:
        await pilot.press(*"ck", "enter", *"box2", "enter")
    return screen


async def notes_say(pilot: Any, screen: QueueMoveScreen, says: str) -> str:
    def ready() -> str:
        text = text_of(screen.query_one("#move-notes", Static))
        return text if says in text and not screen.replanning else ""

    return await wait_for(ready, what=f"the move plan to say {says!r}", pilot=pilot)


async def test_m_resumes_a_killed_cell_on_another_box_from_its_verified_step(
    make_queue_fleet, tmp_path: Path
) -> None:
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    await run_until_held(qf)
    first = await pull_verify(qf, "box1")  # its files verify; the running cell is not counted
    assert first.problems == ("cell ck missing: running: counted once it is done",)
    side = qf.fleet.results_dir / "box1" / "ck" / "checkpoint.json"
    verified = json.loads(side.read_text())["step"]
    await kill_ck(qf)
    # box2 acknowledges nothing itself: its failed checks (no GPU here) wait for the
    # dialog's Acknowledge, as a launch's do.
    qf.set_preflight_ack((), "box2")

    app = make_app(tmp_path, fleet=qf.fleet)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_move(app, pilot)
        text = await notes_say(pilot, screen, "preflight on box2")
        assert f"checkpoint: checkpoint.bin, step {verified} (its sidecar checkpoint.json)" in text
        assert "repeats:" in text and "free there" in text, text
        assert not screen.query_one("#move-scratch", Button).display  # it has a checkpoint
        go, ack = screen.query_one("#move-go", Button), screen.query_one("#move-ack", Button)
        pressed: list[str] = []
        while ack.display:  # one failed check at a time, each re-planned
            assert go.disabled, "Move before every failed check is acknowledged"
            pressed.append(ack.caption)
            # The new plan's text moved the buttons: let the layout catch up first, or the
            # click lands where the button was (a fresh-clone CI run lost one so).
            await pilot.pause()
            await click(pilot, "#move-ack")
            await wait_for(
                lambda: not screen.replanning and ack.caption not in pressed or not ack.display,
                what="the next plan",
                pilot=pilot,
            )
        assert pressed == [
            "Acknowledge torch", "Acknowledge gpu", "Acknowledge driver", "Acknowledge arch",
        ], pressed  # fmt: skip
        await notes_say(pilot, screen, "⚠")
        assert not go.disabled and app.focused is go
        assert "Enter: push 2 verified files to box2 and run ck there" in screen_text(app)
        await pilot.press("enter")
        await wait_for(
            lambda: isinstance(app.screen, FleetScreen), what="the dialog to close", pilot=pilot
        )
        await wait_for(
            lambda: any("pushed 2 verified files to box2" in n for n in notes(app)),
            what="the moved notification",
            pilot=pilot,
        )
    assert qf.queue_file("box1").read_text().startswith("#moved-to box2: cells/ck.sh t 1")
    there = await wait_view(qf, lambda v: v.state == FINISHED, name="box2", what="box2's run")
    assert [(c.name, c.status) for c in there.cells] == [("ck", DONE)]
    log = cell_log(qf, "box2")
    assert loaded_steps(log) == [verified] and verified > 0, log  # resumed, not restarted
    assert "moved to box2" in qf.state("ck")  # box1 answered: it skips the cell


async def test_m_offers_from_scratch_only_without_a_verified_checkpoint(
    make_queue_fleet, tmp_path: Path
) -> None:
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    await run_until_held(qf)  # never pulled: nothing of ck is verified here
    view = await kill_ck(qf)

    app = make_app(tmp_path, fleet=qf.fleet)
    async with app.run_test(size=SIZE) as pilot:
        # The dialog lists the queue's cells as the TUI last read them, to type from.
        app.runtime.queue_viewed("box1", view)
        screen = await open_move(app, pilot, typed=False)
        notes_now = text_of(screen.query_one("#move-notes", Static))
        assert "Its cells: ck (killed (exit 143))" in notes_now, notes_now
        await pilot.press(*"ck", "enter", *"box2", "enter")
        refused = await notes_say(pilot, screen, "REFUSED")
        assert "ck has no verified checkpoint" in refused
        scratch = screen.query_one("#move-scratch", Button)
        assert scratch.display and screen.query_one("#move-go", Button).disabled
        # One way to restart is offered: the disabled Move does not read "Move, restart".
        assert screen.query_one("#move-go", Button).caption == "Move"
        # Giving up the checkpoint is a deliberate Tab, never the next Enter (as launch).
        assert app.focused is screen.query_one("#move-cancel", Button)
        assert "Enter: cancel" in screen_text(app)
        # Textual orders Tab by where widgets are laid out: the button just shown is
        # placed (right of Plan) by the next refresh.
        plan_button = screen.query_one("#move-plan", Button)
        await wait_for(lambda: scratch.region.x > plan_button.region.x, pilot=pilot)
        await pilot.press("shift+tab")  # Move is disabled: From scratch is next
        assert app.focused is scratch
        assert f"Enter: {FROM_SCRATCH}" in screen_text(app)
        await pilot.press("enter")
        text = await notes_say(pilot, screen, FROM_SCRATCH)
        assert "REFUSED" not in text, text
        assert not scratch.display
        go = screen.query_one("#move-go", Button)
        assert not go.disabled and go.caption == "Move, restart"
