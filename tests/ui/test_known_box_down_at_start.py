"""A TUI reopened while a box it knows is down (ux-g #1): the pane says the box does not
answer now, that it answered before (the journal's first sighting), and that the run may
still be alive (GEN8) — never "never connected", which is for a box no sample ever came
from (tests/ui/test_never_connected.py)."""

from __future__ import annotations

import time
from pathlib import Path

from support.pilot import SIZE, wait_for

from rgt_tui.app import RgtApp
from rgt_tui.content.host_text import ALIVE_NOTE
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.journal import journal_for


def pane_text(app: RgtApp, host: str) -> str:
    """What ``host``'s pane shows, as plain text."""
    return app.fleet_screen.panes[host].render().plain


async def test_a_known_box_down_when_the_tui_opens_is_not_never_connected(
    loopback_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    fleet = load_fleet(loopback_fleet.hosts_file)
    journal = journal_for(fleet)
    # A first run sees box1 answer: the journal keeps when.
    app = RgtApp(fleet, config_dir=tmp_path / "config")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(
            lambda: (u := app.latest.get("box1")) is not None and u.snapshot is not None,
            pilot=pilot,
        )
        await wait_for(lambda: journal.load("box1").first_seen is not None, pilot=pilot)
    first_seen = journal.load("box1").first_seen
    assert first_seen is not None

    # The box goes down while no TUI is open; the next TUI opens on it.
    await loopback_fleet.box("box1").stop()
    again = RgtApp(load_fleet(loopback_fleet.hosts_file), config_dir=tmp_path / "config")
    async with again.run_test(size=SIZE) as pilot:
        await wait_for(
            lambda: (u := again.latest.get("box1")) is not None and u.connection.attempt >= 1,
            pilot=pilot,
        )
        update = again.latest["box1"]
        assert update.connection.status == "unreached" and update.first_seen == first_seen
        await wait_for(lambda: "not answering" in pane_text(again, "box1"), pilot=pilot)
        text = pane_text(again, "box1")
        assert "never connected" not in text, text
        assert "not answering since this TUI started" in text, text
        hhmm = time.strftime("%H:%M", time.localtime(first_seen))
        assert f"first seen {hhmm}; its last sample came before this TUI started" in text
        assert ALIVE_NOTE in text and "refused" in text, text
