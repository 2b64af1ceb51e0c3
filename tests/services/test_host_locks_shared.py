"""One ``HostLocks`` per process, the fleet runtime's (issue 38): ``watch``'s periodic pull
and autostop, and the TUI's jobs and periodic pulls, all hold hosts by it, so an
autostop and a pull (or verify, teardown) of one host never run together. The autostop's
side over a real box is in test_autostop_box, the TUI's in tests/ui/test_tui_host_lock;
here, that ``watch`` hands both drivers the runtime's own lock."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from support.replay import ReplayMonitor
from support.samples import agent_sample, make_update

from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.watch.watcher import Watcher


async def test_watch_hands_its_drivers_the_runtimes_one_lock(make_loopback_fleet, tmp_path: Path):
    loopback = await make_loopback_fleet(1)
    fleet = dataclasses.replace(load_fleet(loopback.hosts_file), results_dir=tmp_path / "res")
    monitors = {"box1": ReplayMonitor(updates=[make_update("box1", agent_sample("box1"))])}
    watcher = Watcher(fleet, hosts=fleet.hosts, monitors=monitors)  # as `rgt-tui watch`
    try:
        assert watcher.pull is not None and watcher.autostop is not None
        assert watcher.pull.locks is watcher.runtime.locks
        assert watcher.autostop.locks is watcher.runtime.locks
    finally:
        await watcher.close()
