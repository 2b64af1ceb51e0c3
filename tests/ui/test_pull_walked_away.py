"""A pull (or verify) started with a key and walked away from is told when it ends: a
toast, listed under n. Watched to its end on its Pulls tab, it needs no word beside the
tab that shows it. A user's hour pressed p, then Esc, and a failed pull went unseen.
Real loopback boxes, the real App; pull_rate_mbit makes each pull last seconds, as a
real one does, so Esc lands while it runs."""

from __future__ import annotations

import os
from pathlib import Path

from support.pilot import SIZE, wait_for
from support.teardown_ui import results_on_box

from rgt_tui.app import RgtApp
from rgt_tui.controllers.notices import notices_of
from rgt_tui.screens.fleet import FleetScreen
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.services.fleet.file import load_fleet


def titles(app: RgtApp) -> list[str]:
    return [n.title for n in notices_of(app).items()]


async def test_a_pull_walked_away_from_is_told_and_one_watched_is_not(
    tmp_path: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    hosts = loopback_fleet.hosts_file
    hosts.write_text("[fleet]\npull_rate_mbit = 8\n\n" + hosts.read_text())  # 1 MB/s
    for name, size in (("box1", 2), ("box2", 3)):
        root = loopback_fleet.box(name).root
        results_on_box(root)
        (root / "results" / "big.bin").write_bytes(os.urandom(size << 20))
    app = RgtApp(load_fleet(hosts), start_monitors=False, config_dir=tmp_path / "c")
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        jobs = app.jobs
        # Watched: p opens box1's Pulls tab; the pull ends there, in sight.
        await pilot.press("p")
        await wait_for(
            lambda: isinstance(app.screen, HostDetailScreen) and app.screen.active_tab == "pulls",
            pilot=pilot,
        )
        await wait_for(lambda: jobs.state("box1").pull_result is not None, 60, pilot=pilot)
        await wait_for(lambda: not jobs.state("box1").running, 60, pilot=pilot)
        assert "box1: pull complete" not in titles(app)

        # Walked away: box2's pull, and Esc while it runs; it ends behind the fleet screen.
        await pilot.press("escape")
        await wait_for(lambda: isinstance(app.screen, FleetScreen), pilot=pilot)
        await pilot.press("right", "p")  # box2
        await wait_for(lambda: jobs.state("box2").running == "pull", 60, pilot=pilot)
        await pilot.press("escape")
        await wait_for(lambda: isinstance(app.screen, FleetScreen), pilot=pilot)
        assert jobs.state("box2").running == "pull", "the pull ended before Esc: too quick a test"
        await wait_for(lambda: "box2: pull complete" in titles(app), 60, pilot=pilot)
        told = next(n for n in notices_of(app).items() if n.title == "box2: pull complete")
        assert "3 pulled, 0 already here, 0 failed" in told.text, told.text
        assert "v verifies it" in told.text


async def test_a_pull_the_fleet_file_refuses_is_told_with_its_fix_not_try_again(
    tmp_path: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    """A pull refused for the fleet file's words (a whole home to pull) fails again on p:
    its toast gives the file's fix, not "p tries again" (a user's hour)."""
    hosts = loopback_fleet.hosts_file
    blocks = hosts.read_text().split("[[hosts]]")
    for i, block in enumerate(blocks):
        if 'name = "box1"\n' in block:
            kept = [line for line in block.split("\n") if not line.startswith("pull =")]
            blocks[i] = "\n".join(kept).rstrip("\n") + '\npull = ["~"]\n\n'
    hosts.write_text("[[hosts]]".join(blocks))
    app = RgtApp(load_fleet(hosts), start_monitors=False, config_dir=tmp_path / "c")
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        app.jobs.request("box1", "pull", None)  # from the fleet screen: its tab not shown
        await wait_for(lambda: "box1: pull failed" in titles(app), 30, pilot=pilot)
        told = next(n for n in notices_of(app).items() if n.title == "box1: pull failed")
        assert "name box1's pull folders in the fleet file" in told.text, told.text
        assert "p tries again" not in told.text
