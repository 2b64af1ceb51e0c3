"""Queue control and the teardown gate on a real Slurm cluster (issue 32), through the
product's transport to a loopback login node whose sessions reach the test cluster.

Arrays here are submitted in the launch's layout (``~/.rgt/queue/slurm.jobs``, cells.tsv,
runner.state's ``slurm`` launch line) with tasks that wait for a file of the test's, so
which task runs and when is the test's choice, never a sleep's.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from support.fleet_files import set_host_key
from support.gate_box import Setup
from support.queues import SCRIPT_RUN, wait_view
from support.slurm import NODE_CPUS, SlurmCluster
from support.waiting import wait_for

from rgt_tui.domain.queue_state import (
    CANCELLED,
    FAILED,
    FINISHED,
    Q_RUNNING,
    RETRY,
    USER_STOPPED,
)
from rgt_tui.services.box_ctl import QueueError
from rgt_tui.services.queue.backends import backend_for
from rgt_tui.services.queue.slurm.control import cancel_jobs
from rgt_tui.services.queue.slurm.launch import submit_indices
from rgt_tui.services.teardown import GateLocked
from rgt_tui.transport import open_transport

# A task waits for "go_<k>" beside the queue, then exits 0.
GATED = 'while [ ! -e "{gate}/go_$SLURM_ARRAY_TASK_ID" ]; do sleep 0.2; done'


async def squeue_states(cluster: SlurmCluster, job: str) -> dict[str, tuple[str, str]]:
    """Every task of ``job`` squeue still knows (finished ones too, for MinJobAge):
    task id → (state, reason)."""
    code, out, err = await cluster.arun(
        "squeue", "-h", "-r", "-t", "all", "-j", job, "-o", "%i %T %r"
    )
    assert code == 0, err
    return {f[0]: (f[1], f[2]) for line in out.splitlines() if len(f := line.split()) == 3}


async def submit_gated(cluster: SlurmCluster, home: Path, cells: int, parallel: int) -> str:
    """An array of ``cells`` gated tasks in the launch's box layout under ``home``."""
    q = home / ".rgt" / "queue"
    (q / "cells").mkdir(parents=True, exist_ok=True)
    (q / "cells.tsv").write_text("".join(f"{k}\tc{k}\ttrue\n" for k in range(cells)))
    (q / "queue.txt").write_text("".join(f"c{k}.yaml train 1\n" for k in range(cells)))
    code, out, err = await cluster.arun(
        "sbatch", "--parsable", f"--array=0-{cells - 1}%{parallel}", "--mem=50M",
        f"--output={q}/slurm-%A_%a.out", "--wrap", GATED.format(gate=q),
    )  # fmt: skip
    assert code == 0, err + cluster.log_tails()
    job = out.strip().split(";")[0]
    now = int(time.time())
    (q / "slurm.jobs").write_text(f"{job} 0 {cells - 1} {now} launch\n")
    (q / "runner.state").write_text(f"launch {now} boot slurm 0 /nonexistent {job}\n")
    return job


async def wait_state(cluster: SlurmCluster, task: str, state: str, reason: str = "") -> None:
    job = task.split("_")[0]

    async def there() -> bool:
        got = (await squeue_states(cluster, job)).get(task)
        return got is not None and got[0] == state and (not reason or got[1] == reason)

    def seen() -> str:  # where the job stood when the wait gave up
        out = cluster.run(
            "squeue", "-h", "-r", "-t", "all", "-j", job, "-o", "%i %T %r", check=False
        )
        return f"squeue:\n{out.stdout}{out.stderr}\n{cluster.log_tails(20)}"

    await wait_for(there, 60, f"Slurm task {task} {state} {reason}", show=seen)


# --- stop and kill ---------------------------------------------------------------------


