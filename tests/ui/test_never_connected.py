"""A host never reached (its port closed from the start) says so, honestly, everywhere."""

from __future__ import annotations

from pathlib import Path

from support.pilot import SIZE, screen_text, wait_for

from rgt_tui.app import RgtApp
from rgt_tui.content.host_text import ALIVE_NOTE
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.services.fleet.file import load_fleet


async def test_a_host_never_reached_shows_never_connected_and_no_sample_yet(
    loopback_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    await loopback_fleet.box("box1").stop()
    app = RgtApp(load_fleet(loopback_fleet.hosts_file), config_dir=tmp_path / "config")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(
            lambda: (u := app.latest.get("box1")) is not None and u.connection.attempt >= 1,
            pilot=pilot,
        )
        await wait_for(lambda: "never connected" in screen_text(app), pilot=pilot)
        update = app.latest["box1"]
        assert update.connection.status == "unreached"
        assert not any(a.id == "connection.lost" for a in update.alerts)
        # Never sampled, its alerts are unknown: "✓ no alerts" under "✖ never connected"
        # read as a clean bill of health (a user's hour).
        assert "no alerts" not in screen_text(app)
        app.open_host("box1")
        await wait_for(lambda: isinstance(app.screen, HostDetailScreen), pilot=pilot)
        await wait_for(lambda: "no sample yet" in screen_text(app), pilot=pilot)
        text = screen_text(app)
        assert "never connected" in text and "refused" in text
        assert ALIVE_NOTE not in text and "cgroup not readable" not in text
        await pilot.press("4")  # Alerts: unknown, not "✓ no active alerts"
        await wait_for(lambda: "no sample yet: alerts unknown" in screen_text(app), pilot=pilot)
        assert "no active alerts" not in screen_text(app)
