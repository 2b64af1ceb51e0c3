"""A requeued Slurm task is named as a preemption and resumes from its checkpoint in the
same output path (issue 40, SLURM1), on the real one-node test cluster.

The test cluster has no preemption configured (no PreemptType, one partition), so a
preemption with ``PreemptMode=REQUEUE`` is stood in for by what it does to the task:
``scontrol requeue <job>_<task>`` while it runs — Slurm TERMs the running task (then
KILLs it after KillWait), puts it back to pending with its restart count raised and its
submit time reset, and later runs the identical command again. Slurm holds a requeued
task back ~2 minutes (its BeginTime); the test then sets ``StartTime=now`` instead of
waiting that out. The cell follows the checkpoint recipe (tmp + fsync + rename, the
latest loaded on start, the loaded step printed)."""

from __future__ import annotations

import json

import pytest
from support.cli import arun
from support.queues import SCRIPT_RUN, wait_view
from support.resume_cell import cell_log, give_cell, loaded_steps
from support.slurm import SlurmCluster
from support.waiting import wait_for

from rgt_tui.domain.queue_state import DONE, FINISHED, PENDING, RUNNING
from rgt_tui.domain.slurm_vanished import PREEMPTION
from rgt_tui.services.queue.backends import backend_for
from rgt_tui.services.queue.view import diagnose_queue

STEPS = 8


@pytest.mark.timeout(300)
async def test_a_requeued_task_reads_preempted_and_resumes_from_its_checkpoint(
    slurm_cluster: SlurmCluster, slurm_queue_fleet
) -> None:
    qf = await slurm_queue_fleet(1, run=SCRIPT_RUN, mem="100M")
    line = give_cell(qf, "box1")
    (qf.root() / line).write_text(f'exec python3 -S "$HOME/cells/ck_train.py" "$2" {STEPS}\n')
    qf.write_queue(f"{line} t 1\n")
    host, transport = qf.host(), qf.transport()
    try:
        plan = await backend_for(host).plan_launch(qf.fleet, transport)
        assert plan.ok, plan.problems
        job = (await backend_for(host).launch(plan, transport)).pid
    finally:
        await transport.close()
    out = qf.root() / "results" / "ck"
    side = out / "checkpoint.json"

    def step() -> int:
        try:
            return json.loads(side.read_text())["step"]
        except (OSError, ValueError):
            return 0

    await wait_for(lambda: step() >= 2, 90, "two checkpoints of ck")
    rc, _, err = await slurm_cluster.arun("scontrol", "requeue", f"{job}_0")
    assert rc == 0, err
    task = f"{job}_0"

    # Pending again, its restart counted: named as a preemption, in the view and the CLI.
    view = await wait_view(
        qf,
        lambda v: v.cells[0].status == PENDING and "requeued" in v.cells[0].note,
        what="ck to read requeued",
    )
    note = view.cells[0].note
    assert note.startswith("preempted at ~") and (
        f"cell ck interrupted; requeued (Slurm restart 1, task {task})" in note
    ), note
    hosts = qf.loopback.hosts_file
    shown = await arun("queue", "show", "box1", "--hosts", hosts)
    assert shown.returncode == 0, shown.stderr
    assert "cell ck interrupted; requeued" in shown.stdout, shown.stdout
    transport = qf.transport()
    try:
        _, diagnosis = await diagnose_queue(host, transport)
    finally:
        await transport.close()
    assert diagnosis.cause == PREEMPTION and diagnosis.subject == "cell 0 (ck)"
    assert "preempted at ~" in diagnosis.summary and "requeued" in diagnosis.summary
    assert "same output path" in diagnosis.next_step
    told = await arun("diagnose", "box1", "--hosts", hosts)
    assert "cell ck interrupted; requeued" in told.stdout, told.stdout + told.stderr
    kept = step()  # the first run has ended (pending again): its last checkpoint
    assert kept >= 2

    # Slurm's ~2 minute hold on a requeued task, skipped: the identical command runs again.
    rc, _, err = await slurm_cluster.arun("scontrol", "update", f"JobId={task}", "StartTime=now")
    assert rc == 0, err
    running = await wait_view(
        qf, lambda v: v.cells[0].status == RUNNING, what="ck to run again", timeout=90
    )
    assert "requeued" in running.cells[0].note
    done = await wait_view(
        qf, lambda v: v.state == FINISHED, what="the requeued ck to finish", timeout=120
    )
    assert [(c.name, c.status) for c in done.cells] == [("ck", DONE)]
    log = cell_log(qf, "box1")
    loaded = loaded_steps(log)
    # The second run loaded the checkpoint the first one left in the same {out}.
    assert loaded == [kept] and kept > 0, log
    assert f"done at step {STEPS}" in log
    assert step() == STEPS
