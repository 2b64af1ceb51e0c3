"""`rgt-tui demo`: start N loopback boxes and open the TUI on them.

The servers run in the app's own event loop (the app is run with ``run_async`` inside
``asyncio.run``), so there is no second process to leak: when the app exits — by ``q``,
by Ctrl-C as a key, or by SIGINT/SIGTERM/SIGHUP (a closed terminal) — the ``finally``
ends the queue it launched, stops every box, which hangs up on the agents, and removes
the temporary directory and the demo's journal (its records are its own, never the
user's fleets').

box1's queue is launched as the demo starts: its first cell is a training run whose
log goes quiet while it keeps checkpointing, which the app flags (``quiet_run``).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import tempfile
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from rgt_tui.demo.code_tree import share_code_tree
from rgt_tui.demo.destroy import destroy_command, stop_destroyed
from rgt_tui.demo.loopback import LoopbackFleet
from rgt_tui.demo.preflight import workload_problem
from rgt_tui.demo.quiet_run import launch_quiet_run, prepare_quiet_box, stop_quiet_run
from rgt_tui.paths import journal_dir

if TYPE_CHECKING:
    from rgt_tui.app import RgtApp

# Each demo box plays a rented one: its platform's profile and an hourly price (the header
# then shows what the fleet costs).
DEMO_COSTS = (("runpod", 2.49), ("vastai", 1.89), ("lambda", 2.99))


async def demo_main(boxes: int, *, theme: str | None = None) -> int:
    """Run the demo fleet and the app until the app exits; always stop the fleet."""
    # The demo's queues run on a tmux server of their own, stopped on exit, so no runner
    # outlives the demo (its boxes' folders are deleted then).
    tmux_dir = _tmux_folder()
    try:
        return await _run(boxes, theme, tmux_dir)
    finally:
        await _kill_tmux_server(tmux_dir)
        shutil.rmtree(tmux_dir, ignore_errors=True)


# A Unix socket's path holds at most ~104-108 bytes; tmux's is <folder>/tmux-UID/default.
SOCKET_FOLDER_MAX = 80


def _tmux_folder() -> Path:
    """A new folder for the demo's tmux server, under the temp dir when its socket path
    fits there, else under /tmp: a long TMPDIR (macOS's /var/folders/…, a nested test
    folder) made tmux fail with "File name too long" and box1's queue never started."""
    base = tempfile.gettempdir()
    if len(base) + len("/rgt-demo-12345678/tmux-4294967295/default") > SOCKET_FOLDER_MAX:
        base = "/tmp"
    return Path(tempfile.mkdtemp(prefix="rgt-demo-", dir=base))


async def _kill_tmux_server(tmux_dir: Path) -> None:
    """Stop the demo's own tmux server, and with it every queue run in it."""
    if shutil.which("tmux") is None:
        return  # no tmux: the demo's runs were started with nohup (stop_quiet_run)
    # Without TMUX in the environment, tmux addresses the server under TMUX_TMPDIR;
    # with it (the demo run inside tmux) it would kill the user's own server.
    env = {k: v for k, v in os.environ.items() if k != "TMUX"} | {"TMUX_TMPDIR": str(tmux_dir)}
    await asyncio.to_thread(subprocess.run, ["tmux", "kill-server"], capture_output=True, env=env)


async def _run(boxes: int, theme: str | None, tmux_dir: Path) -> int:
    from rgt_tui.app import RgtApp
    from rgt_tui.services.fleet.file import load_fleet

    fleet_of = LoopbackFleet(
        boxes, workload=True, tmux_tmpdir=tmux_dir, gpus=True, costs=DEMO_COSTS
    )
    # In the demo's folder (the one it prints), made as the boxes start; removed with it.
    fleet_of.teardown = lambda box: destroy_command(_destroy_dir(fleet_of), box)
    async with fleet_of as loopback:
        destroy_dir = _destroy_dir(loopback)
        destroy_dir.mkdir(exist_ok=True)
        destroyer = asyncio.ensure_future(stop_destroyed(loopback, destroy_dir))
        # The demo's records are its own: its fleet file is new each run, so its journal
        # folder is too (paths.journal_dir), apart from the user's fleets' (their box1
        # is not the demo's) and from the last demo's (its boxes are gone): no "a new
        # box answers" for every box of a rerun. It goes with the demo's boxes.
        records = journal_dir(loopback.hosts_file)
        try:
            prepare_quiet_box(loopback)
            share_code_tree(loopback)
            fleet = await asyncio.to_thread(load_fleet, loopback.hosts_file)
            quiet = await launch_quiet_run(fleet)
            try:
                # Quitting the demo removes its boxes, and what was pulled with them.
                removes = (
                    f"the demo ends: its boxes, their queues and everything in "
                    f"{loopback.hosts_file.parent} (your edits there, the pulls) are deleted"
                )
                app = RgtApp(fleet, theme=theme, quit_removes=removes)
                return await _run_app(app, boxes)
            finally:
                # Before the boxes' folders are removed: a run still writing there could
                # leave a file behind the removal.
                stop_quiet_run(quiet)
                await _kill_tmux_server(tmux_dir)
        finally:
            destroyer.cancel()
            shutil.rmtree(records, ignore_errors=True)


def _destroy_dir(loopback: LoopbackFleet) -> Path:
    """Where the demo boxes' teardown command leaves its files (``demo/destroy.py``)."""
    assert loopback.base_dir is not None  # set as the fleet starts, before the file is written
    return loopback.base_dir / "destroyed"


async def _run_app(app: RgtApp, boxes: int) -> int:
    """Run the app until it exits, turning SIGTERM/SIGHUP into a clean exit."""
    # Where the demo's fleet file is: the CLI works on it too (a user's hour looked for
    # it to try `rgt-tui status` beside the TUI). As $RGT_HOSTS, so that the commands the
    # CLI suggests (`next: rgt-tui verify box1`) run on it as printed (hour s34 CLI #9).
    app.sub_title = (
        f"demo: {boxes} loopback box{'es' if boxes != 1 else ''} · "
        "GPUs replay a recorded H100 (no GPU here) · "
        f"the CLI on it: export RGT_HOSTS={app.fleet.path}"
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
        except (NotImplementedError, RuntimeError):  # none was added (see above)
            pass
    return app.return_code or 0


class DemoCannotStart(Exception):
    """The demo could not start: ``str()`` is what to print on stderr, the fix included.
    The command line turns it into its exit status (nothing here imports the command
    line, DESIGN, Layers)."""


def run_demo(boxes: int = 3, *, theme: str | None = None) -> int:
    """Entry point of `rgt-tui demo`: the app's return code when it ends; DemoCannotStart
    when the boxes cannot start, KeyboardInterrupt (Ctrl-C) after the fleet's cleanup."""
    # Before any box starts or the screen is taken: a demo whose every cell would die
    # for want of torch says so here, on the terminal, with the command that fixes it.
    from rgt_tui.terminal_check import terminal_problem

    problem = workload_problem() or terminal_problem("rgt-tui demo")
    if problem is not None:
        raise DemoCannotStart(problem)
    try:
        # Ctrl-C: asyncio.run cancels the app and runs the fleet's cleanup, then raises.
        return asyncio.run(demo_main(boxes, theme=theme))
    except OSError as exc:
        raise DemoCannotStart(f"rgt-tui demo: cannot start the loopback boxes: {exc}") from exc
