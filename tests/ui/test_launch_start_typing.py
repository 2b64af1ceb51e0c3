"""The launch dialog's start box under the user's keys while plans are on their way
(a demo user's BackSpace BackSpace 1 gave "0" and "will run 3 of 3 cells"; another time
a blank box with the plan of index 1): a plan never rewrites what was typed, and the
plan shown is always the one for the box's text as it is.

The plans are the real ones of a loopback box, each held back by the test until it
lets it come (``HeldPlans``), so the order in which plans and keys arrive is the
test's, not the machine's load."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.pilot import make_app, text_of, wait_for
from textual.message import Message
from textual.widgets import Button, Input, Static

from rgt_tui.controllers.launch_plan import LaunchControl
from rgt_tui.screens.launch_confirm import LaunchConfirmScreen
from rgt_tui.services.queue.launch import LaunchPlan


@dataclass
class Asked:
    """One plan the dialog asked for: made at once, handed back once ``release`` is set;
    ``then`` runs as it comes back, before the dialog can see it."""

    start: int | None
    release: asyncio.Event = field(default_factory=asyncio.Event)
    then: Callable[[], None] | None = None


class HeldPlans(LaunchControl):
    """The real plans; while ``hold`` is set each waits until the test releases it."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.asked: list[Asked] = []
        self.hold = False
        self.making = 0  # plans asked for and not yet handed back (or cancelled)
        self.returned = 0  # plans handed back to the dialog

    async def plan_launch(
        self, start: int | None, acks: tuple[str, ...], *, fresh: bool = False
    ) -> tuple[LaunchPlan | None, str]:
        asked = Asked(start)
        self.asked.append(asked)
        if not self.hold:
            asked.release.set()
        self.making += 1
        try:
            made = await super().plan_launch(start, acks, fresh=fresh)
            await asked.release.wait()
            if asked.then is not None:
                asked.then()
        finally:
            self.making -= 1
        self.returned += 1
        return made

    def release_all(self) -> None:
        """Let every held plan come back, and those asked for from now on at once."""
        self.hold = False
        for asked in self.asked:
            asked.release.set()


class Dialog:
    """The launch dialog on held plans, and the plans it has read (``Planned``)."""

    def __init__(self, app: Any, qf: Any) -> None:
        self.control = HeldPlans(qf.fleet, qf.host(), app.connections)
        self.modal = LaunchConfirmScreen(qf.fleet, qf.host(), app.connections, control=self.control)
        self.read = 0

    def hook(self, message: Message) -> None:
        """``run_test``'s message hook: count the plans the dialog reads."""
        if isinstance(message, LaunchConfirmScreen.Planned):
            self.read += 1

    def notes(self) -> str:
        return text_of(self.modal.query_one("#launch-notes", Static))

    def box(self) -> Input:
        return self.modal.query_one("#launch-start", Input)

    async def settled(self, pilot: Any) -> None:
        """Every plan asked for came back and was read (or a newer one cancelled it),
        and none more was asked for once the keys' messages were read."""

        def done() -> bool:
            return self.control.making == 0 and self.read == self.control.returned

        for _ in range(2):
            await wait_for(done, what="every plan asked for read", pilot=pilot)
            await pilot.pause()  # an Input.Changed still queued may ask again
        assert done()


