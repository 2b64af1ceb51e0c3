"""Pilot tests of the Teardown tab's typing, acknowledgements and confirmations, over real
loopback boxes (a real asyncssh server over a folder per box; the journal in a tmp
``XDG_STATE_HOME``).

What they pin down (issue 19): typed text goes where the user types and never fires a
single-key action; an acknowledgement names a cell of the queue or is refused with the
list; the re-scan that unlocks the gate is taken after the name is typed (a box gone by
then keeps it locked); and a teardown without a command is recorded only after the name
is typed a second time, once the user says the box is destroyed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from support.pilot import SIZE, click, screen_text, shown_notifications, wait_for
from support.teardown_ui import (
    checklist,
    confirmed_by_hand,
    pull_and_verify,
    results_on_box,
    teardown_app,
    type_name,
)
from textual import events
from textual.binding import Binding
from textual.keys import key_to_character
from textual.message import Message
from textual.widgets import Input

from rgt_tui.app import RgtApp
from rgt_tui.screens.fleet import FleetScreen
from rgt_tui.screens.fleet_filter import FilterInput
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.screens.job_keys import JobRequested
from rgt_tui.screens.queue_keys import QueueActionRequested
from rgt_tui.screens.quit_confirm import QuitConfirmScreen
from rgt_tui.services.fleet.file import load_fleet


def bound_characters() -> str:
    """Every printable key bound anywhere in the app (fleet, detail, app-wide)."""
    bindings = Binding.make_bindings(
        [*RgtApp.BINDINGS, *FleetScreen.BINDINGS, *HostDetailScreen.BINDINGS]
    )
    # A key is named by its character ("d") or, for punctuation, by a name that Textual
    # reads back ("question_mark" is "?"), except "slash" (its Unicode name is SOLIDUS).
    typed = {key_to_character(b.key) or {"slash": "/"}.get(b.key) for b in bindings}
    return "".join(sorted(c for c in typed if c is not None and len(c) == 1 and c.isprintable()))


class Recorder:
    """A message hook that keeps the actions a stray key would have started."""

    def __init__(self) -> None:
        self.actions: list[Message] = []

    def __call__(self, message: Message) -> None:
        # A bubbling message is seen once per node it reaches: keep it once.
        if isinstance(message, (QueueActionRequested, JobRequested)) and not any(
            m is message for m in self.actions
        ):
            self.actions.append(message)


async def test_typing_in_the_teardown_tab_fires_no_key(tmp_path: Path, loopback_fleet) -> None:  # type: ignore[no-untyped-def]
    app = RgtApp(
        load_fleet(loopback_fleet.hosts_file), start_monitors=False, config_dir=tmp_path / "c"
    )
    chars = bound_characters()
    # The keys the issue names are among them: diagnose, pull, append, verify, the
    # teardown tab itself, launch, quit and every tab number (eight tabs today).
    assert set("dpavtlq12345678") <= set(chars), chars
    name = "box-" + chars + "-dpavtlq123456789"
    recorder = Recorder()
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await pilot.pause()
        await pilot.press("t")  # on the fleet: box1's Teardown tab, cursor in the box
        await wait_for(lambda: isinstance(app.screen, HostDetailScreen), pilot=pilot)
        screen = app.screen
        box = screen.query_one("#confirm-name", Input)
        await wait_for(lambda: screen.focused is box, what="t focuses the box", pilot=pilot)
        await wait_for(lambda: not app.jobs.state("box1").running, 60, pilot=pilot)
        gate_jobs = list(recorder.actions)
        assert [(m.job, m.host) for m in gate_jobs] == [("gate", "box1")]  # type: ignore[attr-defined]

        await pilot.press(*name)
        await pilot.pause()
        assert box.value == name  # every character arrived, in order
        assert recorder.actions == gate_jobs  # no pull, verify, queue action, gate…
        assert app.screen is screen and screen.active_tab == "teardown"  # no tab switch
        assert app.is_running and app.return_code is None  # q did not quit
        assert not any(isinstance(s, QuitConfirmScreen) for s in app.screen_stack)

        # A wrong name is refused and the cursor stays: the next try is typed too.
        await pilot.press("enter")
        await wait_for(lambda: "nothing was torn down" in screen_text(app), pilot=pilot)
        assert screen.focused is box and box.value == ""
        await pilot.press(*"dpv2")
        assert box.value == "dpv2" and screen.active_tab == "teardown"
        assert recorder.actions[len(gate_jobs) :] == [
            m
            for m in recorder.actions[len(gate_jobs) :]
            if m.job == "teardown"  # type: ignore[attr-defined]
        ]

        # t on the detail screen itself (from another tab) puts the cursor back there.
        await pilot.press("escape")  # Escape leaves the box for the screen's keys
        await pilot.pause()
        assert isinstance(app.screen, FleetScreen)
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, HostDetailScreen), pilot=pilot)
        await pilot.press("1", "t")
        await wait_for(
            lambda: app.screen.focused is app.screen.query_one("#confirm-name"), pilot=pilot
        )
        await pilot.press(*"ldq")
        assert app.screen.query_one("#confirm-name", Input).value == "ldq"
    assert not loopback_fleet.errors


@pytest.mark.parametrize("on_detail", [False, True])
async def test_a_name_typed_right_after_t_lands_whole(
    tmp_path: Path, loopback_fleet, on_detail: bool
) -> None:  # type: ignore[no-untyped-def]
    """Keys already on their way while the Teardown tab opens (a fast typist, a slow
    machine) are text for the box, not actions: sent all at once, before any redraw."""
    app = RgtApp(
        load_fleet(loopback_fleet.hosts_file), start_monitors=False, config_dir=tmp_path / "c"
    )
    name = "dpav12q3fl"
    recorder = Recorder()
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await pilot.pause()
        if on_detail:
            await pilot.press("enter")
            await wait_for(lambda: isinstance(app.screen, HostDetailScreen), pilot=pilot)
            await pilot.pause()
        for key in ["t", *name]:
            app.post_message(events.Key(key, key))
        await wait_for(lambda: isinstance(app.screen, HostDetailScreen), pilot=pilot)
        # The Teardown tab composes after the screen shows (on a loaded CI machine the
        # query came first: NoMatches).
        box = await wait_for(
            lambda: (
                app.screen.query("#confirm-name") and app.screen.query_one("#confirm-name", Input)
            ),
            what="the Teardown tab's name box",
            pilot=pilot,
        )
        await wait_for(lambda: box.value == name, what=f"{name!r} in the box", pilot=pilot)
        await pilot.pause(0.3)
        assert box.value == name and app.screen.focused is box
        assert [(m.job, m.host) for m in recorder.actions] == [("gate", "box1")]  # type: ignore[attr-defined]
        assert app.screen.active_tab == "teardown" and app.return_code is None
        assert not app.type_ahead.active


@pytest.mark.parametrize("where", ["filter", "ack"])
async def test_no_bound_key_fires_while_an_input_has_focus(
    tmp_path: Path, loopback_fleet, where: str
) -> None:  # type: ignore[no-untyped-def]
    """The same holds for every text input: the fleet filter and the acknowledgement box."""
    app = RgtApp(
        load_fleet(loopback_fleet.hosts_file), start_monitors=False, config_dir=tmp_path / "c"
    )
    text = bound_characters()
    recorder = Recorder()
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await pilot.pause()
        if where == "filter":
            await pilot.press("slash")
            box: Input = app.screen.query_one(FilterInput)
        else:
            app.open_host("box1", tab="teardown")
            await wait_for(lambda: isinstance(app.screen, HostDetailScreen), pilot=pilot)
            await pilot.pause()
            box = app.screen.query_one("#ack-cell", Input)
            box.focus()
        await wait_for(lambda: box.has_focus, pilot=pilot)
        screen = app.screen
        await pilot.press(*text)
        await pilot.pause()
        assert box.value == text
        assert recorder.actions == [] and app.screen is screen and app.return_code is None


async def test_unknown_cell_acknowledgement_is_refused_with_the_list(
    tmp_path: Path, state_dir: Path, make_queue_fleet
) -> None:  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(1)
    qf.write_queue(
        f"{qf.cell_script('alpha', 'echo hi')} t\n{qf.cell_script('beta', 'echo hi')} t\n"
    )
    app = RgtApp(load_fleet(qf.loopback.hosts_file), start_monitors=False, config_dir=tmp_path)
    journal_file = app.jobs.journal().path("box1")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await checklist(app, pilot)
        before = journal_file.read_text()
        box = app.screen.query_one("#ack-cell", Input)
        box.focus()
        await pilot.press(*"alhpa")  # a typo: no such cell
        # Enter offers nothing for a name the queue does not hold, nor does the button
        # (it offered "to accept it anyway, Tab to Missing: accept", then refused it).
        await pilot.press("enter")
        await wait_for(lambda: "is not a cell of box1's queue" in screen_text(app), pilot=pilot)
        assert "accept it anyway" not in screen_text(app)
        await pilot.press("tab")
        await wait_for(
            lambda: "nothing — 'alhpa' is not a cell of box1's queue" in screen_text(app),
            pilot=pilot,
        )
        await click(pilot, "#ack-missing")
        await wait_for(lambda: app.jobs.state("box1").ack_refusal is not None, 60, pilot=pilot)
        await wait_for(lambda: "nothing was acknowledged" in screen_text(app), pilot=pilot)
        text = screen_text(app)
        assert "no cell named 'alhpa'" in text and "Its cells: alpha, beta" in text
        assert journal_file.read_text() == before  # nothing recorded
        assert "MissingCellAcknowledged" not in before

        box.focus()
        await pilot.press(*"beta")
        # Running: accept on a cell that does not run says so before Enter (review h554
        # #4: "Enter: accept beta as running", then a refusal).
        app.screen.query_one("#ack-running").focus()
        await wait_for(
            lambda: (
                "nothing — 'beta' is not running, as the last check read it" in screen_text(app)
            ),
            pilot=pilot,
        )
        # Nor unfinished: it never ran (h591 #3: "Enter: accept beta as unfinished").
        app.screen.query_one("#ack-unfinished").focus()
        await wait_for(
            lambda: (
                "nothing — 'beta' is not unfinished, as the last check read it" in screen_text(app)
            ),
            pilot=pilot,
        )
        box.focus()
        # Another name typed: the refusal of 'alhpa' no longer stands under its hint.
        await wait_for(lambda: "nothing was acknowledged" not in screen_text(app), pilot=pilot)
        await click(pilot, "#ack-missing")
        await wait_for(lambda: not app.jobs.state("box1").running, 60, pilot=pilot)
        await wait_for(lambda: "MissingCellAcknowledged" in journal_file.read_text(), pilot=pilot)
        assert app.jobs.state("box1").ack_refusal is None
        assert "nothing was acknowledged" not in screen_text(app)


async def test_box_gone_at_confirmation_keeps_the_gate_locked(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    marker = tmp_path / "marker"
    app = teardown_app(loopback_fleet, tmp_path, f"echo destroyed > {marker}")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pull_and_verify(app, pilot)
        text = await checklist(app, pilot)
        assert "ready: type 'box1'" in text  # every fact holds, as of a minute ago
        await loopback_fleet.box("box1").stop()  # the box is gone when the name is typed
        await type_name(app, pilot, "box1")
        text = screen_text(app)
        assert "locked: teardown refused for box1" in text and "nothing was torn down" in text
        assert "rescan" in app.jobs.state("box1").refusal  # the re-scan now is what failed
        assert not marker.exists() and app.jobs.state("box1").torn_down_at is None
        assert not app.jobs.state("box1").gate.ready_but_confirmation  # the checklist too
        assert "ready: type 'box1'" not in text
    journal = json.loads(app.jobs.journal().path("box1").read_text())
    assert journal["teardowns"] == []


async def test_manual_teardown_is_recorded_only_after_the_second_name(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    results_on_box(loopback_fleet.box("box1").root)
    app = RgtApp(
        load_fleet(loopback_fleet.hosts_file), start_monitors=False, config_dir=tmp_path / "c"
    )
    journal_file = app.jobs.journal().path("box1")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pull_and_verify(app, pilot)
        await checklist(app, pilot)
        await type_name(app, pilot, "box1")
        state = app.jobs.state("box1")
        assert state.teardown is not None and not state.teardown.ran and state.awaiting_manual
        # The tab draws the instructions a refresh after the state says so: waited for, not
        # read at once (a loaded CI run read the screen before it, s36).
        await wait_for(
            lambda: "NOT recorded as torn down" in screen_text(app), what="the steps", pilot=pilot
        )
        text = screen_text(app)
        # The instructions: the profile's verb, what it destroys, what keeps billing.
        assert "Do this by hand now, for box1 (box " in text and "destroys" in text
        assert "Keeps billing" in text
        assert "NOT recorded as torn down: box1 bills until you destroy it" in text
        assert "type 'box1' again in the Confirm box above" in text
        box = app.screen.query_one("#confirm-name", Input)
        assert box.placeholder == "type the host's name again once you destroyed the box"
        # Nothing recorded, nothing greyed out, and nothing says billing stopped.
        assert json.loads(journal_file.read_text())["teardowns"] == []
        assert state.torn_down_at is None
        said = text + "\n".join(str(n.message) for n in shown_notifications(app))
        assert "cost stops" not in said and "recorded as torn down:" not in said.replace(
            "NOT recorded as torn down:", ""
        )

        # A wrong second name records nothing either (and keeps the cursor in the box).
        box.focus()
        await pilot.pause()
        await pilot.press(*"box2", "enter")
        await wait_for(lambda: "nothing was recorded" in screen_text(app), pilot=pilot)
        assert app.screen.focused is box
        assert json.loads(journal_file.read_text())["teardowns"] == []
        assert app.jobs.state("box1").awaiting_manual

        # Its telemetry is not connected here (no monitors), yet the box answers: one
        # connection asks, as the command line's does (h462 #1), and it is refused.
        await pilot.press(*"box1", "enter")
        await wait_for(
            lambda: "box1 still answers: box" in (app.jobs.state("box1").refusal or ""),
            60,
            pilot=pilot,
        )
        assert json.loads(journal_file.read_text())["teardowns"] == []
        await loopback_fleet.box("box1").stop()  # destroyed by hand: nothing answers

        box.focus()
        await pilot.pause()
        await pilot.press(*"box1", "enter")
        await wait_for(lambda: app.jobs.state("box1").torn_down_at is not None, 60, pilot=pilot)
        await wait_for(
            lambda: "you confirmed the box is destroyed" in screen_text(app), pilot=pilot
        )
        # The steps are now what was done, not "do this now" (a user's hour).
        assert "What you did by hand, for box1" in screen_text(app)
        assert "Do this by hand now" not in screen_text(app)
        teardowns = json.loads(journal_file.read_text())["teardowns"]
        assert [(t["ok"], t["manual"], t["command"]) for t in teardowns] == [(True, True, None)]
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, FleetScreen)
        pane = app.fleet_screen.panes["box1"]
        assert pane.has_class("-torn-down") and "torn down" in str(pane.border_subtitle)


async def test_the_second_name_waits_for_a_pull_that_is_running(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    """The TUI's record of a teardown by hand (the second typed name) goes through
    ``record_destroyed``, as --destroyed does: a pull still running refuses it (review
    s44 #5: its listing of the box is not recorded yet), said on the tab, nothing
    recorded. (A pull since that found files not here: the next test.)"""
    from rgt_tui.fsutil import file_lock
    from rgt_tui.services.records import pull_lock_path

    root = loopback_fleet.box("box1").root
    results_on_box(root)
    fleet = load_fleet(loopback_fleet.hosts_file)
    app = RgtApp(fleet, start_monitors=False, config_dir=tmp_path / "c")
    journal_file = app.jobs.journal().path("box1")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await confirmed_by_hand(app, pilot)
        box = app.screen.query_one("#confirm-name", Input)
        folder = fleet.results_dir / "box1"
        with file_lock(pull_lock_path(folder), 0):  # a pull in another window
            box.focus()
            await pilot.press(*"box1", "enter")
            await wait_for(lambda: "a pull of box1 is running" in screen_text(app), pilot=pilot)
        assert app.jobs.state("box1").torn_down_at is None
        assert json.loads(journal_file.read_text())["teardowns"] == []


async def test_the_name_typed_again_while_the_box_still_answers_records_nothing(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    """Hour s45a #2: the name typed again while the box's pane showed it answering
    recorded it torn down, and a file it wrote since was named nowhere. A box whose
    telemetry is connected is not destroyed: refused, said; once it stops answering the
    record goes through."""
    root = loopback_fleet.box("box1").root
    results_on_box(root)
    fleet = load_fleet(loopback_fleet.hosts_file)
    app = RgtApp(fleet, start_monitors=True, config_dir=tmp_path / "c")
    journal_file = app.jobs.journal().path("box1")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(
            lambda: (
                (u := app.runtime.latest.get("box1")) is not None
                and u.connection.status == "connected"
            ),
            60,
            pilot=pilot,
        )
        await confirmed_by_hand(app, pilot)
        box = app.screen.query_one("#confirm-name", Input)
        box.focus()
        await pilot.press(*"box1")
        # Its keys say so before Enter (review s45 #5: they promised the record).
        await wait_for(
            lambda: box.border_subtitle.startswith("Enter: nothing (it still answers)"),
            pilot=pilot,
        )
        await pilot.press("enter")
        await wait_for(lambda: "box1 still answers" in screen_text(app), pilot=pilot)
        said = " ".join(screen_text(app).split())
        assert "it is not destroyed yet" in said and "nothing was recorded" in said, said
        assert app.jobs.state("box1").torn_down_at is None
        assert json.loads(journal_file.read_text())["teardowns"] == []
        await loopback_fleet.box("box1").stop()  # destroyed now
        await wait_for(lambda: not app.box_answers("box1"), 60, pilot=pilot)
        box = app.screen.query_one("#confirm-name", Input)
        box.focus()
        await pilot.press(*"box1", "enter")
        await wait_for(lambda: app.jobs.state("box1").torn_down_at is not None, pilot=pilot)


async def test_verify_runs_the_fleets_python_and_says_which_torch(
    tmp_path: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    # [fleet] verify_python names the interpreter that loads checkpoints (one with torch);
    # a wrapper of this one (the venv has torch), under a name of its own, shows it is the
    # one used. (A bare symlink would lose the venv, and with it torch.)
    python = tmp_path / "training-env-python"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    hosts = loopback_fleet.hosts_file
    hosts.write_text(f'[fleet]\nverify_python = "{python}"\n\n' + hosts.read_text())
    results_on_box(loopback_fleet.box("box1").root)
    fleet = load_fleet(hosts)
    assert fleet.verify_python is not None and str(python) in str(fleet.verify_python)
    app = RgtApp(fleet, start_monitors=False, config_dir=tmp_path / "c")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pull_and_verify(app, pilot)
        loader = app.jobs.state("box1").verify_report.loader
        assert loader.python == str(python) and loader.torch == torch.__version__
        await wait_for(lambda: "loaded with: torch" in screen_text(app), pilot=pilot)
        assert f"torch {torch.__version__} — {python}" in screen_text(app)


async def test_the_ack_buttons_say_nothing_for_a_cell_its_queue_still_runs(
    tmp_path: Path, state_dir: Path, make_queue_fleet
) -> None:  # type: ignore[no-untyped-def]
    """h595 #4: "Enter: accept b as missing" on a cell still pending (and on one running),
    then Enter refused it; Unfinished: accept on the running cell said it was "not
    unfinished", where its button is Running: accept."""
    from support.queues import GATE, SCRIPT_RUN, wait_view

    from rgt_tui.domain.queue_state import RUNNING
    from rgt_tui.services.queue.launch import launch, plan_launch

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.write_queue(f"{qf.cell_script('gate', GATE)} t\n{qf.cell_script('b', 'echo b')} t\n")
    transport = qf.transport("box1")
    try:
        await launch(await plan_launch(qf.fleet, qf.host("box1"), transport), transport)
    finally:
        await transport.close()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="the gate cell to run")
    app = RgtApp(load_fleet(qf.loopback.hosts_file), start_monitors=False, config_dir=tmp_path)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            await checklist(app, pilot)
            box = app.screen.query_one("#ack-cell", Input)
            for cell, button, said in (
                ("b", "#ack-missing", "nothing — 'b' is pending: accept it as missing once"),
                ("gate", "#ack-missing", "nothing — 'gate' is running: accept it as missing"),
                ("gate", "#ack-unfinished", "'gate' is running: Running: accept is its button"),
            ):
                box.focus()
                box.value = cell
                app.screen.query_one(button).focus()
                await wait_for(lambda s=said: s in screen_text(app), what=said, pilot=pilot)
    finally:
        (qf.root("box1") / "go").touch()