async def test_stop_holds_the_pending_tasks_and_the_running_one_finishes(
    slurm_cluster: SlurmCluster, slurm_queue_fleet
) -> None:  # type: ignore[no-untyped-def]
    qf = await slurm_queue_fleet(1)
    job = await submit_gated(slurm_cluster, qf.root(), cells=4, parallel=1)
    await wait_state(slurm_cluster, f"{job}_0", "RUNNING")
    async with open_transport(qf.host()) as t:
        result = await backend_for(qf.host()).stop(t)
    assert sorted(result.held) == [f"{job}_1", f"{job}_2", f"{job}_3"]
    assert not result.already
    assert f"job {job}_0 RUNNING on {slurm_cluster.node}" in result.running
    stop = (qf.qdir() / "runner.state").read_text().splitlines()[-1].split()
    assert stop[0] == "stop" and stop[2] == "user" and sorted(stop[3:]) == sorted(result.held)
    (qf.qdir() / "go_0").touch()  # the running cell finishes
    await wait_state(slurm_cluster, f"{job}_0", "COMPLETED")
    states = await squeue_states(slurm_cluster, job)
    for k in (1, 2, 3):  # and nothing after it starts
        assert states[f"{job}_{k}"] == ("PENDING", "JobHeldUser"), states
    async with open_transport(qf.host()) as t:  # asked again: said so, nothing recorded twice
        again = await backend_for(qf.host()).stop(t)
    assert again.already
    assert (qf.qdir() / "runner.state").read_text().count("stop ") == 1
    held = " ".join(result.held)
    assert f"To go on: scontrol release {held} on the login node" in result.summary()
    view = await wait_view(qf, lambda v: v.state == USER_STOPPED, what="the stopped queue")

    # Released as the notice says: they run, and no view says "stop requested" any more.
    code, _, err = await slurm_cluster.arun("scontrol", "release", *result.held)
    assert code == 0, err
    await wait_state(slurm_cluster, f"{job}_1", "RUNNING")
    view = await wait_view(qf, lambda v: v.state == Q_RUNNING, what="the released queue")
    assert not view.stop_requested and "stop requested" not in view.summary()


async def test_kill_cancels_one_task_records_the_user_and_the_next_one_runs(
    slurm_cluster: SlurmCluster, slurm_queue_fleet
) -> None:  # type: ignore[no-untyped-def]
    qf = await slurm_queue_fleet(1)
    job = await submit_gated(slurm_cluster, qf.root(), cells=3, parallel=1)
    await wait_state(slurm_cluster, f"{job}_0", "RUNNING")
    async with open_transport(qf.host()) as t:
        result = await backend_for(qf.host()).kill(t, None, then="next")
    assert result.ended and result.task == f"{job}_0" and result.name == "c0"
    assert f"Slurm job {job}_0" in result.summary() or result.cell is not None
    assert (await squeue_states(slurm_cluster, job))[f"{job}_0"][0] == "CANCELLED"
    kill = qf.state("c0").splitlines()[-1].split()
    assert kill[0] == "kill" and kill[2:] == ["user", "next"]
    await wait_state(slurm_cluster, f"{job}_1", "RUNNING")  # the queue went on

    async with open_transport(qf.host()) as t:  # kill --then stop: the rest is held
        stopped = await backend_for(qf.host()).kill(t, "c1", then="stop")
    assert stopped.ended
    await wait_state(slurm_cluster, f"{job}_2", "PENDING", "JobHeldUser")
    assert qf.state("c1").splitlines()[-1].split()[2:] == ["user", "stop"]
    stop = (qf.qdir() / "runner.state").read_text().splitlines()[-1].split()
    assert stop[0] == "stop" and stop[2:] == ["kill", f"{job}_2"]  # the task it held
    async with open_transport(qf.host()) as t:  # nothing runs now: nothing to kill
        with pytest.raises(QueueError, match="nothing to kill"):
            await backend_for(qf.host()).kill(t, "c2")


async def test_the_command_line_kill_names_no_guess_when_two_cells_run(
    slurm_cluster: SlurmCluster, slurm_queue_fleet
) -> None:  # type: ignore[no-untyped-def]
    """A Slurm hour (s39 #6): with two cells running, `queue kill HOST` asked to kill one
    of them (the view's current), and --yes killed it unasked. It names both and wants
    the CELL; nothing is cancelled."""
    from support.cli import arun

    qf = await slurm_queue_fleet(1)
    job = await submit_gated(slurm_cluster, qf.root(), cells=3, parallel=2)
    await wait_state(slurm_cluster, f"{job}_0", "RUNNING")
    await wait_state(slurm_cluster, f"{job}_1", "RUNNING")
    try:
        killed = await arun(
            "queue", "kill", qf.host().name, "--yes", "--hosts", str(qf.loopback.hosts_file)
        )
        assert killed.returncode == 2, killed.stderr
        said = " ".join(killed.stderr.split())
        assert "2 cells are running (c0, c1): name the one to kill" in said, said
        assert f"rgt-tui queue kill {qf.host().name} CELL" in said
        states = await squeue_states(slurm_cluster, job)
        assert states[f"{job}_0"][0] == states[f"{job}_1"][0] == "RUNNING", states
    finally:
        for k in range(3):
            (qf.qdir() / f"go_{k}").touch()


