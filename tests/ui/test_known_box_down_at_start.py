"""A TUI reopened while a box it knows is down (ux-g #1): the monitor reads it
reconnecting, not unreached, so the GEN8 alert is raised and the header counts it; the
pane and the Overview tab say the box does not answer now, that it answered before (the
journal's first sighting and its last sample on record), and that the run may still be
alive — never "never connected", which is for a box no sample ever came from
(tests/ui/test_never_connected.py)."""

from __future__ import annotations

import time
from pathlib import Path

from support.pilot import SIZE, screen_text, wait_for

from rgt_tui.app import RgtApp
from rgt_tui.content.host_text import ALIVE_NOTE
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.journal import journal_for
from rgt_tui.widgets.fleet_header import FleetHeader


def pane_text(app: RgtApp, host: str) -> str:
    """What ``host``'s pane shows, as plain text."""
    return app.fleet_screen.panes[host].render().plain


def header_text(app: RgtApp) -> str:
    """The fleet header's counts, as plain text."""
    return app.fleet_screen.query_one(FleetHeader).render().plain


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
    last_seen = journal.load("box1").last_seen
    assert first_seen is not None and last_seen is not None

    # The box goes down while no TUI is open; the next TUI opens on it.
    await loopback_fleet.box("box1").stop()
    again = RgtApp(load_fleet(loopback_fleet.hosts_file), config_dir=tmp_path / "config")
    async with again.run_test(size=SIZE) as pilot:
        await wait_for(
            lambda: (u := again.latest.get("box1")) is not None and u.connection.attempt >= 1,
            pilot=pilot,
        )
        update = again.latest["box1"]
        # Known to the journal: reconnecting (GEN8), with the journal's sightings.
        assert update.connection.status == "reconnecting", update.connection
        assert update.snapshot is None
        assert update.first_seen == first_seen and update.last_seen == last_seen
        assert any(a.id == "connection.lost" and a.gotcha == "GEN8" for a in update.alerts)
        await wait_for(lambda: "not answering" in pane_text(again, "box1"), pilot=pilot)
        text = pane_text(again, "box1")
        assert "never connected" not in text, text
        assert "not answering since this TUI started" in text, text
        first, last = (time.strftime("%H:%M", time.localtime(t)) for t in (first_seen, last_seen))
        assert f"first seen {first} · last sample on record {last}" in text, text
        assert ALIVE_NOTE in text and "refused" in text, text
        # The header counts it down, with its GEN8 warning.
        await wait_for(lambda: "1 down" in header_text(again), pilot=pilot)
        assert "warning" in header_text(again), header_text(again)

        # The Overview tab says the same, never "never connected".
        again.open_host("box1")
        await wait_for(lambda: isinstance(again.screen, HostDetailScreen), pilot=pilot)
        await wait_for(lambda: "not answering" in screen_text(again), pilot=pilot)
        text = screen_text(again)
        assert "never connected" not in text, text
        assert f"first seen {first} · last sample on record {last}" in text, text
        assert ALIVE_NOTE in text, text
