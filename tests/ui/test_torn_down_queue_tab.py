"""A torn-down host's Queue tab says the box is no longer read, with the way back,
rather than "reading the queue…" forever: nothing polls a torn-down box."""

from __future__ import annotations

import time
from pathlib import Path

from support.pilot import SIZE, screen_text, wait_for

from rgt_tui.app import RgtApp
from rgt_tui.demo.loopback import LoopbackFleet
from rgt_tui.paths import journal_dir
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.journal import Journal, TeardownRecord


async def test_a_torn_down_hosts_queue_tab_says_it_is_not_read(
    tmp_path: Path, state_dir: Path
) -> None:
    queues = tmp_path / "queues"
    queues.mkdir()
    (queues / "box1.txt").write_text("configs/a.yaml cls 1\n")
    async with LoopbackFleet(1, tmp_path / "fleet", queue_dir=queues, run="true") as boxes:
        torn_at = float(int(time.time())) - 600
        record = TeardownRecord(torn_at, "true", 0, "", True)
        Journal(journal_dir(boxes.hosts_file)).add_teardown("box1", record)
        await boxes.box("box1").stop()  # gone, as a destroyed box is
        app = RgtApp(load_fleet(boxes.hosts_file), config_dir=tmp_path / "config")
        async with app.run_test(size=SIZE) as pilot:
            pane = app.fleet_screen.panes["box1"]
            await wait_for(lambda: pane.has_class("-torn-down"), pilot=pilot)
            app.open_host("box1")
            await wait_for(lambda: isinstance(app.screen, HostDetailScreen), pilot=pilot)
            assert isinstance(app.screen, HostDetailScreen)
            await pilot.press("7")  # the Queue tab
            when = time.strftime("%H:%M", time.localtime(torn_at))
            await wait_for(lambda: "was torn down at" in screen_text(app), pilot=pilot)
            text = screen_text(app)
            assert "reading the queue" not in text
            assert when in text and "r reads the box again" in text
