"""With the notices list (n) open, news is listed there, not drawn over it as a toast
(session 29's hour: a toast covered the list being read)."""

from __future__ import annotations

from pathlib import Path

from support.pilot import SIZE, screen_text, shown_notifications, wait_for

from rgt_tui.app import RgtApp
from rgt_tui.screens.notices import NoticesScreen
from rgt_tui.services.fleet.file import load_fleet


async def test_a_notice_told_while_the_list_is_open_is_listed_not_toasted(
    make_loopback_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    loopback = await make_loopback_fleet(1)
    app = RgtApp(load_fleet(loopback.hosts_file), config_dir=tmp_path / "config")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await wait_for(lambda: isinstance(app.screen, NoticesScreen), pilot=pilot)
        before = len(shown_notifications(app))
        app.notify("box1: the pull failed: disk full", title="box1", severity="error")
        await wait_for(lambda: "the pull failed: disk full" in screen_text(app), pilot=pilot)
        assert len(shown_notifications(app)) == before  # listed, no toast over the list

        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, NoticesScreen), pilot=pilot)
        app.notify("box1: pulled", title="box1")
        await wait_for(lambda: len(shown_notifications(app)) == before + 1, pilot=pilot)
