"""The Teardown tab says what happened where it can be read (ux-a #7, #12, #13; ux-c #16),
under the Pilot over a real loopback box:

- a wrong name's refusal is scrolled into view under the box, at 120x40, and after the
  first correct name at 80x24 the by-hand steps are on screen, naming the box (its id
  and host key) and the Confirm box "above" them;
- each checklist line reads what it needs, then what was found;
- Tab from the name box goes to the cell-name box above it.
"""

from __future__ import annotations

import re
from pathlib import Path

from support.pilot import screen_text, text_of, wait_for
from support.teardown_ui import checklist, pull_and_verify, teardown_app
from textual.widgets import Input, Static

from rgt_tui.domain.gate_fixes import FOUND


async def test_a_wrong_names_refusal_is_in_view(tmp_path: Path, loopback_fleet) -> None:  # type: ignore[no-untyped-def]
    app = teardown_app(loopback_fleet, tmp_path, None)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await checklist(app, pilot)
        # Each line: what it needs │ found: what was found (never "verify found no
        # problem: no verification"). Read from the checklist itself: at 120x40 t scrolls
        # the tab down to the name box, and this line may be above the screen.
        text = text_of(app.screen.query_one("#teardown-checklist", Static))
        assert f"✖ verified    verify finds no problem{FOUND}" in text, text
        # When it was checked, first: a tab opened later read old ✓ lines as now (hour s30).
        assert re.match(r"checked \d\d:\d\d:\d\d · Ctrl\+R re-checks\n", text), text
        box = app.screen.query_one("#confirm-name", Input)
        assert app.focused is box
        # The title says where the keys go: not "1–8 tabs" while digits type into the box
        # (hour s30), and says it again once the cursor leaves it.
        title = app.screen.query_one(".detail-title", Static)
        await wait_for(lambda: "keys type into the field" in text_of(title), pilot=pilot)
        assert "tabs" not in text_of(title), text_of(title)
        # Tab: to the cell-name box above, not round through the tab bar.
        await pilot.press("tab")
        assert app.focused is app.screen.query_one("#ack-cell", Input)
        app.screen.set_focus(None)
        await wait_for(lambda: "1–8 tabs · r reconnect" in text_of(title), pilot=pilot)
        box.focus()
        await wait_for(lambda: "keys type into the field" in text_of(title), pilot=pilot)
        await pilot.press(*"box2", "enter")
        await wait_for(lambda: app.jobs.state("box1").refusal, pilot=pilot)
        said = "'box2' is not 'box1': nothing was torn down"
        await wait_for(lambda: said in screen_text(app), pilot=pilot)


async def test_the_by_hand_steps_are_in_view_at_80x24_and_name_the_box(
    tmp_path: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    app = teardown_app(loopback_fleet, tmp_path, None)  # no teardown command: by hand
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pull_and_verify(app, pilot)
        await checklist(app, pilot)
        await pilot.press(*"box1", "enter")
        await wait_for(lambda: app.jobs.state("box1").awaiting_manual, 60, pilot=pilot)
        box = app.jobs.state("box1").teardown.report.box
        await wait_for(lambda: "Do this by hand now, for box1" in screen_text(app), pilot=pilot)
        text = screen_text(app).replace("\n", " ")
        assert box.short() in text, text
        await wait_for(lambda: "again in the Confirm box above" in screen_text(app), pilot=pilot)


async def test_the_tab_shown_by_6_says_how_to_reach_the_name_box(
    tmp_path: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    """A user's hour (session 29): 6 showed the Teardown tab without the cursor in the
    name box, and "box1" typed there ran keys (the 1 showed the Overview). Without the
    cursor, the boxes say how to reach them; with it, what to type."""
    from rgt_tui.screens.host_detail import HostDetailScreen

    app = teardown_app(loopback_fleet, tmp_path, None)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        app.open_host("box1")
        await wait_for(lambda: isinstance(app.screen, HostDetailScreen), pilot=pilot)
        await pilot.press("6")
        await wait_for(lambda: app.screen.query("#confirm-name"), pilot=pilot)
        box = app.screen.query_one("#confirm-name", Input)
        cell = app.screen.query_one("#ack-cell", Input)
        await wait_for(
            lambda: box.placeholder == "press t, then type the host's name to tear it down",
            pilot=pilot,
        )
        assert cell.placeholder == "cell name (t, then Tab)" and not box.has_focus
        await pilot.press("t")
        await wait_for(lambda: box.has_focus, pilot=pilot)
        assert box.placeholder == "type the host's name to tear it down"
        assert cell.placeholder == "cell name (Tab)"  # t is pressed: Tab is what is left
        await pilot.press("tab")
        await wait_for(lambda: cell.has_focus, pilot=pilot)
        assert cell.placeholder == "cell name"
        # From the cell box t is a letter: the way back is Shift+Tab (hour s45a #7).
        assert box.placeholder == "Shift+Tab, then type the host's name to tear it down"
