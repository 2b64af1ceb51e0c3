"""`rgt-tui preflight HOST` on a Slurm login node, end to end over OpenSSH's sshd: the
checks a launch plan runs there (disk, durable, code), never the GPU, driver, torch or
tmux of a node that runs no cell; the durable line speaks of the job, not a teardown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import rgt
from support.preflight_box import path_without_tmux
from support.sshd import INSTALL_HINT, SSHD, OpenSshServer


@pytest.fixture
def login_node(tmp_path: Path):
    """A real sshd as a Slurm login node: no GPU, no tmux on its sessions' PATH, and a
    ``$TMPDIR`` of its own (node-local storage a durable dir must not be under)."""
    if not SSHD.exists():
        pytest.fail(f"{SSHD} is missing: {INSTALL_HINT}")
    tools = path_without_tmux(tmp_path / "bin")
    node_tmp = tmp_path / "node-tmp"
    node_tmp.mkdir()
    server = OpenSshServer(tmp_path / "openssh", config=(f"SetEnv PATH={tools} TMPDIR={node_tmp}",))
    server.start()
    server.workdir.mkdir(exist_ok=True)
    # A Slurm host: its profile is then the cluster's (no profile key).
    text = server.hosts_file.read_text().replace('profile = "generic-ssh"\n', "")
    server.hosts_file.write_text(text + 'scheduler = "slurm"\n')
    try:
        yield server, node_tmp
    finally:
        server.stop()


def test_a_login_node_gets_the_launch_plans_checks_and_a_job_durable_line(login_node):
    server, node_tmp = login_node
    hosts = server.hosts_file

    done = rgt("preflight", "real1", "--hosts", hosts)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    checks = [line.split()[1] for line in out.splitlines()[1:] if line.startswith("  ok")]
    # No code key: the code check says the workdir every task starts in is there (the
    # note names it among the checks run: s35 Slurm hour #10).
    assert checks == ["disk", "durable", "code", "crlf", "syntax", "signal-lead", "partition"], out
    assert f"the workdir {server.workdir} is there (no code key to compare)" in out, out
    for other in ("gpu", "driver", "torch", "python", "tmux", "gpu-busy"):
        assert f"  {other} " not in out, out
    assert "Slurm login node" in out and "compute nodes" in out
    durable = next(line for line in out.splitlines() if "  durable  " in line)
    results = server.workdir / "results"
    assert f"results under {results} outlive the job" in durable, durable
    assert (
        "kept by Slurm cluster: shared FS ($HOME, /scratch)" in durable
        and f"not under $TMPDIR ({node_tmp})" in durable
    )
    assert "teardown" not in durable and ": -" not in durable, durable

    report = json.loads(rgt("preflight", "real1", "--hosts", hosts, "--json").stdout)
    assert [c["name"] for c in report["checks"]] == [
        "disk",
        "durable",
        "code",
        "crlf",
        "syntax",
        "signal-lead",
        "partition",  # no partition key here: passes, naming the cluster's default
    ]
    assert report["ok"] and report["blocking"] == []

    # A durable dir under the node's $TMPDIR is lost at the job's end: refused, by name.
    # So are a fixed node-local root outside the home, and "$TMPDIR" as text, which the
    # login shell would read as a folder of that name in the home: the launch's own rule,
    # whole (s35 Slurm hour #1: preflight said ready for what the launch then refused).
    without = hosts.read_text().replace(f'durable_dir = "{results}"\n', "", 1)
    for durable, said in (
        (f"{node_tmp}/ckpt", f"is under $TMPDIR ({node_tmp}): node-local storage"),
        ("/dev/shm/rgt-ckpt", "is under /dev/shm: node-local storage"),
        ("$TMPDIR/ckpt", "is under $TMPDIR: node-local storage"),
    ):
        hosts.write_text(without + f'durable_dir = "{durable}"\n')
        refused = rgt("preflight", "real1", "--hosts", hosts)
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert "1 check failed: durable" in refused.stdout
        assert "set durable_dir on the shared filesystem ($HOME or /scratch/$USER)" in (
            refused.stdout
        )
        line = next(x for x in refused.stdout.splitlines() if "durable" in x and "FAILED" in x)
        assert f"durable_dir {durable} on real1 {said}" in line and "(SLURM5)" in line, line
