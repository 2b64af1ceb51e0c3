"""The TUI's notifications get the health ``watch``'s get: an OOM kill while nothing
watched (the watch memory knows the boot and its OOM counter from before) is alerted on
the pane and remembered as told, as under ``rgt-tui watch``. Before the one fleet
runtime, the TUI's monitors started with a fresh health (the counter's first value its
baseline) and the tracker was given none: the kill was never told by the TUI."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path

from support.replay import ReplayMonitor
from support.samples import FROZEN, agent_sample
from support.waiting import wait_for

from rgt_tui.app import RgtApp
from rgt_tui.paths import journal_dir
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.watch.store import WatchStore, watch_dir

FLEET = """\
[fleet]
tui_notify = true

[[hosts]]
name = "box1"
ssh = "root@10.0.0.5:40022"
"""


async def test_an_oom_kill_while_nothing_watched_is_told_by_the_tui(tmp_path: Path) -> None:
    (tmp_path / "hosts.toml").write_text(FLEET)
    fleet = load_fleet(tmp_path / "hosts.toml")
    store = WatchStore(watch_dir(journal_dir(fleet.path)))
    boot = "boot-box1"  # agent_sample's boot id for box1
    store.update("box1", lambda m: replace(m, boot_id=boot, oom_boot=boot, oom_baseline=0))
    monitor = ReplayMonitor(fleet.host("box1"), lambda: FROZEN)
    app = RgtApp(
        fleet, monitors={"box1": monitor}, start_monitors=False, clock=lambda: FROZEN,
        config_dir=tmp_path / "config",
    )  # fmt: skip
    async with app.run_test(size=(120, 40)) as pilot:
        await asyncio.wait_for(monitor.started.wait(), 30)
        cgroup = agent_sample("box1")["cgroup"] | {"oom_kill": 1}
        update = monitor.sample(agent_sample("box1", cgroup=cgroup))
        await wait_for(lambda: app.latest.get("box1") is update, pilot=pilot)
        assert "cgroup.oom_kill" in {a.id for a in update.alerts}

        def remembered() -> bool:
            memory = json.loads(store.path("box1").read_text())
            return any(slot.startswith("cgroup.oom_kill|") for slot in memory["open"])

        await wait_for(remembered, what="the OOM kill remembered as told", pilot=pilot)


async def test_a_changed_reminder_period_holds_in_the_open_tui_at_once(tmp_path: Path) -> None:
    # As in `watch`: the fleet file applied again changes the reminder period now.
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        FLEET.replace("tui_notify = true\n", "tui_notify = true\nnotify_reminder_minutes = 60\n")
    )
    fleet = load_fleet(hosts)
    monitor = ReplayMonitor(fleet.host("box1"), lambda: FROZEN)
    app = RgtApp(
        fleet, monitors={"box1": monitor}, start_monitors=False, clock=lambda: FROZEN,
        config_dir=tmp_path / "config",
    )  # fmt: skip
    app.FLEET_FILE_EVERY_S = 0.05
    async with app.run_test(size=(120, 40)) as pilot:
        notify = app.tui_notify
        assert notify is not None and notify.events.tracker.reminder_s == 3600
        hosts.write_text(hosts.read_text().replace("= 60\n", "= 5\n"))
        await wait_for(lambda: notify.events.tracker.reminder_s == 300, pilot=pilot)
