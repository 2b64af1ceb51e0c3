"""The queue view when slurmctld does not answer (s35 Slurm hour #4): the real
slurm_view.sh and Debian's own Slurm clients, against a cluster config whose controller
port has nothing listening (what a dead or unreachable slurmctld looks like to them; a
short MessageTimeout so the clients give up at once). Nothing the cluster says is known:
the queue's state reads unknown, no resume is offered (the records alone read a TIMEOUT
or an OOM as interrupted, and a relaunch from there would run done cells again), and the
job-completion log is unknown, not "not kept"."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from rgt_tui.domain.queue_records import CellAttempt, DeployedCell, parse_runner_state
from rgt_tui.domain.queue_state import DONE, derive_view
from rgt_tui.domain.slurm_queue import CLUSTER_UNKNOWN, slurm_view
from rgt_tui.services.box_script import script_text
from rgt_tui.services.queue.slurm.view import parse_slurm_view

DEAD = (
    "ClusterName=dead\nSlurmctldHost=localhost\nSlurmctldPort=1\nMessageTimeout=1\n"
    "TCPTimeout=1\nNodeName=n1 CPUs=1 State=UNKNOWN\nPartitionName=debug Nodes=n1 Default=YES\n"
)


def test_a_controller_that_does_not_answer_reads_unknown_and_offers_no_resume(tmp_path: Path):
    home = tmp_path / "home"
    q = home / ".rgt" / "queue"
    q.mkdir(parents=True)
    (q / "cells.tsv").write_text("0\ta\ttrue\n1\tb\ttrue\n2\tc\ttrue\n")
    (q / "slurm.jobs").write_text("5 0 2 1700000000 launch\n")
    conf = tmp_path / "slurm.conf"
    conf.write_text(DEAD)
    env = {"HOME": str(home), "SLURM_CONF": str(conf), "PATH": "/usr/bin:/bin:/usr/sbin"}
    out = subprocess.run(
        ["bash", "-c", script_text("slurm_view.sh"), "slurm_view"],
        env=env, capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    facts = parse_slurm_view(out)
    assert not facts.squeue_ok
    line = facts.cluster.line()
    assert "squeue failed" in line and "keeps no job-completion log" not in line
    assert "the job-completion log is unknown" in line

    # Cell a ended 0 by its records; b started and has no end (an OOM or a TIMEOUT, or
    # still running: unknown); c never started (cancelled, or waiting: unknown).
    now = int(time.time())
    deployed = tuple(DeployedCell(i, n, "true") for i, n in enumerate("abc"))
    launches = parse_runner_state(f"launch {now - 100} login slurm 0 /x/slurm_task.sh 5\n")
    attempts = {
        "a": (CellAttempt(now - 90, "node", 41, now - 80, 0),),
        "b": (CellAttempt(now - 70, "node", 42),),
    }
    records = derive_view(
        "hpc", deployed, launches, attempts, boot_id="login", now=now, runner_alive=False
    )
    view = slurm_view(records, facts.cells, facts.cluster, squeue_ok=facts.squeue_ok)
    assert view.state == CLUSTER_UNKNOWN and view.resume_index is None
    assert view.cells[0].status == DONE
    assert all("state on the cluster is unknown" in c.note for c in view.cells[1:])


def test_a_hung_controller_is_asked_once(tmp_path: Path, slurm_cluster):
    """h593 #5: the test cluster's slurmctld stopped (SIGSTOP: it takes connections and
    answers none). Each query after squeue's failure waited out its own timeout as well —
    70–85 s a poll — and the accounting read every task as gone. Now squeue's failure
    ends the view: one wait, the reason said, the job-completion log unknown."""
    import os
    import signal

    home = tmp_path / "home"
    q = home / ".rgt" / "queue"
    q.mkdir(parents=True)
    (q / "cells.tsv").write_text("0\ta\ttrue\n")
    (q / "slurm.jobs").write_text("5 0 0 1700000000 launch\n")
    pid = int((slurm_cluster.base / "slurmctld.pid").read_text().split()[0])
    env = {**slurm_cluster.client_env(), "HOME": str(home)}
    os.kill(pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        out = subprocess.run(
            ["bash", "-c", script_text("slurm_view.sh"), "slurm_view"],
            env=env, capture_output=True, text=True, timeout=300, check=True,
        ).stdout  # fmt: skip
        took = time.monotonic() - started
    finally:
        os.kill(pid, signal.SIGCONT)
    facts = parse_slurm_view(out)
    assert not facts.squeue_ok
    line = facts.cluster.line()
    assert "squeue failed: " in line and "squeue failed:  " not in line, line
    assert "the job-completion log is unknown" in line
    assert "acct\t" not in out and "part\t" not in out and "mine\t" not in out, out
    assert took < 25, f"{took:.0f} s: more than squeue's one wait"
