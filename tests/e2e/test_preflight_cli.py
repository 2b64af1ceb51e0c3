"""`rgt-tui preflight HOST` end to end over OpenSSH's sshd: a box whose PATH has no tmux
and no nvidia-smi; a failed check refuses (exit 1) until the fleet file acknowledges it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import rgt
from support.preflight_box import path_without_tmux
from support.sshd import INSTALL_HINT, SSHD, OpenSshServer


@pytest.fixture
def bare_box(tmp_path: Path):
    """A real sshd whose sessions get a PATH of the usual tools but no tmux (SetEnv)."""
    if not SSHD.exists():
        pytest.fail(f"{SSHD} is missing: {INSTALL_HINT}")
    tools = path_without_tmux(tmp_path / "bin")
    server = OpenSshServer(tmp_path / "openssh", config=(f"SetEnv PATH={tools}",))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_tmux_missing_fails_and_preflight_ack_lets_it_pass(bare_box):
    hosts = bare_box.hosts_file
    base = hosts.read_text() + f'run = "cd . && {sys.executable} train.py {{cfg}}"\n'
    hosts.write_text(base + 'preflight_ack = ["gpu"]\n')

    table = rgt("preflight", "real1", "--hosts", hosts)
    assert table.returncode == 1, table.stderr
    out = table.stdout
    # ux-d #5: what a launch does without tmux (setsid nohup), not a session it lacks.
    assert re.search(
        r"(?m)^  FAILED  tmux +tmux is missing: the queue will run under setsid nohup — it "
        r"survives a logout, but you cannot attach to it \(its log: rgt-tui logs real1 -f\)$",
        out,
    ), out
    assert "tmux session" not in out
    assert "fix: install tmux on the box: apt-get install -y tmux" in out
    assert "acked   gpu" in out and "no GPU: nvidia-smi is not on the box's PATH" in out
    # ux-d #17: an acknowledged check shows no fix (the gpu one names the very
    # preflight_ack key that acknowledged it).
    assert 'preflight_ack = ["gpu"]' not in out, out
    assert "acknowledged by preflight_ack in the fleet file: gpu" in out
    assert "1 check failed: tmux" in out

    report = json.loads(rgt("preflight", "real1", "--hosts", hosts, "--json").stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert report["blocking"] == ["tmux"] and report["acknowledged"] == ["gpu"]
    assert report["ready"] is False  # tmux blocks: exit 1
    assert checks["torch"]["ok"] and "torch 2." in checks["torch"]["detail"]
    assert checks["python"]["detail"].endswith(f"from cd . && {sys.executable} (the run template)")
    # No driver and a CPU-only torch: nothing to compare (not run, never read as passed:
    # h523 #4), and nothing holds a GPU.
    assert checks["driver"]["ran"] is False and checks["arch"]["ran"] is False
    assert checks["gpu-busy"]["ok"] and checks["gpu-busy"]["ran"]
    # The durable dir's mount type as the mount table names it (ext4, xfs, overlay), not
    # stat -f's superblock family ("ext2/ext3" for an ext4 disk).
    durable = checks["durable"]["detail"]
    at = re.search(r"\(mount (\S+), ([^)]+)\)", durable)
    assert at is not None, durable
    df = subprocess.run(
        ["df", "--output=fstype", at.group(1)], capture_output=True, text=True, check=True
    )
    assert at.group(2) == df.stdout.split()[-1], durable

    hosts.write_text(base + 'preflight_ack = ["gpu", "tmux"]\n')
    acked = rgt("preflight", "real1", "--hosts", hosts)
    assert acked.returncode == 0, acked.stdout + acked.stderr
    assert (
        "ready: every check that ran passed or is acknowledged (not run: driver, arch, as "
        "their lines say)"
    ) in acked.stdout, acked.stdout
    as_json = json.loads(rgt("preflight", "real1", "--hosts", hosts, "--json").stdout)
    assert as_json["ready"] is True and as_json["ok"] is False  # acknowledged, not passed