async def test_logs_of_a_pending_cell_says_it_has_not_started_and_follow_waits(
    slurm_cluster: SlurmCluster, slurm_queue_fleet
) -> None:  # type: ignore[no-untyped-def]
    """A Slurm hour (s39 #5): `logs HOST CELL` of a pending task said "the queue has not
    been launched" (a login node has no runner's log, the proof it looked for), and -f
    ended at once. It says the cell has not started; -f waits for its log."""
    import asyncio
    import signal

    from support.cli import RGT, arun, cli_env

    qf = await slurm_queue_fleet(1)
    job = await submit_gated(slurm_cluster, qf.root(), cells=3, parallel=1)
    await wait_state(slurm_cluster, f"{job}_0", "RUNNING")
    name, hosts = qf.host().name, str(qf.loopback.hosts_file)
    try:
        once = await arun("logs", name, "c1", "--hosts", hosts)
        assert once.returncode == 1, once.stderr
        said = " ".join(once.stderr.split())
        assert "cell 'c1' has not started yet" in said, said
        assert "has not been launched" not in said
        proc = await asyncio.create_subprocess_exec(
            *RGT, "logs", name, "c1", "-f", "--poll", "0.2", "--hosts", hosts,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            stdin=asyncio.subprocess.DEVNULL, env=cli_env(),
        )  # fmt: skip
        assert proc.stderr is not None
        first = (await asyncio.wait_for(proc.stderr.readline(), 60)).decode()
        assert "cell 'c1' has not started yet; waiting for its log" in first, first
        assert proc.returncode is None  # waiting, not ended
        proc.send_signal(signal.SIGINT)
        await asyncio.wait_for(proc.wait(), 30)
        # Never launched: said so, naming the login node's record.
        (qf.qdir() / "slurm.jobs").rename(qf.qdir() / "slurm.jobs.aside")
        never = await arun("logs", name, "c1", "--hosts", hosts)
        assert "has no ~/.rgt/queue/slurm.jobs: the queue has not been launched" in (
            " ".join(never.stderr.split())
        ), never.stderr
        (qf.qdir() / "slurm.jobs.aside").rename(qf.qdir() / "slurm.jobs")
    finally:
        for k in range(3):
            (qf.qdir() / f"go_{k}").touch()


# --- retry and move --------------------------------------------------------------------


