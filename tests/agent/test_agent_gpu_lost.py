"""The agent reports what a dead GPU looks like in a container (U22) and the cgroup's CPU
time (U24/U38): the real agent, run as the transport runs it (``python3 -u -``, source on
stdin), against a stand-in ``nvidia-smi`` that replays recorded output on its Nth call
(tests/fixtures/gpu, SOURCES.txt) and recorded cgroup trees (tests/fixtures/cgroup_*)."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from support import FIXTURES
from support.gpu_sequence import GPU_FIXTURES, gpu_rows

from rgt_tui.agent import agent_source
from rgt_tui.agent.probe import gpu_smi
from rgt_tui.domain.health import HealthContext, HealthState, evaluate
from rgt_tui.domain.snapshot import snapshot_from_agent

PYTHON3 = shutil.which("python3") or sys.executable
ECC = gpu_smi.SMI_GPU_FIELDS.index("ecc.errors.uncorrected.volatile.total")


def run_agent(tmp_path: Path, *args: str) -> list[dict]:
    """The agent's JSON lines, with its own home (it writes ~/.rgt/box-id)."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    command = [PYTHON3, "-u", "-", *args, "--mount", str(tmp_path), "--no-box-id"]
    proc = subprocess.run(
        command,
        input=agent_source(),
        capture_output=True,
        text=True,
        timeout=60,
        env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def replay(folder: Path, outputs: list[tuple[str, int]]) -> Path:
    """A stand-in nvidia-smi whose Nth --query-gpu call prints outputs[N] (text, exit
    status); the last one from then on. The exit status of a lost GPU is not in the
    recordings: any non-zero one takes the same path in the agent."""
    folder.mkdir(parents=True, exist_ok=True)
    for n, (text, status) in enumerate(outputs):
        (folder / f"out.{n}").write_text(text)
        (folder / f"rc.{n}").write_text(str(status))
    q = shlex.quote(str(folder))
    last = len(outputs) - 1
    script = folder / "nvidia-smi"
    script.write_text(
        f"""#!/bin/sh
case "$*" in *--query-gpu=*) ;; *) exit 0 ;; esac
n=$(cat {q}/calls 2>/dev/null || echo 0)
echo $((n + 1)) > {q}/calls
[ -f {q}/out.$n ] || n={last}
cat {q}/out.$n
exit $(cat {q}/rc.$n)
"""
    )
    script.chmod(0o755)
    return script


def _edit(rows: str, index: int, value: str) -> str:
    cells = rows.strip().split(", ")
    cells[index] = value
    return ", ".join(cells) + "\n"


def agent_gpu_run(tmp_path: Path, outputs: list[tuple[str, int]]) -> list[dict]:
    smi = replay(tmp_path / "smi", outputs)
    count = str(len(outputs))
    return run_agent(
        tmp_path,
        *("--count", count, "--interval", "0.05", "--smi-every", "1", "--proc-every", "1000"),
        *("--nvidia-smi", str(smi), "--dev-root", str(tmp_path / "no-dev")),
    )


def test_agent_reports_the_recorded_lost_gpu_text_and_an_unreadable_kmsg(tmp_path):
    lost = (GPU_FIXTURES / "smi_gpu_lost.txt").read_text()
    lines = agent_gpu_run(tmp_path, [(gpu_rows("load"), 0), (lost, 15)])
    assert [line["kmsg_readable"] for line in lines] == [False, False]
    assert lines[0]["gpu_lost"] == []
    assert lines[1]["gpu_lost"] == [lost.strip()]
    assert lines[1]["gpus"] == [] and lines[1]["gpu_unavailable_reason"] == lost.strip()
    # Through the real reader and rules: the dead-GPU alert, with no Xid to go on.
    state = HealthState()
    for line in lines:
        snap = snapshot_from_agent("box", line)
        state = state.observe(snap)
    (alert,) = [a for a in evaluate(snap, state, HealthContext()) if a.id == "gpu.xid"]
    assert "GPU is lost" in alert.message and "re-rent" in alert.message


def test_agent_reports_rising_ecc_and_a_vanished_gpu(tmp_path):
    one = gpu_rows("load")
    two = one + _edit(_edit(one, 0, "1"), 2, "GPU-11111111-1111-1111-1111-111111111111")
    ecc = _edit(one, ECC, "2")
    lines = agent_gpu_run(tmp_path, [(two, 0), (one, 0), (ecc, 0)])
    assert [len(line["gpus"]) for line in lines] == [2, 1, 1]
    assert [line["gpus"][0]["ecc_volatile"] for line in lines] == [0, 0, 2]
    assert all(not g["lost"] for line in lines for g in line["gpus"])
    state = HealthState()
    for line in lines:
        snap = snapshot_from_agent("box", line)
        state = state.observe(snap)
    (alert,) = [a for a in evaluate(snap, state, HealthContext()) if a.id == "gpu.xid"]
    assert "1 of 2 GPUs gone" in alert.message and "ECC errors 0 → 2" in alert.message


def test_agent_reports_the_cgroup_cpu_time_v2_and_v1(tmp_path):
    for tree, usec in (("cgroup_v2_cpu", 954006842), ("cgroup_v1_cpu", 968447543)):
        roots = (
            "--sys-root",
            str(FIXTURES / tree / "sys"),
            "--proc-root",
            str(FIXTURES / tree / "proc"),
        )
        (line,) = run_agent(tmp_path, "--count", "1", "--no-gpu", *roots)
        assert line["cgroup"]["cpu_usage_usec"] == usec, tree
        assert line["cgroup"]["cpu_quota_vcpus"] == 2.0
        assert snapshot_from_agent("box", line).cgroup.cpu_usage_usec == usec
        assert line["errors"] == []
