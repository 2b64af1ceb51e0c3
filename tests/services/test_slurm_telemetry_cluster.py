"""GPU telemetry from inside a running cell's allocation on a real Slurm cluster (issue
32): the product launches the queue as an array, and ``srun --overlap`` runs the agent
in the running task's allocation, on its node.

GPUs cannot exist here: the cluster's ``gpu`` GRES is a fake device file, so the login
node's sessions (whose environment the job and its steps inherit) have the stand-in
``nvidia-smi`` replaying a recorded H100 (rgt_tui/demo/gpu_replay) first on their PATH.
"""

from __future__ import annotations

import asyncio

import pytest
from support.queues import GATE, SCRIPT_RUN
from support.slurm import SlurmCluster
from support.waiting import wait_for

from rgt_tui.content.queue_text import queue_pane_line
from rgt_tui.demo.gpu_replay import install_nvidia_smi
from rgt_tui.domain.queue_state import RUNNING, QueueView
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.queue.backends import backend_for
from rgt_tui.services.queue.slurm.telemetry import AllocationTelemetry, sample_inside
from rgt_tui.services.queue.view import read_queue_view
from rgt_tui.services.runtime.queues import QueuePoller

H100_MIB = 81559  # the recording's memory.total


@pytest.mark.timeout(180)
async def test_a_running_cells_gpus_are_sampled_inside_its_allocation(
    slurm_cluster: SlurmCluster, slurm_queue_fleet
):  # type: ignore[no-untyped-def]
    qf = await slurm_queue_fleet(1, run=SCRIPT_RUN, mem="100M", gres="gpu:1")
    box = qf.loopback.boxes[0]
    box.extra_path.append(install_nvidia_smi(qf.loopback.base_dir / "box1.gpu").parent)
    qf.write_queue(f"{qf.cell_script('held', GATE)} t 1\n")
    host, transport = qf.host(), qf.transport()
    plan = await backend_for(host).plan_launch(qf.fleet, transport)
    assert plan.ok, plan.problems
    job = (await backend_for(host).launch(plan, transport)).pid

    async def running() -> QueueView | None:
        view = await read_queue_view(host, transport)
        return view if view.cells[0].status == RUNNING else None

    view = await wait_for(running, 60, "the cell running in its array task")
    try:
        inside = AllocationTelemetry()
        shown = await inside.annotate(host, transport, view)
        assert shown.cluster is not None
        note = shown.cluster.gpu_note
        assert note.startswith(f"GPU telemetry on {slurm_cluster.node} (inside job {job}_0, "), note
        assert "GPU0 NVIDIA H100 80GB HBM3" in note and "/80G" in note, note
        pane = queue_pane_line(shown)
        assert pane is not None and f"(inside job {job}_0" in pane.plain

        sample = await sample_inside(host, transport, f"{job}_0")
        assert sample.ok and sample.node == slurm_cluster.node, sample.error
        assert sample.snapshot is not None
        [gpu] = sample.snapshot.gpus
        assert gpu.name == "NVIDIA H100 80GB HBM3" and gpu.mem_total == H100_MIB << 20
        assert sample.snapshot.gpu_source != "none"
        # It ran as steps of the task's own job (srun --jobid takes its numeric id,
        # squeue's %A), launched by slurmd on the node: not on the login node.
        code, own, err = await slurm_cluster.arun(
            "squeue", "-h", "-r", "-j", f"{job}_0", "-o", "%A"
        )
        assert code == 0 and own.strip().isdigit(), err
        slurmd = (slurm_cluster.base / "slurmd.log").read_text(errors="replace")
        for step in (0, 1):
            assert f"launch task StepId={own.strip()}.{step} " in slurmd, slurmd[-2000:]

        # The app's queue poll carries the line to the pane (the fleet runtime's polls).
        seen: list[QueueView] = []
        poller = QueuePoller(
            FleetConnections([host], factory=lambda _: transport),
            on_view=lambda _, v: seen.append(v),
            is_live=lambda _: True,
            inside=AllocationTelemetry(),
        )
        polling = asyncio.create_task(poller.poll(host))
        try:
            await wait_for(lambda: bool(seen), 60, "the queue poller's first view")
        finally:
            polling.cancel()
        assert seen[0].cluster is not None
        assert f"(inside job {job}_0, " in seen[0].cluster.gpu_note, seen[0].cluster.gpu_note
    finally:
        (qf.root() / "go").touch()
    await transport.close()


@pytest.mark.timeout(120)
async def test_a_refused_step_says_why_in_srun_words(
    slurm_cluster: SlurmCluster, slurm_queue_fleet
):  # type: ignore[no-untyped-def]
    qf = await slurm_queue_fleet(1, run=SCRIPT_RUN, mem="100M")
    held = slurm_cluster.sbatch("--hold", "--array=0", "--mem=50M", "--output=/dev/null",
                                "--wrap", "true")  # fmt: skip
    host, transport = qf.host(), qf.transport()
    await transport.connect()
    pending = await sample_inside(host, transport, f"{held}_0", limit_s=20)
    assert not pending.ok
    assert "srun: error: Unable to confirm allocation" in pending.error, pending.error
    assert "Job is pending execution" in pending.error
    gone = await sample_inside(host, transport, "999999_0", limit_s=20)
    assert not gone.ok and "squeue" in gone.error, gone.error
    junk = await sample_inside(host, transport, "1;reboot", limit_s=20)
    assert not junk.ok and "not an array task id" in junk.error
    await transport.close()
