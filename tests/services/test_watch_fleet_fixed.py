"""``watch`` says when a fleet file it refused is fixed (ux-g 4): with its drivers on,
as ``rgt-tui watch`` runs, its console must not keep ending on "not applied"."""

from __future__ import annotations

import asyncio
from pathlib import Path

from support.waiting import wait_for

from rgt_tui.demo.loopback import LoopbackFleet
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.watch.watcher import Watcher


async def test_watch_says_a_refused_fleet_file_was_fixed(tmp_path: Path) -> None:
    async with LoopbackFleet(1, tmp_path / "fleet") as boxes:
        hosts = boxes.hosts_file
        good = hosts.read_text()
        lines: list[str] = []
        # Drivers on (the autostop is always made), as the command runs it.
        watcher = Watcher(load_fleet(hosts), report=lines.append, fleet_file_every_s=0.05)
        assert watcher.autostop is not None
        task = asyncio.create_task(watcher.run())
        try:
            await wait_for(lambda: (u := watcher.latest.get("box1")) and u.snapshot, 40)
            hosts.write_text(good + 'broken = "oops\n')
            await wait_for(lambda: any("not applied" in ln for ln in lines), 10, "the refusal")
            hosts.write_text(good)
            fixed = f"fleet file: {hosts} fixed and applied"
            await wait_for(lambda: fixed in lines, 10, "the fix told", show=lambda: str(lines))
            assert lines[-1] == fixed
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
