"""The Teardown tab's keys at 80x24, under the Pilot over a real loopback box (ux-e 9, 10):

- PageUp from the name box shows the checklist and it stays shown: a sample or a job
  state that changes nothing on the tab does not scroll it back (typing does);
"""

from __future__ import annotations

from pathlib import Path

from support.pilot import screen_text, wait_for
from support.samples import agent_sample, make_update
from support.teardown_ui import checklist, pull_and_verify, teardown_app
from textual.widgets import Input

from rgt_tui.messages import HostUpdated
from rgt_tui.screens.job_keys import JobsChanged

SMALL = (80, 24)


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
        await wait_for(lambda: tab.scroll_y > 0, pilot=pilot, what="t scrolls to the box")
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
        await pilot.press("b")  # typing in the box brings it back into view
        await wait_for(lambda: tab.scroll_y > 0, pilot=pilot, what="the box back in view")
        assert box.value == "b"
