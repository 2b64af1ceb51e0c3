"""ux-a #8: with a mistake in the fleet file the app runs on the last good settings;
the detail screen says so too (not only the fleet screen), so y and P there are not
silently run on settings the user believes changed. Real loopback box, the app's real
fleet-file reader, the Pilot.
"""

from __future__ import annotations

from pathlib import Path

from support.pilot import SIZE, screen_text, wait_for

from rgt_tui.app import RgtApp
from rgt_tui.demo.loopback import LoopbackFleet
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.services.fleet.file import load_fleet

SAID = "✖ fleet file not applied (n: all): "


async def test_the_detail_screen_says_the_fleet_file_is_not_applied_until_it_is_fixed(
    tmp_path: Path, state_dir: Path
) -> None:
    async with LoopbackFleet(1, tmp_path / "fleet") as boxes:
        hosts = boxes.hosts_file
        good = hosts.read_text()
        app = RgtApp(load_fleet(hosts), config_dir=tmp_path / "config")
        app.FLEET_FILE_EVERY_S = 0.05
        async with app.run_test(size=SIZE) as pilot:
            app.open_host("box1")
            await wait_for(lambda: isinstance(app.screen, HostDetailScreen), pilot=pilot)
            assert SAID not in screen_text(app)

            # The typo of the trial: an unknown key. The open detail screen says it.
            hosts.write_text(good + "cost_per_hr = 0.5\n")
            line = len(good.splitlines()) + 1
            await wait_for(
                lambda: f"{SAID}{hosts.name}:{line}: cost_per_hr" in screen_text(app), pilot=pilot
            )

            # Opened while the file is broken: said at once.
            await pilot.press("escape")
            await wait_for(lambda: not isinstance(app.screen, HostDetailScreen), pilot=pilot)
            app.open_host("box1")
            await wait_for(lambda: isinstance(app.screen, HostDetailScreen), pilot=pilot)
            await wait_for(
                lambda: f"{SAID}{hosts.name}:{line}: cost_per_hr" in screen_text(app), pilot=pilot
            )

            # Fixed: applied, and the line goes.
            hosts.write_text(good + "cost_per_hour = 0.5\n")
            await wait_for(lambda: SAID not in screen_text(app), pilot=pilot)
    assert not boxes.errors
