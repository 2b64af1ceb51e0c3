"""The Teardown tab's keys at 80x24, under the Pilot over a real loopback box (ux-e 9, 10):

- PageUp from the name box shows the checklist and it stays shown: a sample or a job
  state that changes nothing on the tab does not scroll it back (typing does);
- Enter in the cell's box acknowledges the one kind the checklist asks of that cell, and
  a name it does not ask for is said, not recorded; after an acknowledgement (Enter or a
  button) the cursor is in the name box, so what is typed next lands there; the buttons
  wear their focus in their text, and a line under them says what Enter does.
"""

from __future__ import annotations

from pathlib import Path

from support.pilot import screen_text, text_of, wait_for
from support.samples import agent_sample, make_update
from support.teardown_ui import checklist, job_done, pull_and_verify, teardown_app
from textual.widgets import Input, Static

from rgt_tui.app import RgtApp
from rgt_tui.messages import HostUpdated
from rgt_tui.screens.job_keys import JobsChanged
from rgt_tui.services.fleet.file import load_fleet

SMALL = (80, 24)


def said(app: RgtApp, ident: str) -> str:
    """What the tab's Static ``ident`` says, in view or not (80x24 shows a part)."""
    return text_of(app.screen.query_one(f"#{ident}", Static))


async def test_page_up_in_the_name_box_stays_where_the_user_scrolled(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    app = teardown_app(loopback_fleet, tmp_path, "true")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        await pull_and_verify(app, pilot)
        await checklist(app, pilot)
        screen = app.screen
        box = screen.query_one("#confirm-name", Input)
        tab = screen.tabs["teardown"]
        assert app.focused is box
        # In the name box's border, what Enter does there and the ways out (a user's hour).
        keys = "Enter: tear it down · Tab: cell box · Esc: back"
        # Empty, Enter refuses "'' is not 'box1'": it promised a teardown (hour s45a #6).
        empty = "Enter: nothing (no name) · Tab: cell box · Esc: back"
        await wait_for(lambda: box.border_subtitle == empty, pilot=pilot, what="its keys")
        await wait_for(lambda: tab.scroll_y > 0, pilot=pilot, what="t scrolls to the box")
        await wait_for(lambda: empty in screen_text(app), pilot=pilot, what="its keys shown")
        for _ in range(6):
            await pilot.press("pageup")
        await pilot.pause()
        assert tab.scroll_y == 0 and "Checklist" in screen_text(app)
        # A sample, and job news that changes nothing on the tab, as they keep coming.
        for seq in range(2, 5):
            app.post_message(HostUpdated(make_update("box1", agent_sample("box1", seq=seq))))
            await pilot.pause()
            app.post_message(JobsChanged(app.jobs.state("box1")))
            await pilot.pause()
        await pilot.pause()
        assert tab.scroll_y == 0, "the tab scrolled back to the name box"
        assert app.focused is box
        await pilot.press("tab")  # to the cell's box: the name box's line goes
        await wait_for(lambda: not box.border_subtitle, pilot=pilot, what="the keys gone")
        screen.set_focus(box)
        await wait_for(lambda: box.border_subtitle == empty, pilot=pilot, what="keys back")
        await pilot.press("b")  # typing in the box brings it back into view
        await wait_for(lambda: tab.scroll_y > 0, pilot=pilot, what="the box back in view")
        assert box.value == "b"
        # A name that is not the box's: Enter does nothing, and its keys say so (they
        # said "tear it down" over any name: a user's hour, s42). The name: as before.
        nothing = "Enter: nothing (not box1) · Tab: cell box · Esc: back"
        await wait_for(lambda: box.border_subtitle == nothing, pilot=pilot, what="nothing")
        await pilot.press("backspace", *"box1")
        await wait_for(lambda: box.border_subtitle == keys, pilot=pilot, what="tear it down")
        await pilot.press(*["backspace"] * 4, "b")
        await wait_for(lambda: box.border_subtitle == nothing, pilot=pilot, what="nothing")


async def test_enter_in_the_cell_box_acknowledges_and_the_cursor_stays_until_the_last(
    tmp_path: Path, state_dir: Path, make_queue_fleet
) -> None:  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(1)
    alpha, beta = qf.cell_script("alpha", "echo hi"), qf.cell_script("beta", "echo hi")
    qf.write_queue(f"{alpha} t\n{beta} t\n")  # never launched: both cells missing
    (qf.root() / "results" / "metrics.json").write_text('{"loss": 1.0}')
    app = RgtApp(load_fleet(qf.loopback.hosts_file), start_monitors=False, config_dir=tmp_path)
    journal = app.jobs.journal().path("box1")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        await pilot.press("p")
        await job_done(app, pilot, "box1", "pull_result")
        await pilot.press("v")
        await job_done(app, pilot, "box1", "verify_report")
        await checklist(app, pilot)
        assert "unacknowledged: alpha, beta" in said(app, "teardown-checklist")
        screen = app.screen
        name, cell = screen.query_one("#confirm-name", Input), screen.query_one("#ack-cell", Input)
        assert app.focused is name
        await pilot.press("tab")  # from the name box up to the cell's box
        assert app.focused is cell
        before = journal.read_text()

        await pilot.press(*"alhpa")  # a typo: Enter says so and records nothing
        await wait_for(
            lambda: "Enter: nothing — 'alhpa' is not a cell" in said(app, "ack-keys"), pilot=pilot
        )
        await pilot.press("enter")
        await wait_for(
            lambda: "it asks for: alpha (missing); beta (missing)" in said(app, "ack-note"),
            pilot=pilot,
        )
        assert app.focused is cell and journal.read_text() == before
        assert said(app, "ack-keys") == "Tab: the buttons"  # said once, in the note
        assert not app.jobs.state("box1").running  # no acknowledgement was asked for

        cell.value = ""
        await pilot.press(*"alpha")
        await wait_for(
            lambda: "Enter: accept alpha as missing" in said(app, "ack-keys"), pilot=pilot
        )
        await pilot.press("enter")
        await wait_for(lambda: "MissingCellAcknowledged" in journal.read_text(), 60, pilot=pilot)
        await wait_for(lambda: not app.jobs.state("box1").running, 60, pilot=pilot)
        # beta is still asked about: the cursor stays in the cell box, so the next name
        # typed is not taken as the host's (h505 #2: it went to the confirm box).
        assert app.focused is cell, app.focused
        await wait_for(
            lambda: "unacknowledged: beta" in said(app, "teardown-checklist"), pilot=pilot
        )

        # The report's way: Tab to the button (its focus shows in its text), Enter.
        await pilot.press(*"beta", "tab")
        assert app.focused is screen.query_one("#ack-missing")
        await wait_for(lambda: "▶ Missing: accept ◀" in screen_text(app), pilot=pilot)
        assert "Enter: accept beta as missing" in said(app, "ack-keys")
        await pilot.press("enter")
        assert app.focused is name, app.focused
        await pilot.press(*"box1")  # typed on at once: it lands in the name box
        assert name.value == "box1" and cell.value == ""
        await wait_for(lambda: not app.jobs.state("box1").running, 60, pilot=pilot)
        # The name is in the box: the verdict says Enter is what is left (h542 #10).
        await wait_for(
            lambda: (
                "ready: 'box1' typed below — Enter tears it down" in said(app, "teardown-checklist")
            ),
            60,
            pilot=pilot,
        )
        assert app.focused is name and name.value == "box1"


async def test_a_locked_gates_keys_fit_the_name_box_at_80_columns(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    """Hour s30: "Enter: check again (locked: 11 unticked) · Tab: cell …" was cut in
    the name box's border at 80x24; what Enter does there is the line's point."""
    app = teardown_app(loopback_fleet, tmp_path, "true")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        await checklist(app, pilot)  # nothing pulled: locked
        box = app.screen.query_one("#confirm-name", Input)
        await wait_for(
            lambda: (box.border_subtitle or "").startswith("Enter: re-check ("),
            pilot=pilot,
            show=lambda: str(box.border_subtitle),
        )
        keys = box.border_subtitle
        assert keys.endswith("unticked) · Tab: cell box · Esc: back"), keys
        await wait_for(lambda: keys in screen_text(app), pilot=pilot, what="the whole line shown")
        # Enter on the empty box does what the line says: it checks again (h461 #2: it
        # answered "'' is not 'box1'" and checked nothing).
        before = app.jobs.state("box1").gate_at
        box.focus()
        await pilot.press("enter")
        await wait_for(lambda: app.jobs.state("box1").gate_at != before, 60, pilot=pilot)
        assert app.jobs.state("box1").refusal is None
        assert "is not 'box1'" not in screen_text(app)
