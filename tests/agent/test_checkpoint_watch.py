"""The agent sees the running cell's checkpoint writes (issue 40: work at risk): the newest
checkpoint, its size, the interval between writes and how long a write takes, from a real
folder a training script writes into, without walking the folder more than its scan."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from rgt_tui.agent import agent_command, agent_source
from rgt_tui.agent.probe.artifacts import ArtifactScanner
from rgt_tui.agent.probe.checkpoints import is_checkpoint as agent_is_checkpoint
from rgt_tui.domain.at_risk import cadence_seen
from rgt_tui.domain.checkpoints import is_checkpoint
from rgt_tui.domain.snapshot import snapshot_from_agent


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def write(path: Path, size: int, mtime: float) -> None:
    """What a training script leaves: ``size`` bytes, written at ``mtime``."""
    path.write_bytes(b"\0" * size)
    os.utime(path, (mtime, mtime))


def test_writes_are_seen_and_timed_between_walks(tmp_path: Path) -> None:
    out = tmp_path / "cell"
    out.mkdir()
    write(out / "step-100.pt", 100, 1000.0)  # kept checkpoints: their mtimes are writes
    write(out / "step-200.pt", 100, 1600.0)
    write(out / "metrics.json", 10, 1700.0)  # no checkpoint
    write(out / "checkpoint.pt.tmp", 10, 1999.0)  # a write under way: 10 bytes so far
    scanner = ArtifactScanner(str(out), every=3600.0)  # one walk: the rest by stat only
    watch = scanner.checkpoints
    watch.clock = clock = Clock(2000.0)

    def sample() -> dict:
        scanner.newest_mtime()
        return watch.sample()

    first = sample()
    assert first["name"] == "step-200.pt" and first["writing"] is True
    assert [w[0] for w in first["writes"]] == [1000.0, 1600.0]
    clock.t = 2005.0
    write(out / "checkpoint.pt.tmp", 60, 2005.0)  # 10 bytes/s: it began at ~1999
    assert sample()["writing"] is True
    write(out / "checkpoint.pt.tmp", 110, 2010.0)
    os.replace(out / "checkpoint.pt.tmp", out / "checkpoint.pt")  # the atomic rename
    clock.t = 2011.0
    got = sample()
    assert (got["name"], got["mtime"], got["size"], got["writing"]) == (
        "checkpoint.pt", 2010.0, 110, False
    )  # fmt: skip
    assert got["writes"][-1] == [2010.0, 11.0, 110]
    # The next write, between walks: the .tmp it learned is looked at each sample.
    clock.t = 2600.0
    write(out / "checkpoint.pt.tmp", 0, 2600.0)
    sample()
    write(out / "checkpoint.pt.tmp", 120, 2630.0)
    os.replace(out / "checkpoint.pt.tmp", out / "checkpoint.pt")
    clock.t = 2631.0
    got = sample()
    assert got["writes"][-1] == [2630.0, 30.0, 120]
    # Overwritten in place, no .tmp seen: a write, not timed.
    write(out / "checkpoint.pt", 130, 3200.0)
    got = sample()
    assert got["writes"][-1] == [3200.0, None, 130] and got["mtime"] == 3200.0
    assert scanner.last_scan is not None and len(got["writes"]) == 5

    snap = snapshot_from_agent("box1", {"v": 1, "t": 3300.0, "cell": "c", "ckpt": got})
    assert snap.checkpoints is not None and snap.checkpoints.name == "checkpoint.pt"
    found = cadence_seen(snap.checkpoints, 3 * 3600.0)
    assert found is not None and found.write_s == 20.5  # median of 11 and 30
    assert found.interval_s == 585.0  # median of 600, 410, 620, 570


def test_the_agent_sample_carries_them(tmp_path: Path) -> None:
    out = tmp_path / "cell"
    out.mkdir()
    write(out / "epoch1.ckpt", 2048, 1_700_000_000.0)
    write(out / "epoch2.ckpt", 4096, 1_700_000_600.0)
    write(out / "epoch2.json", 40, 1_700_000_601.0)  # a sidecar is no checkpoint
    command = agent_command(
        [str(tmp_path)], 0.0, count=1, extra_args=["--no-gpu", "--artifacts", str(out)]
    )
    done = subprocess.run(
        ["bash", "-c", command.replace("python3", sys.executable, 1)],
        input=agent_source(), capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    ckpt = json.loads(done.stdout.splitlines()[-1])["ckpt"]
    assert (ckpt["name"], ckpt["size"], ckpt["writing"]) == ("epoch2.ckpt", 4096, False)
    assert ckpt["writes"] == [[1_700_000_000.0, None, 2048], [1_700_000_600.0, None, 4096]]


def test_the_agent_rule_is_the_domain_rule() -> None:
    names = [
        "checkpoint.pt", "model.safetensors", "step-1200.pt", "epoch3.ckpt", "ckpt_iter800",
        "weights.pth", "latest.pt.tmp", "model.part", "checkpoint.json", "metrics.jsonl",
        "train.log", "notes.md", "data.bin", "my_checkpoint", "results.csv", "a.yaml",
    ]  # fmt: skip
    assert [agent_is_checkpoint(n) for n in names] == [is_checkpoint(n) for n in names]
