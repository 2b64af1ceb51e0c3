"""The usage modal invites only what it will delete (issue 43.10d): a listed folder outside
the pull folders is marked NOT OFFERED with why, the last line names the offered entries,
and typing a listed but not offered path runs nothing (it used to be checked on the box
and refused). A loopback box on a tmpfs (support/disk_box)."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from support.disk_box import build_box
from support.disk_box import tmpfs as tmpfs  # noqa: F401  (the fixture)
from support.pilot import SIZE, make_app, text_of, wait_for
from support.pulls import host_of
from textual.widgets import Input, Static

from rgt_tui.screens.disk_usage import DiskUsageScreen
from rgt_tui.services.fleet.file import load_fleet


async def test_only_offered_entries_are_invited_and_a_not_offered_one_runs_nothing(
    make_loopback_fleet, tmp_path: Path, tmpfs: Path
) -> None:  # type: ignore[no-untyped-def]
    fleet = await make_loopback_fleet(1)
    paths = build_box(fleet.box("box1").root, tmpfs)
    results = str(tmpfs / "results")
    host = host_of(fleet, mounts=(str(tmpfs),), pull=(results,), durable_dir=results)
    fleet_cfg = dataclasses.replace(load_fleet(fleet.hosts_file), hosts=(host,))
    app = make_app(tmp_path, fleet=fleet_cfg, start_monitors=True, clock=time.time)
    async with app.run_test(size=SIZE) as pilot:
        app.open_host("box1")
        await pilot.pause()
        await pilot.press("u")

        def body() -> str:
            screen = app.screen
            if not isinstance(screen, DiskUsageScreen) or screen.audit is None:
                return ""
            return text_of(screen.query_one("#disk-body", Static))

        shown = await wait_for(lambda: "org/a" in body() and body(), what="the audit", pilot=pilot)
        lines = shown.splitlines()
        hog = next(line for line in lines if str(paths["hog"]) in line and "inodes" in line)
        assert "NOT OFFERED: outside the pull folders" in hog, shown
        model = next(line for line in lines if "org/a" in line)
        assert "NOT OFFERED" not in model, shown
        offer = lines[-1]
        assert offer.startswith("offered for deletion"), shown
        assert "org/a" in offer and str(paths["hog"]) not in offer, offer
        box = app.screen.query_one("#disk-input", Input)
        assert "offered" in box.placeholder and app.focused is box

        # Listed, not offered: refused here with why, nothing sent to the box.
        await pilot.press(*str(paths["hog"]), "enter")
        status = text_of(app.screen.query_one("#disk-status", Static))
        assert "is not offered: outside the pull folders" in status, status
        assert "checking" not in status and paths["hog"].exists()
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, DiskUsageScreen), pilot=pilot)