async def test_keys_typed_as_the_first_plan_comes_back_are_kept(
    make_queue_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """BackSpace BackSpace 1 typed while the first plan (index 0) is on its way: the box
    says 1 and the plan shown is index 1's, not 0's written over the 1."""
    qf = await make_queue_fleet(1, workload=True)
    app = make_app(tmp_path, fleet=qf.fleet)
    dialog = Dialog(app, qf)
    async with app.run_test(size=(120, 40), message_hook=dialog.hook) as pilot:
        dialog.control.hold = True
        app.push_screen(dialog.modal)
        await wait_for(lambda: dialog.control.asked, what="the first plan", pilot=pilot)
        box = dialog.box()
        box.focus()
        await pilot.pause()

        def typed() -> None:  # the keys, in the box before the plan's message is read
            box.action_end()
            box.action_delete_left()
            box.action_delete_left()
            box.insert_text_at_cursor("1")

        dialog.control.asked[-1].then = typed
        dialog.control.release_all()
        await dialog.settled(pilot)
        modal = dialog.modal
        assert box.value == "1"
        assert modal.plan is not None and modal.plan.start_index == 1, dialog.notes()
        assert "will run 2 of 3 cells" in dialog.notes(), dialog.notes()
        assert not modal.replanning


async def test_a_plan_for_an_older_start_is_dropped(make_queue_fleet, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """1 typed, then erased while its plan is on its way: when it comes the box stays
    blank and shows no plan (nor Launch); 2 typed then shows index 2's plan."""
    qf = await make_queue_fleet(1, workload=True)
    app = make_app(tmp_path, fleet=qf.fleet)
    dialog = Dialog(app, qf)
    modal, box = dialog.modal, dialog.box
    async with app.run_test(size=(120, 40), message_hook=dialog.hook) as pilot:
        app.push_screen(modal)
        await wait_for(lambda: dialog.control.asked, what="the first plan", pilot=pilot)
        await dialog.settled(pilot)
        assert "will run 3 of 3 cells" in dialog.notes()
        box().focus()
        dialog.control.hold = True
        await pilot.press("end", "backspace", "1")
        for_one = await wait_for(
            lambda: dialog.control.asked[-1].start == 1 and dialog.control.asked[-1],
            what="index 1's plan asked for",
            pilot=pilot,
        )
        await pilot.press("backspace")
        for_one.release.set()
        await dialog.settled(pilot)
        assert box().value == ""
        assert modal.plan is None and "will run 2 of 3" not in dialog.notes(), dialog.notes()
        assert modal.query_one("#launch-go", Button).disabled

        dialog.control.release_all()
        await pilot.press("2")
        await dialog.settled(pilot)
        assert box().value == "2" and modal.plan is not None and modal.plan.start_index == 2
        assert "will run 1 of 3 cells" in dialog.notes(), dialog.notes()
        assert not modal.replanning


async def test_enter_in_the_start_box_hands_the_focus_to_launch(
    make_queue_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """docs/tui.md: when the plan arrives the focus goes to Launch. Typing keeps it in
    the box; Enter there ends the typing: the plan's button takes it, whether the plan
    for the box's text is already shown or still on its way (a user's hour: it stayed)."""
    qf = await make_queue_fleet(1, workload=True)
    app = make_app(tmp_path, fleet=qf.fleet)
    dialog = Dialog(app, qf)
    modal, box = dialog.modal, dialog.box
    async with app.run_test(size=(120, 40), message_hook=dialog.hook) as pilot:
        app.push_screen(modal)
        await wait_for(lambda: dialog.control.asked, what="the first plan", pilot=pilot)
        await dialog.settled(pilot)
        box().focus()
        await pilot.press("end", "backspace", "1")
        await dialog.settled(pilot)
        assert app.focused is box()  # typing: the box keeps the focus
        await pilot.press("enter")  # its plan is on screen: Launch at once
        await wait_for(lambda: app.focused is modal.query_one("#launch-go", Button), pilot=pilot)

        box().focus()
        dialog.control.hold = True
        await pilot.press("backspace", "2", "enter")  # its plan still on its way
        await pilot.pause()
        assert app.focused is box()
        dialog.control.release_all()
        await dialog.settled(pilot)
        assert modal.plan is not None and modal.plan.start_index == 2
        assert app.focused is modal.query_one("#launch-go", Button)


async def test_while_another_start_is_planned_the_last_plan_is_not_shown_beside_it(
    make_queue_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """A user's hour: 1 typed over 2, and for the seconds its plan took the dialog said
    "cells 0, 1 come before start index 2" beside the 1; BackSpace then a digit said "no
    plan until the start box holds a cell index" beside the digit."""
    qf = await make_queue_fleet(1, workload=True)
    app = make_app(tmp_path, fleet=qf.fleet)
    dialog = Dialog(app, qf)
    modal, box = dialog.modal, dialog.box
    async with app.run_test(size=(120, 40), message_hook=dialog.hook) as pilot:
        app.push_screen(modal)
        await wait_for(lambda: dialog.control.asked, what="the first plan", pilot=pilot)
        await dialog.settled(pilot)
        assert "will run 3 of 3 cells" in dialog.notes()
        status = modal.query_one("#launch-status", Static)
        box().focus()
        dialog.control.hold = True
        for keys, start in ((("end", "1"), 1), (("backspace", "backspace", "2"), 2)):
            await pilot.press(*keys)
            await wait_for(
                lambda s=start: dialog.control.asked[-1].start == s,
                what=f"index {start}'s plan asked for",
                pilot=pilot,
            )
            await pilot.pause()
            assert modal.plan is None and "will run" not in dialog.notes().replace(
                "will run: planning", ""
            ), dialog.notes()
            assert f"planning from cell {start}" in text_of(status), text_of(status)
            assert modal.query_one("#launch-go", Button).disabled
        dialog.control.release_all()
        await dialog.settled(pilot)
        assert box().value == "2" and modal.plan is not None and modal.plan.start_index == 2
        assert "will run 1 of 3 cells" in dialog.notes(), dialog.notes()


async def test_a_start_typed_on_the_launch_button_goes_to_the_start_box(
    make_queue_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """h481 #7: once the plan came the focus was on Launch, and "BackSpace 2" there did
    nothing, unsaid; the Enter after it launched from the old start. The keys go to the
    start box, which takes the focus, and the plan shown is the new start's."""
    qf = await make_queue_fleet(1, workload=True)
    app = make_app(tmp_path, fleet=qf.fleet)
    dialog = Dialog(app, qf)
    modal, box = dialog.modal, dialog.box
    async with app.run_test(size=(120, 40), message_hook=dialog.hook) as pilot:
        app.push_screen(modal)
        await wait_for(lambda: dialog.control.asked, what="the first plan", pilot=pilot)
        await dialog.settled(pilot)
        go = modal.query_one("#launch-go", Button)
        await wait_for(lambda: app.focused is go, what="Launch focused", pilot=pilot)
        await pilot.press("backspace", "2")
        await dialog.settled(pilot)
        assert app.focused is box() and box().value == "2", box().value
        assert modal.plan is not None and modal.plan.start_index == 2, dialog.notes()
        assert "will run 1 of 3 cells" in dialog.notes(), dialog.notes()
        # A digit alone replaces the index there (review h483 #10: "1" on a box holding
        # 2 read 21).
        await pilot.press("enter")
        await wait_for(lambda: app.focused is go, what="Launch focused again", pilot=pilot)
        await pilot.press("1")
        await dialog.settled(pilot)
        assert app.focused is box() and box().value == "1", box().value
        assert modal.plan is not None and modal.plan.start_index == 1, dialog.notes()