async def test_retry_resubmits_the_index_as_a_new_array_with_outputs_aside(
    slurm_cluster: SlurmCluster, slurm_queue_fleet
) -> None:  # type: ignore[no-untyped-def]
    qf = await slurm_queue_fleet(1, run=SCRIPT_RUN, mem="100M", max_parallel=2)
    flaky = qf.cell_script(
        "flaky",
        'mkdir -p "$2"; if [ -e "$HOME/fixed" ]; then echo second > "$2/result"; exit 0; fi; '
        'echo first > "$2/result"; exit 4',
    )
    steady = qf.cell_script("steady", 'mkdir -p "$2"; echo steady > "$2/result"')
    # The cells as a launch deploys them (cells.tsv), submitted by the launch's own submit:
    # the pytest folder is under /tmp, which a Slurm launch plan refuses as node-local.
    results = qf.root() / "results"
    qf.write_queue(f"{flaky} t\n{steady} t\n")
    (qf.qdir() / "cells").mkdir(parents=True)
    (qf.qdir() / "queue.txt").write_bytes(qf.queue_file().read_bytes())
    (qf.qdir() / "cells.tsv").write_text(
        f"0\tflaky\tbash {flaky} flaky {results}/flaky t 1\n"
        f"1\tsteady\tbash {steady} steady {results}/steady t 1\n"
    )
    host = qf.host()
    async with open_transport(host) as t:
        first = await submit_indices(host, t, [0, 1], kind="launch")

    def ended(cell: str, times: int = 1) -> bool:
        return [ln.split()[0] for ln in qf.state(cell).splitlines()].count("end") >= times

    await wait_for(lambda: ended("flaky") and ended("steady"), 60, "the first run")
    (qf.root() / "fixed").touch()
    async with open_transport(host) as t:
        refused = await backend_for(host).plan_retry(qf.fleet, t, ["steady"])
        assert any("needs --done" in p for p in refused.problems)
        plan = await backend_for(host).plan_retry(qf.fleet, t, ["flaky"])
        assert plan.ok and plan.submits == "Slurm", plan.problems
        result = await backend_for(host).retry(plan, t)
    assert result.job_id.isdigit() and result.job_id != str(first)
    jobs = (qf.qdir() / "slurm.jobs").read_text().splitlines()
    assert jobs[-1].split()[:3] == [result.job_id, "0", "0"] and jobs[-1].split()[4] == "retry"
    ((name, aside),) = result.aside
    out = str(qf.root() / "results" / "flaky")
    assert name == "flaky" and re.fullmatch(re.escape(out) + r"\.before-retry-\d{8}-\d{6}", aside)
    await wait_for(lambda: ended("flaky", 2), 60, "the retry to run")
    assert (Path(out) / "result").read_text() == "second\n"
    assert (Path(aside) / "result").read_text() == "first\n"  # set aside, intact
    assert [ln.split()[0] for ln in qf.state("flaky").splitlines()][-3:] == [
        "retry",
        "start",
        "end",
    ]
    assert [ln.split()[0] for ln in qf.state("steady").splitlines()].count("start") == 1
    # The new array holds cell 0 alone (its task may still be finishing after the end record).
    await wait_state(slurm_cluster, f"{result.job_id}_0", "COMPLETED")
    assert list(await squeue_states(slurm_cluster, result.job_id)) == [f"{result.job_id}_0"]


async def test_a_pending_retry_cancelled_reads_cancelled_not_retry_queued(
    slurm_cluster: SlurmCluster, slurm_queue_fleet
) -> None:  # type: ignore[no-untyped-def]
    """ux-c #9: a retry scancelled while still pending (teardown --cancel-jobs) never
    starts, so no record follows its ``retry`` line: Slurm's end state says it ended."""
    qf = await slurm_queue_fleet(1, run=SCRIPT_RUN, mem="100M")
    fails = qf.cell_script("fails", 'echo "boom"; exit 4')
    results = qf.root() / "results"
    qf.write_queue(f"{fails} t\n")
    (qf.qdir() / "cells").mkdir(parents=True)
    (qf.qdir() / "queue.txt").write_bytes(qf.queue_file().read_bytes())
    (qf.qdir() / "cells.tsv").write_text(f"0\tfails\tbash {fails} fails {results}/fails t 1\n")
    host = qf.host()
    async with open_transport(host) as t:
        await submit_indices(host, t, [0], kind="launch")
    await wait_view(qf, lambda v: v.cells[0].status == FAILED, what="the first run")
    # The node's CPUs taken: the retry waits (Resources) until the test lets them go.
    blocker = slurm_cluster.sbatch(
        "-c", str(NODE_CPUS), "--mem=50M", "--wrap", GATED.format(gate=qf.qdir())
    )
    await wait_state(slurm_cluster, blocker, "RUNNING")
    async with open_transport(host) as t:
        plan = await backend_for(host).plan_retry(qf.fleet, t, ["fails"])
        assert plan.ok, plan.problems
        retried = await backend_for(host).retry(plan, t, fleet=qf.fleet)
    task = f"{retried.job_id}_0"
    await wait_state(slurm_cluster, task, "PENDING")
    view = await wait_view(qf, lambda v: v.cells[0].status == RETRY, what="the retry queued")
    assert "waiting: " in view.cells[0].note, view.cells[0].note
    code, _, err = await slurm_cluster.arun("scancel", task)
    assert code == 0, err
    view = await wait_view(
        qf, lambda v: v.cells[0].status == CANCELLED, what="the cancelled retry to read CANCELLED"
    )
    cell = view.cells[0]
    assert cell.note.startswith("Slurm: CANCELLED before it started") and task in cell.note
    assert cell.exit_code is None and view.state == FINISHED


