"""The agent's tracker check (U35) on real files: which lines count as the run line, how
much of a hostile log it reads, and what it reports through the real agent process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from rgt_tui.agent import agent_command, agent_source
from rgt_tui.agent.probe import tracker_scan
from rgt_tui.agent.probe.tracker_scan import TrackerScan
from rgt_tui.domain.config import TRACKER_PATTERNS

WANDB = TRACKER_PATTERNS["wandb"]
RUN_LINE = "wandb: 🚀 View run dainty-sun-3 at https://wandb.ai/me/proj/runs/abc123\n"


def test_the_wandb_run_line_is_seen_and_a_disabled_tracker_is_not(tmp_path):
    log = tmp_path / "cell.log"
    log.write_text("epoch 1\nwandb: Disabled WandB due to initialization error: No API key\n")
    scan = TrackerScan(WANDB)
    assert scan.poll(("c", 1.0), str(log)) is False  # read to its end: no run line
    with log.open("a") as f:
        f.write("step 2\r" + RUN_LINE)  # after a tqdm redraw, on the same "line"
    assert scan.poll(("c", 1.0), str(log)) is True
    assert scan.poll(("c", 1.0), str(log)) is True  # stays seen without reading again


def test_coloured_and_syncing_lines_count(tmp_path):
    log = tmp_path / "cell.log"
    log.write_bytes(b"\x1b[34m\x1b[1mwandb\x1b[0m: Syncing run \x1b[33mbright-moon-7\x1b[0m\n")
    assert TrackerScan(WANDB).poll(("c", 1.0), str(log)) is True


def test_a_new_attempt_or_a_truncated_log_is_read_afresh(tmp_path):
    log = tmp_path / "cell.log"
    log.write_text(RUN_LINE)
    scan = TrackerScan(WANDB)
    assert scan.poll(("c", 1.0), str(log)) is True
    log.write_text("retry: nothing yet\n")
    assert scan.poll(("c", 2.0), str(log)) is False  # a new attempt of the same cell
    log.write_text("x\n")  # shorter than what was read: replaced
    assert scan.poll(("c", 2.0), str(log)) is False and scan.offset == 2


def test_a_huge_line_is_cut_and_a_log_read_in_bounded_steps(tmp_path, monkeypatch):
    monkeypatch.setattr(tracker_scan, "TRACKER_READ_PER_SAMPLE", 1000)
    monkeypatch.setattr(tracker_scan, "TRACKER_SCAN_LIMIT", 5000)
    log = tmp_path / "cell.log"
    # The run line's text deep inside one enormous line is not a run line.
    log.write_bytes(b"x" * 4500 + RUN_LINE.encode() + b"y" * 2000)
    scan = TrackerScan(WANDB)
    seen = [scan.poll(("c", 1.0), str(log)) for _ in range(4)]
    assert seen == [None, None, None, None] and scan.offset == 4000  # 1000 bytes a look
    assert scan.poll(("c", 1.0), str(log)) is False  # the scan limit: given up, not found
    assert scan.offset == 5000  # the text 4,500 bytes into a line was never matched
    assert scan.poll(("c", 1.0), str(log)) is False and scan.offset == 5000  # nothing more read


def test_no_patterns_no_log_a_fifo_and_a_symlink(tmp_path):
    assert TrackerScan(()).poll(("c", 1.0), str(tmp_path / "x")) is None
    scan = TrackerScan(WANDB)
    assert scan.poll(("c", 1.0), str(tmp_path / "not-yet.log")) is None
    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    try:
        scan.poll(("c", 1.0), str(fifo))  # must raise, never block
        raise AssertionError("a FIFO was read")
    except OSError as exc:
        assert "not a regular file" in str(exc)
    target = tmp_path / "target"
    target.write_text(RUN_LINE)
    (tmp_path / "link.log").symlink_to(target)
    try:
        scan.poll(("c", 2.0), str(tmp_path / "link.log"))
        raise AssertionError("a symlinked log was followed")
    except OSError:
        pass


def test_the_agent_reports_the_cells_start_and_tracker_line(tmp_path):
    """The real agent process, over a queue whose running cell is this test's process."""
    qdir = tmp_path / "queue"
    (qdir / "cells").mkdir(parents=True)
    boot = tmp_path / "boot_id"
    boot.write_text("boot1\n")
    (qdir / "cells" / "c1.state").write_text(f"start 1700000000 boot1 {os.getpid()}\n")
    (qdir / "cells" / "c1.log").write_text("loading\n")

    def sample(patterns: tuple[str, ...]) -> dict:
        command = agent_command(
            [str(tmp_path)], 0.0, count=1, extra_args=["--no-gpu", "--queue-dir", str(qdir)],
            tracker_patterns=patterns,
        )  # fmt: skip
        out = subprocess.run(
            ["bash", "-c", command.replace("python3", sys.executable, 1)],
            input=agent_source(), capture_output=True, text=True, check=True, timeout=60,
            env={**os.environ, "RGT_BOOT_ID_FILE": str(boot)},
        )  # fmt: skip
        return json.loads(out.stdout.splitlines()[-1])

    off = sample(())
    assert off["cell"] == "c1" and off["cell_started"] == 1700000000
    assert off["tracker_seen"] is None  # no tracker checked
    assert sample(WANDB)["tracker_seen"] is False
    with (qdir / "cells" / "c1.log").open("a") as f:
        f.write(RUN_LINE)
    assert sample(WANDB)["tracker_seen"] is True
    bad = sample(("(unclosed",))
    assert any("tracker pattern" in e for e in bad["errors"])
