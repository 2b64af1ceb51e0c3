"""ux-a #8: with a mistake in the fleet file the app runs on the last good settings;
the detail screen says so too (not only the fleet screen), so y and P there are not
silently run on settings the user believes changed. Real loopback box, the app's real
fleet-file reader, the Pilot.
"""

from __future__ import annotations

from pathlib import Path

from support.fleet_files import set_host_key
from support.pilot import SIZE, screen_text, wait_for
from support.teardown_ui import checklist, pull_and_verify, teardown_app, type_name

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


async def test_a_teardown_is_refused_while_the_fleet_file_is_not_applied(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    """h491 #1: with the teardown command edited (a new instance id) and a mistake saved
    beside it, the open TUI ran the last good file's command: the old box destroyed, the
    new one recorded as torn down while it bills. Refused as the CLI refuses it, until
    the file is fixed; then the file's new command runs."""
    old, new = tmp_path / "old-box-destroyed", tmp_path / "new-box-destroyed"
    app = teardown_app(loopback_fleet, tmp_path, f"touch {old}")
    app.FLEET_FILE_EVERY_S = 0.05
    hosts = loopback_fleet.hosts_file
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pull_and_verify(app, pilot)
        assert "ready: type 'box1'" in await checklist(app, pilot)

        set_host_key(hosts, "teardown", f"touch {new}")
        broken = hosts.read_text() + "cost_per_hr = 0.5\n"
        hosts.write_text(broken)
        await wait_for(lambda: f"{SAID}{hosts.name}:" in screen_text(app), pilot=pilot)
        await type_name(app, pilot, "box1")
        refusal = app.jobs.state("box1").refusal or ""
        assert refusal.startswith("the fleet file is not applied (") and "cost_per_hr" in refusal
        assert "nothing was torn down; type the name again once the file is applied" in refusal
        assert not old.exists() and not new.exists()
        assert app.jobs.state("box1").torn_down_at is None

        hosts.write_text(broken.replace("cost_per_hr", "cost_per_hour"))
        await wait_for(lambda: SAID not in screen_text(app), pilot=pilot)
        await checklist(app, pilot)
        await type_name(app, pilot, "box1")
        await wait_for(lambda: app.jobs.state("box1").torn_down_at is not None, pilot=pilot)
        assert new.exists() and not old.exists()


async def test_a_teardown_right_after_a_save_waits_for_the_file_to_be_read(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    """Review h492 #2: the file is read every 2 s, so a name typed right after a save
    ran the command of the file read before it. Not read yet: refused, said so."""
    old, new = tmp_path / "old-box-destroyed", tmp_path / "new-box-destroyed"
    app = teardown_app(loopback_fleet, tmp_path, f"touch {old}")
    app.FLEET_FILE_EVERY_S = 3600  # never read again within the test
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pull_and_verify(app, pilot)
        await checklist(app, pilot)
        set_host_key(loopback_fleet.hosts_file, "teardown", f"touch {new}")  # saved, unread
        await type_name(app, pilot, "box1")
        refusal = app.jobs.state("box1").refusal or ""
        assert "was saved a moment ago and is read every 3600 s: not read yet" in refusal
        assert not old.exists() and not new.exists()
        assert app.jobs.state("box1").torn_down_at is None