async def test_a_moved_cell_pending_in_slurm_is_cancelled_then_skipped(
    slurm_cluster: SlurmCluster, slurm_queue_fleet
) -> None:  # type: ignore[no-untyped-def]
    qf = await slurm_queue_fleet(1)
    job = await submit_gated(slurm_cluster, qf.root(), cells=2, parallel=1)
    await wait_state(slurm_cluster, f"{job}_0", "RUNNING")
    host = qf.host()
    async with open_transport(host) as t:
        with pytest.raises(QueueError, match=f"c0 has job {job}_0 RUNNING.*kill it first"):
            await backend_for(host).skip(t, "c0", "moved to box2")
        await backend_for(host).skip(t, "c1", "moved to box2")
    assert (await squeue_states(slurm_cluster, job))[f"{job}_1"][0] == "CANCELLED"
    assert qf.state("c1").splitlines()[-1].split(None, 2)[2] == "moved to box2"
    assert "skip" not in qf.state("c0")


# --- the teardown gate -------------------------------------------------------------------


def _condition(report, key: str):  # type: ignore[no-untyped-def]
    return next(c for c in report.conditions if c.key == key)


async def test_the_gate_stays_locked_while_a_job_is_live_and_unlocks_once_they_ended(
    slurm_cluster: SlurmCluster, make_loopback_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    setup = Setup(await make_loopback_fleet(1), tmp_path)
    setup.box.extra_env.update(slurm_cluster.env)
    set_host_key(setup.loopback.hosts_file, "scheduler", "slurm")
    await setup.pull_and_verify()
    job = await submit_gated(slurm_cluster, setup.box.root, cells=2, parallel=1)
    await wait_state(slurm_cluster, f"{job}_0", "RUNNING")

    report = await setup.check()
    jobs = _condition(report, "jobs")
    assert not jobs.ok and not report.ready_but_confirmation
    assert f"job {job}_0 RUNNING on {slurm_cluster.node}" in jobs.evidence
    assert f"job {job}_1 PENDING" in jobs.evidence
    with pytest.raises(GateLocked) as locked:
        await setup.confirm("box1")
    # The job started after the pull: the manifest is void on every check now (its line
    # first in the refusal), and the jobs line stays locked beside it.
    assert locked.value.report is not None
    assert f"{job}_0 RUNNING" in _condition(locked.value.report, "jobs").evidence
    assert not _condition(locked.value.report, "jobs").ok

    # scancel only after the host's name typed (the command line, as the fix says)
    wrong = await setup.cli("teardown", "box1", "--cancel-jobs", "box")
    assert wrong.returncode == 1 and "no job was cancelled" in wrong.stderr
    assert (await squeue_states(slurm_cluster, job))[f"{job}_0"][0] == "RUNNING"
    async with open_transport(setup.host) as t:
        with pytest.raises(PermissionError, match="no job was cancelled"):
            await cancel_jobs(setup.host, t, "box")
    done = await setup.cli("teardown", "box1", "--cancel-jobs", "box1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"scancel {job}_0" in done.stdout and f"scancel {job}_1" in done.stdout
    # The running cell's cancel is the user's kill, recorded as a kill is (s39 Slurm hour
    # #8: diagnose read it as someone else's scancel); the pending one never ran.
    cells = setup.box.root / ".rgt" / "queue" / "cells"
    kill = (cells / "c0.state").read_text().splitlines()[-1].split()
    assert kill[0] == "kill" and kill[2:] == ["user", "stop"], kill
    assert "kill" not in ((cells / "c1.state").read_text() if (cells / "c1.state").exists() else "")

    async def ended() -> bool:
        states = await squeue_states(slurm_cluster, job)
        return all(s in ("CANCELLED", "COMPLETED") for s, _ in states.values())

    await wait_for(ended, 60, "every task ended")
    report = await setup.check()
    assert _condition(report, "jobs").ok, report.conditions
    # Cancelled, their work is unfinished (issue 40): a line each until acknowledged.
    unfinished = [c for c in report.conditions if c.key == "unfinished"]
    assert [(c.ok, c.settle) for c in unfinished] == [(False, ("c0",)), (False, ("c1",))]
    assert all(" CANCELLED" in c.evidence for c in unfinished), unfinished
    acked = await setup.cli(
        "teardown", "box1", "--check", "--ack-unfinished", "c0", "--ack-unfinished", "c1"
    )
    assert acked.returncode == 0, acked.stdout + acked.stderr
    report = await setup.check()
    assert report.ready_but_confirmation, report.conditions
    outcome = await setup.confirm("box1")
    assert not outcome.ran  # nothing to run on a cluster
    assert "nothing to tear down on a cluster" in outcome.instructions
    assert outcome.report is not None and outcome.report.unlocked
    torn = await setup.cli("teardown", "box1", "--confirm", "box1")
    assert torn.returncode == 0, torn.stdout + torn.stderr
    out = torn.stdout
    assert "nothing to tear down on a cluster: every job of the queue ended" in out, out
    # ux-c #8, #17: a cluster is not destroyed: nothing is recorded as torn down (the
    # login node stays watched), and nothing says "by hand" or asks for a typed name
    # that --confirm gave.
    assert setup.journal.load("box1").torn_down_at is None
    assert "Nothing is recorded as torn down" in out and "by hand" not in out, out
    assert "given with --confirm" in out and "(none (" not in out, out
    destroyed = await setup.cli("teardown", "box1", "--destroyed", "box1")
    assert destroyed.returncode == 1 and "nothing is recorded" in destroyed.stderr
    assert setup.journal.load("box1").torn_down_at is None


async def test_a_failed_and_a_cancelled_task_lock_the_gate_until_acknowledged(
    slurm_cluster: SlurmCluster, make_loopback_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """Issue 40 on the cluster: task 0 exits 1 (FAILED), task 1 is scancelled; their
    results verified, yet each is an unfinished line the scheduler's states name."""
    setup = Setup(await make_loopback_fleet(1), tmp_path)
    setup.box.extra_env.update(slurm_cluster.env)
    set_host_key(setup.loopback.hosts_file, "scheduler", "slurm")
    await setup.pull_and_verify()
    q = setup.box.root / ".rgt" / "queue"
    (q / "cells").mkdir(parents=True, exist_ok=True)
    (q / "cells.tsv").write_text("0\tc0\ttrue\n1\tc1\ttrue\n")
    task = f'[ "$SLURM_ARRAY_TASK_ID" = 0 ] && exit 1; {GATED.format(gate=q)}'
    code, out, err = await slurm_cluster.arun(
        "sbatch", "--parsable", "--array=0-1", "--mem=50M",
        f"--output={q}/slurm-%A_%a.out", "--wrap", task,
    )  # fmt: skip
    assert code == 0, err + slurm_cluster.log_tails()
    job = out.strip().split(";")[0]
    now = int(time.time())
    (q / "slurm.jobs").write_text(f"{job} 0 1 {now} launch\n")
    (q / "runner.state").write_text(f"launch {now} boot slurm 0 /nonexistent {job}\n")
    await wait_state(slurm_cluster, f"{job}_0", "FAILED")
    await wait_state(slurm_cluster, f"{job}_1", "RUNNING")
    code, _, err = await slurm_cluster.arun("scancel", f"{job}_1")
    assert code == 0, err
    await wait_state(slurm_cluster, f"{job}_1", "CANCELLED")

    locked = await setup.cli("teardown", "box1", "--check")
    assert locked.returncode == 1, locked.stdout + locked.stderr
    lines = [x for x in locked.stdout.splitlines() if "[ ] unfinished" in x]
    assert len(lines) == 2 and "c0 failed" in lines[0] and "c1 CANCELLED" in lines[1], lines
    assert "--ack-unfinished c0" in locked.stdout and "--ack-unfinished c1" in locked.stdout
    one = await setup.cli("teardown", "box1", "--check", "--ack-unfinished", "c0")
    assert one.returncode == 1 and "locked: unfinished c1" in one.stdout, one.stdout
    both = await setup.cli("teardown", "box1", "--check", "--ack-unfinished", "c1")
    assert both.returncode == 0, both.stdout + both.stderr
