"""The agent says when the box's PID 1 started (issue 40): a container restarted on the
same host keeps the host's boot id, and only its own init's start tells the restart."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from rgt_tui.agent import agent_command, agent_source
from rgt_tui.agent.probe.host import read_container_start
from rgt_tui.domain.snapshot import snapshot_from_agent


def _proc(root: Path, btime: int, init_stat: str) -> Path:
    (root / "1").mkdir(parents=True)
    (root / "stat").write_text(f"cpu  1 2 3 4\nbtime {btime}\nprocesses 9\n")
    (root / "1" / "stat").write_text(init_stat)
    return root


def test_pid1_start_is_boot_time_plus_its_start_ticks(tmp_path: Path) -> None:
    ticks = os.sysconf("SC_CLK_TCK")
    # A command holding spaces and a ')' must not shift the fields.
    fields = " ".join(["S"] + ["0"] * 18 + [str(600 * ticks)] + ["0"] * 10)
    proc = _proc(tmp_path, 1_700_000_000, f"1 (my init) x) {fields}\n")
    assert read_container_start(str(proc)) == 1_700_000_600.0


def test_the_agent_sample_carries_it_and_the_snapshot_reads_it(tmp_path: Path) -> None:
    start = tmp_path / "container_start"
    start.write_text("1700000123\n")
    command = agent_command([str(tmp_path)], 0.0, count=1, extra_args=["--no-gpu"])
    out = subprocess.run(
        ["bash", "-c", command.replace("python3", sys.executable, 1)],
        input=agent_source(), capture_output=True, text=True, check=True, timeout=60,
        env={**os.environ, "RGT_CONTAINER_START_FILE": str(start)},
    )  # fmt: skip
    sample = json.loads(out.stdout.splitlines()[-1])
    assert sample["container_start"] == 1700000123
    assert snapshot_from_agent("box1", sample).container_start == 1700000123
    # Without the override: this machine's own PID 1, a time before now.
    env = {k: v for k, v in os.environ.items() if k != "RGT_CONTAINER_START_FILE"}
    out = subprocess.run(
        ["bash", "-c", command.replace("python3", sys.executable, 1)],
        input=agent_source(), capture_output=True, text=True, check=True, timeout=60, env=env,
    )  # fmt: skip
    real = json.loads(out.stdout.splitlines()[-1])["container_start"]
    assert isinstance(real, float) and 1e9 < real <= json.loads(out.stdout.splitlines()[-1])["t"]
