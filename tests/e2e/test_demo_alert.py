"""The demo's box that needs the user: box1's training run goes quiet in its log while
it keeps checkpointing, and the product flags it — from what the agent sees on the box,
with the demo's own settings (its fleet file, its launch, the agent's real cadence).

Once over loopback with the telemetry service (what is flagged, on which box, and the
files that make it true), once as a person sees it: `rgt-tui demo` in a real terminal.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from support.cli import RGT_TUI
from support.machine import kill_processes_under, kill_tmux_server
from support.telemetry import Watch, alert_ids
from support.tmux import Tmux
from support.waiting import wait_for

from rgt_tui.app import health_thresholds
from rgt_tui.demo.loopback import LoopbackFleet
from rgt_tui.demo.quiet_run import (
    DEMO_LOG_SILENT_MINUTES,
    QUIET_CELL,
    launch_quiet_run,
    prepare_quiet_box,
    quiet_cell_dir,
    stop_quiet_run,
)
from rgt_tui.demo.run import DEMO_COSTS
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.telemetry import HostMonitor
from rgt_tui.transport import transport_for

# The alert needs the demo up and its run silent for a while: each test's own 150 s wait
# is its cap, not the suite's 120 s per-test timeout (a busy machine would hit that first).
pytestmark = pytest.mark.timeout(300)


async def test_the_demo_flags_box1s_quiet_run_and_only_it(tmp_path: Path) -> None:
    tmux_dir = Path(tempfile.mkdtemp(prefix="rgtq-"))
    loopback = LoopbackFleet(
        2, tmp_path / "demo", workload=True, tmux_tmpdir=tmux_dir, gpus=True, costs=DEMO_COSTS
    )
    watches: list[Watch] = []
    result = None
    async with loopback:
        try:
            names = prepare_quiet_box(loopback)
            assert names[0] == f"box1_{QUIET_CELL.suffix}"
            fleet = load_fleet(loopback.hosts_file)
            assert fleet.thresholds.log_silent_minutes == DEMO_LOG_SILENT_MINUTES
            result = await launch_quiet_run(fleet)
            assert result is not None and result.host == "box1"
            for name in ("box1", "box2"):
                host = fleet.host(name)
                monitor = HostMonitor(
                    host,
                    transport_for(host),
                    interval=fleet.poll_seconds,
                    thresholds=health_thresholds(fleet),
                )
                watches.append(Watch(monitor))
            box1, box2 = watches
            flagged = await box1.until(
                lambda u: "log.silent" in alert_ids(u), 150, "log.silent on box1"
            )
            (alert,) = [a for a in flagged.alerts if a.id == "log.silent"]
            assert alert.subject == names[0] and alert.severity == "warning"
            assert flagged.snapshot is not None and flagged.snapshot.cell == names[0]
            # True on the box: the checkpoint keeps being rewritten, the log does not move.
            log = loopback.box("box1").root / ".rgt" / "queue" / "cells" / f"{names[0]}.log"
            checkpoint = quiet_cell_dir(loopback) / "checkpoint.pt"
            assert checkpoint.stat().st_mtime - log.stat().st_mtime >= 30
            text = log.read_text()
            assert "fresh start" in text and not re.search(r"^epoch \d", text, re.M)
            assert box2.updates and all("log.silent" not in alert_ids(u) for u in box2.updates)
        finally:
            for watch in watches:
                await watch.stop()
            stop_quiet_run(result)
            await asyncio.to_thread(kill_tmux_server, tmux_dir)
            kill_processes_under(loopback.base_dir or tmp_path)
            shutil.rmtree(tmux_dir, ignore_errors=True)


async def test_rgt_tui_demo_shows_the_quiet_run_on_screen(tmux: Tmux, tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {
        **os.environ,
        "TERM": "xterm-256color",
        "TMPDIR": str(scratch),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "TEXTUAL_ANIMATIONS": "none",
    }
    env.pop("TMUX", None)
    status_file = tmp_path / "exit-status"
    tmux.start(f"{RGT_TUI} demo --boxes 3; echo $? > {status_file}", env, tmp_path)
    await wait_for(
        lambda: "log silent" in tmux.screen(),
        150,
        "the demo to flag the quiet run",
        show=tmux.screen,
        every=0.3,
    )
    text = tmux.screen()
    assert len(re.findall(r"▲ U43\s+log silent", text)) == 1, text  # one box, one alert
    tmux.send("q")
    await wait_for(lambda: "Quit the demo?" in tmux.screen(), 60, "the quit question")
    tmux.send("q")  # q at the question quits
    await wait_for(
        lambda: status_file.exists() and status_file.read_text().strip() != "",
        60,
        "the demo to exit",
        every=0.3,
    )
    assert status_file.read_text().strip() == "0"
    assert not list(scratch.glob("rgt-demo-*")), "the demo's temporary directory was left behind"
