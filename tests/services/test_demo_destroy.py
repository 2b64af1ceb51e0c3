"""The demo's stand-in for a provider's destroy (``demo/destroy.py``): a demo box's
teardown command, run as any host's is, stops that box, so it goes silent as a destroyed
box does (the TUI refuses the name typed again while a box answers: hour s45a #2)."""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path

import asyncssh
from support.waiting import wait_for

from rgt_tui.demo.destroy import destroy_command, stop_destroyed
from rgt_tui.demo.loopback import LoopbackFleet
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.teardown.command import run_teardown_command


async def test_a_demo_boxs_teardown_command_stops_that_box_only(tmp_path: Path) -> None:
    destroy_dir = tmp_path / "destroyed"
    destroy_dir.mkdir()
    loopback = LoopbackFleet(2, tmp_path / "fleet")
    loopback.teardown = partial(destroy_command, destroy_dir)
    async with loopback:
        fleet = load_fleet(loopback.hosts_file)
        box1 = fleet.host("box1")
        assert box1.teardown == destroy_command(destroy_dir, "box1")
        stopper = asyncio.ensure_future(stop_destroyed(loopback, destroy_dir))

        async def answers(name: str) -> bool:
            try:
                async with loopback.connect(name) as conn:
                    return (await conn.run("true")).exit_status == 0
            except (OSError, asyncssh.Error):
                return False

        try:
            assert await answers("box1")
            ran = await run_teardown_command(box1.teardown, tmp_path, 30)
            assert ran.status == 0 and not ran.timed_out, ran.output

            async def box1_gone() -> bool:
                return not await answers("box1")

            await wait_for(box1_gone, 30, "box1 to stop answering")
            assert await answers("box2")  # the other box still runs
        finally:
            stopper.cancel()
