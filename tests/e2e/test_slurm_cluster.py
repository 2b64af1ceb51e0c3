"""The test Slurm cluster (tests/support/slurm.py) does what the Slurm tests rely on: an
array's ``%N`` limit holds, every task's end is in the job-completion log, a loopback
box's transport reaches the cluster, and a job over its ``--mem`` is killed by polling
(FAILED plus ``Exceeded job memory limit`` in its output, as issue 32 describes)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from support.queues import QueueFleet
from support.slurm import SlurmCluster
from support.waiting import wait_for


async def test_an_array_runs_at_most_its_limit_at_once_and_every_task_completes(
    slurm_cluster: SlurmCluster,
) -> None:
    job = slurm_cluster.sbatch(
        "--array=0-3%2", "--mem=100M", "--output=/dev/null", "--wrap", "sleep 2"
    )
    most = 0

    async def all_done() -> bool:
        nonlocal most
        code, out, err = await slurm_cluster.arun(
            "squeue", "-h", "-r", "-t", "all", "-j", job, "-o", "%i %T"
        )
        assert code == 0, err
        states = [line.split()[1] for line in out.splitlines() if line.strip()]
        most = max(most, states.count("RUNNING"))
        return len(states) == 4 and all(s == "COMPLETED" for s in states)

    await wait_for(all_done, timeout=60, what=f"array {job} to complete", every=0.1)
    assert most == 2  # the limit was reached, and never passed
    records = [r for r in slurm_cluster.jobcomp_records() if r.get("ArrayJobId") == job]
    assert sorted(r["ArrayTaskId"] for r in records) == ["0", "1", "2", "3"]
    assert {(r["JobState"], r["ExitCode"]) for r in records} == {("COMPLETED", "0:0")}


async def test_sbatch_over_a_loopback_box_transport_reaches_the_cluster(
    slurm_cluster: SlurmCluster, slurm_queue_fleet: Callable[..., Awaitable[QueueFleet]]
) -> None:
    qf = await slurm_queue_fleet(1, mem="100M", max_parallel=2)
    assert qf.host().slurm is not None and qf.host().slurm.max_parallel == 2
    transport = qf.transport()
    await transport.connect()
    try:
        result = await transport.run(
            "sbatch --parsable --array=0-1 --mem=100M -o 'out_%a.txt'"
            " --wrap 'echo task $SLURM_ARRAY_TASK_ID'",
            timeout=30,
        )
    finally:
        await transport.close()
    assert result.exit_status == 0, result.stderr
    job = result.stdout.strip()
    root = qf.root()

    def outputs() -> bool:
        done = slurm_cluster.tasks(job)
        return list(done.values()) == ["COMPLETED"] * 2 and all(
            (root / f"out_{i}.txt").exists() for i in (0, 1)
        )

    await wait_for(outputs, timeout=60, what=f"job {job} run from box1", every=0.1)
    # The job ran in the box's workdir (sbatch's default: where it was submitted).
    assert (root / "out_1.txt").read_text() == "task 1\n"


async def test_a_job_over_its_memory_is_killed_failed_with_exceeded_in_its_output(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    out = tmp_path / "oom.out"
    job = slurm_cluster.sbatch(
        "--mem=200M",
        f"--output={out}",
        "--wrap",
        'python3 -c "x = bytearray(700 * 2**20); import time; time.sleep(30)"',
    )

    def ended() -> dict[str, str] | None:
        return next((r for r in slurm_cluster.jobcomp_records() if r["JobId"] == job), None)

    record = await wait_for(ended, timeout=60, what=f"job {job} to end", every=0.1)
    # Polling enforcement (OverMemoryKill): FAILED, not OUT_OF_MEMORY (that needs cgroups).
    assert record["JobState"] == "FAILED"
    # squeue may still show the job COMPLETING (its epilog, the node's cleanup) when the
    # completion log is written: wait for that to end rather than read it once (a loaded
    # CI run read COMPLETING).
    await wait_for(
        lambda: slurm_cluster.tasks(job) == {job: "FAILED"},
        timeout=60,
        what=f"squeue to show job {job} FAILED",
        show=lambda: str(slurm_cluster.tasks(job)),
        every=0.1,
    )
    assert "Exceeded job memory limit" in out.read_text()
