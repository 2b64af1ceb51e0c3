"""The Teardown tab through both confirmations, after the record, and on ``local``
(issue 26), under the Pilot over a real loopback box:

- without a teardown command, the cursor stays in the confirmation box after the first
  confirmation, so typing the name again never fires a binding (``1`` switching tabs);
- once the teardown is recorded, the checklist says so (no "type the name below");
- on ``local`` (this machine standing in, with no pull folders) the tab fills in.
"""

from __future__ import annotations

from pathlib import Path

from support.pilot import SIZE, screen_text, wait_for
from support.teardown_ui import checklist, pull_and_verify, teardown_app
from textual.widgets import Input

from rgt_tui.app import RgtApp
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.services.fleet.file import load_fleet


async def test_the_cursor_stays_in_the_box_through_both_confirmations(
    tmp_path: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    app = teardown_app(loopback_fleet, tmp_path, None)  # no teardown command: by hand
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pull_and_verify(app, pilot)
        text = await checklist(app, pilot)
        assert "ready: type 'box1'" in text and " local " in text
        box = app.screen.query_one("#confirm-name", Input)
        assert app.focused is box  # t put the cursor there
        await pilot.press(*"box1")
        # Typed, not yet confirmed: the checklist says so, not "not typed yet" (h542 #10).
        typed = "ready: 'box1' typed below — Enter tears it down"
        await wait_for(lambda: typed in screen_text(app), 30, pilot=pilot)
        text = screen_text(app)
        assert "not typed yet" not in text and "'box1' typed below, not confirmed yet" in text
        await pilot.press("backspace")  # no longer the name: back as it was
        await wait_for(lambda: "ready: type 'box1'" in screen_text(app), 30, pilot=pilot)
        await pilot.press("1", "enter")
        await wait_for(lambda: app.jobs.state("box1").awaiting_manual, 60, pilot=pilot)
        # The checklist redraws after the job's state changes: wait for the words, not a
        # fixed pause (CI on a loaded machine drew it a frame later).
        again = "type 'box1' again in the Confirm box above"
        await wait_for(lambda: again in screen_text(app), 30, pilot=pilot)
        assert app.focused is box, app.focused  # still typing: no binding may fire
        await loopback_fleet.box("box1").stop()  # destroyed by hand: it no longer answers
        # Typed straight on: "1" would show tab 1 if it reached a binding.
        await pilot.press(*"box1")
        assert box.value == "box1" and app.screen.active_tab == "teardown"
        await pilot.press("enter")
        await wait_for(lambda: app.jobs.state("box1").torn_down_at is not None, 60, pilot=pilot)
        await wait_for(lambda: "recorded as torn down" in screen_text(app), 30, pilot=pilot)
        text = screen_text(app)
        assert "recorded as torn down" in text and "nothing left to confirm" in text
        assert "type 'box1' below" not in text and "type 'box1' to confirm" not in text
        assert app.focused is not box  # done: the keys act on the screen again


async def test_the_tab_fills_in_on_local(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)  # no fleet file here: this machine stands in as local
    app = RgtApp(load_fleet(None), start_monitors=False, config_dir=tmp_path / "config")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("t")
        await wait_for(lambda: isinstance(app.screen, HostDetailScreen), pilot=pilot)
        # No pull folders named: the gate does not walk the whole home, it says so.
        await wait_for(
            lambda: "cannot re-scan the box: no fleet file" in screen_text(app), 30, pilot=pilot
        )
        text = screen_text(app)
        assert "press t to check the gate" not in text and "cannot re-scan" in text
        assert not app.jobs.state("local").running


async def test_t_shows_the_name_box_on_a_terminal_shorter_than_the_checklist(
    tmp_path: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    """At 120x40 the checklist (the gate's facts, drawn as they arrive) is taller than the
    screen: t scrolls to the name box, and typing in it keeps it in view."""
    app = teardown_app(loopback_fleet, tmp_path, None)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        text = await checklist(app, pilot)  # t on box1, the gate's facts drawn
        box = app.screen.query_one("#confirm-name", Input)
        assert app.focused is box
        tab = box.parent
        while tab is not None and not tab.is_scrollable:
            tab = tab.parent
        assert tab is not None and tab.virtual_size.height > tab.size.height, text

        def box_in_view() -> bool:
            return tab.region.contains_region(box.region.shrink((1, 0, 1, 0)))

        await wait_for(box_in_view, pilot=pilot, show=lambda: f"{box.region} in {tab.region}")
        tab.scroll_home(animate=False)  # the user reads the checklist from the top
        await wait_for(lambda: not box_in_view(), pilot=pilot)
        await pilot.press("b")  # and types on: the box comes back into view
        await wait_for(box_in_view, pilot=pilot, show=lambda: f"{box.region} in {tab.region}")
        assert box.value == "b"
