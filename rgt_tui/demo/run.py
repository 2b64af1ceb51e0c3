"""`rgt-tui demo`: start N loopback boxes and open the TUI on them.

The servers run in the app's own event loop (the app is run with ``run_async`` inside
``asyncio.run``), so there is no second process to leak: when the app exits — by ``q``,
by Ctrl-C as a key, or by SIGINT/SIGTERM/SIGHUP (a closed terminal) — the ``finally`` stops every box, which hangs
up on the agents, and removes the temporary directory.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

from rgt_tui.demo.loopback import LoopbackFleet

# Each demo box plays a rented one: its platform's profile and an hourly price (the header
# then shows what the fleet costs).
DEMO_COSTS = (("runpod", 2.49), ("vastai", 1.89), ("lambda", 2.99))


async def demo_main(boxes: int, *, theme: str | None = None) -> int:
    """Run the demo fleet and the app until the app exits; always stop the fleet."""
    # The demo's queues run on a tmux server of their own, stopped on exit, so no runner
    # outlives the demo (its boxes' folders are deleted then).
    tmux_dir = Path(tempfile.mkdtemp(prefix="rgt-demo-"))
    try:
        return await _run(boxes, theme, tmux_dir)
    finally:
        # Without TMUX in the environment, tmux addresses the server under TMUX_TMPDIR;
        # with it (the demo run inside tmux) it would kill the user's own server.
        env = {k: v for k, v in os.environ.items() if k != "TMUX"} | {"TMUX_TMPDIR": str(tmux_dir)}
        await asyncio.to_thread(
            subprocess.run, ["tmux", "kill-server"], capture_output=True, env=env
        )
        shutil.rmtree(tmux_dir, ignore_errors=True)


async def _run(boxes: int, theme: str | None, tmux_dir: Path) -> int:
    from rgt_tui.app import RgtApp
    from rgt_tui.domain.config import load_fleet

    fleet_of = LoopbackFleet(
        boxes, workload=True, tmux_tmpdir=tmux_dir, gpus=True, costs=DEMO_COSTS
    )
    async with fleet_of as loopback:
        fleet = await asyncio.to_thread(load_fleet, loopback.hosts_file)
        app = RgtApp(fleet, theme=theme)
        app.sub_title = (
            f"demo: {boxes} loopback box{'es' if boxes != 1 else ''} · "
            "GPUs replay a recorded H100 (no GPU here)"
        )
        loop = asyncio.get_running_loop()
        try:
            # SIGTERM, or SIGHUP from a closed terminal, would otherwise kill the process
            # before the boxes are stopped and their folders removed.
            loop.add_signal_handler(signal.SIGTERM, partial(app.exit, return_code=143))
            loop.add_signal_handler(signal.SIGHUP, partial(app.exit, return_code=129))
        except (NotImplementedError, RuntimeError):  # not on this platform / thread
            pass
        try:
            await app.run_async()
        finally:
            try:
                loop.remove_signal_handler(signal.SIGTERM)
                loop.remove_signal_handler(signal.SIGHUP)
            except (NotImplementedError, RuntimeError):
                pass
        return app.return_code or 0


def run_demo(boxes: int = 3, *, theme: str | None = None) -> int:
    """Entry point of `rgt-tui demo`; the exit status for the CLI."""
    try:
        return asyncio.run(demo_main(boxes, theme=theme))
    except KeyboardInterrupt:
        # asyncio.run already cancelled the app and ran the fleet's cleanup.
        return 130
    except OSError as exc:
        print(f"rgt-tui demo: cannot start the loopback boxes: {exc}", file=sys.stderr)
        return 1
