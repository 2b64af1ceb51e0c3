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


async def test_an_emptied_fleet_file_is_refused_not_run_as_this_machine(tmp_path: Path) -> None:
    """An editor saving in place left the file empty a moment: it was applied as "this
    machine alone", every box removed and "still bills" told for each, to no one (s37
    fleet hour #2). It is refused as a mistake; the boxes stay watched."""
    async with LoopbackFleet(1, tmp_path / "fleet") as boxes:
        hosts = boxes.hosts_file
        good = hosts.read_text()
        lines: list[str] = []
        watcher = Watcher(load_fleet(hosts), report=lines.append, fleet_file_every_s=0.05)
        task = asyncio.create_task(watcher.run())
        try:
            await wait_for(lambda: (u := watcher.latest.get("box1")) and u.snapshot, 40)
            hosts.write_text("")
            refused = "names no host now (saved half-way? every [[hosts]] block deleted?)"
            await wait_for(lambda: any(refused in ln for ln in lines), 10, "the refusal")
            assert any(
                ln.endswith("not applied; watching on the last good settings") for ln in lines
            )
            assert [h.name for h in watcher.runtime.fleet.hosts] == ["box1"], lines
            assert not any("removed box1" in ln or "added local" in ln for ln in lines), lines
            hosts.write_text(good)
            fixed = f"fleet file: {hosts} fixed and applied"
            await wait_for(lambda: fixed in lines, 10, "the fix told", show=lambda: str(lines))
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
