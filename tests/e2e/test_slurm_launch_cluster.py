"""A Slurm host's launch on a real one-node Slurm cluster (tests/support/slurm.py),
submitted over the product's transport from a loopback login node: the queue is one job
array, ``%max_parallel`` holds, ``--start`` and append submit only their cells, a
node-local durable dir is refused before anything is submitted, and a cell near its
walltime gets SIGTERM (recorded, passed on) and checkpoints before the kill."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.cli import arun
from support.queues import GATE, SCRIPT_RUN, QueueFleet, wait_view
from support.slurm import SlurmCluster
from support.waiting import wait_for

from rgt_tui.domain.queue_state import DONE, FINISHED, RUNNING
from rgt_tui.services.queue.backends import backend_for
from rgt_tui.services.queue.launch import QueueError
from rgt_tui.services.queue.slurm.launch import submit_indices


def ended(qf: QueueFleet, name: str) -> str | None:
    """The exit code of the last ``end`` record of cell ``name`` ("" none yet)."""
    ends = [ln.split()[2] for ln in qf.state(name).splitlines() if ln.startswith("end ")]
    return ends[-1] if ends else None


def slurm_jobs(qf: QueueFleet) -> list[list[str]]:
    path = qf.qdir() / "slurm.jobs"
    return [ln.split() for ln in path.read_text().splitlines()] if path.exists() else []


async def squeue(cluster: SlurmCluster, job: int) -> list[tuple[str, str, str]]:
    """(task id, state, reason) of every task of array ``job`` squeue lists."""
    rc, out, err = await cluster.arun("squeue", "-h", "-r", "-j", str(job), "-o", "%i|%T|%r")
    assert rc == 0, err
    return [tuple(ln.split("|", 2)) for ln in out.splitlines() if ln.strip()]  # type: ignore[misc]


async def test_an_array_of_four_runs_two_at_a_time_and_every_cell_ends_0(
    slurm_cluster: SlurmCluster, slurm_queue_fleet
):
    qf = await slurm_queue_fleet(1, run=SCRIPT_RUN, mem="100M", max_parallel=2)
    # Each cell counts the cells running beside it (a file each under running/), then
    # holds at the gate: with %2 two run and two wait, whatever the node could fit.
    body = (
        'mkdir -p "$HOME/running"; touch "$HOME/running/$1"; '
        'ls "$HOME/running" | wc -l > "$HOME/seen.$1"; '
        f'{GATE}; rm -f "$HOME/running/$1"'
    )
    lines = "".join(f"{qf.cell_script(f'arr{i}', body)} t 1\n" for i in range(4))
    qf.write_queue(lines)
    host, transport = qf.host(), qf.transport()
    plan = await backend_for(host).plan_launch(qf.fleet, transport)
    assert plan.ok, plan.problems
    assert plan.detach == "slurm" and plan.session == "rgt-box1"
    text = "\n".join(plan.notes)
    assert "--array=0-3%2" in text and "at most 2 at once" in text
    assert "mem 100M" in text and "durable dir" in text and "SIGTERM 300 s" in text
    assert (
        "preflight on the login node: disk, durable, code, crlf, syntax, signal-lead, partition only"
        in text
    )
    assert {c.name for c in plan.preflight.checks} <= {
        "disk", "durable", "code", "crlf", "syntax", "signal-lead", "partition",
    }  # fmt: skip
    result = await backend_for(host).launch(plan, transport)
    assert result.detach == "slurm" and result.pid > 0

    job = result.pid
    most = 0
    held: list[tuple[str, str, str]] = []

    async def two_run_two_wait() -> bool:
        nonlocal most
        tasks = await squeue(slurm_cluster, job)
        most = max(most, sum(t[1] == "RUNNING" for t in tasks))
        # Two running, the rest held by the array's own limit (not by the node).
        held[:] = tasks
        return sum(t[1] == "RUNNING" for t in tasks) == 2 and any(
            t[2] == "JobArrayTaskLimit" for t in tasks
        )

    await wait_for(two_run_two_wait, 60, "two tasks running, two held by %2", every=0.2)
    again = await backend_for(host).plan_launch(
        qf.fleet, transport
    )  # a second array would run them twice
    assert any(
        f"already submitted: array job {job} (" in p and f"scancel {job}" in p
        for p in again.problems
    ), again.problems
    (qf.root() / "go").touch()

    async def all_done() -> bool:
        nonlocal most
        tasks = await squeue(slurm_cluster, job)
        most = max(most, sum(t[1] == "RUNNING" for t in tasks))
        return all(ended(qf, f"arr{i}") is not None for i in range(4))

    await wait_for(all_done, 90, "every cell of the array to end", every=0.2)
    assert most == 2, held
    assert [ended(qf, f"arr{i}") for i in range(4)] == ["0", "0", "0", "0"]
    assert max(int((qf.root() / f"seen.arr{i}").read_text()) for i in range(4)) <= 2
    [record] = slurm_jobs(qf)
    assert record[0] == str(job) and record[1:3] == ["0", "3"] and record[4] == "launch"
    runner = (qf.qdir() / "runner.state").read_text().splitlines()
    assert re.fullmatch(
        rf"launch \d+ \S+ slurm 0 \S+/slurm_task\.[0-9a-f]{{12}}\.sh {job}", runner[-1]
    )
    # Each task's Slurm output under its cell's name, the cell's output in it.
    out = (qf.qdir() / "cells" / "arr2.slurm.out").read_text()
    assert "gate open" in out and f"array job {job} task 2" in out

    async def launchable() -> bool:  # the array is over: a launch may go again
        over = await backend_for(host).plan_launch(qf.fleet, transport)
        return not any("already submitted" in p for p in over.problems)

    await wait_for(launchable, 30, "the array to leave squeue")
    await transport.close()


async def test_start_2_submits_only_cells_2_and_3_and_an_appended_cell_runs_in_a_new_array(
    slurm_cluster: SlurmCluster, slurm_queue_fleet
):
    # From the command line, as a person runs it: `launch` and `queue append` are the
    # same commands as on any host.
    # A mirror (AutoDL-style): every task exports it, as on any host (~/.rgt/cell.env).
    mirror = "http://127.0.0.1:9/hf"
    qf = await slurm_queue_fleet(1, run=SCRIPT_RUN, mem="100M", max_parallel=2, hf_endpoint=mirror)
    hosts = str(qf.loopback.hosts_file)
    body = 'echo ran $1 "HF=$HF_ENDPOINT"'
    lines = "".join(f"{qf.cell_script(f'st{i}', body)} t 1\n" for i in range(4))
    qf.write_queue(lines)
    launched = await arun("launch", "box1", "--hosts", hosts, "--start", "2", "--yes")
    assert launched.returncode == 0, launched.stdout + launched.stderr
    assert "job array rgt-box1: --array=2-3%2" in launched.stdout
    assert (
        "limits: partition (cluster default)" in launched.stdout and "mem 100M" in launched.stdout
    )
    job = re.search(
        r"submitted on box1: array job (\d+) \(rgt-box1\), from cell 2", launched.stdout
    )
    assert job, launched.stdout
    await wait_for(lambda: ended(qf, "st2") and ended(qf, "st3"), 60, "cells 2 and 3 to end")
    assert [ended(qf, f"st{i}") for i in range(4)] == [None, None, "0", "0"]
    assert qf.state("st0") == qf.state("st1") == ""  # never started
    assert len((qf.qdir() / "cells.tsv").read_text().splitlines()) == 4  # every cell sent
    assert f"HF={mirror}" in (qf.qdir() / "cells" / "st2.slurm.out").read_text()

    qf.append_queue(f"{qf.cell_script('st_new', 'echo appended $1')} t 1\n")
    appended = await arun("queue", "append", "box1", "--hosts", hosts)
    assert appended.returncode == 0, appended.stdout + appended.stderr
    assert "appended 1 cell" in appended.stdout and "--array=4%2" in appended.stdout
    await wait_for(lambda: ended(qf, "st_new"), 60, "the appended cell to end")
    assert ended(qf, "st_new") == "0"
    first, second = slurm_jobs(qf)
    assert first[0] == job.group(1) and first[1:3] == ["2", "3"] and first[4] == "launch"
    assert second[0] != first[0] and second[1:3] == ["4", "4"] and second[4] == "append"
    assert "appended st_new" in (qf.qdir() / "cells" / "st_new.slurm.out").read_text()

    # The retry path of queue control submits chosen cells already on the box.
    transport = qf.transport()
    retried = await submit_indices(qf.host(), transport, [0], kind="retry")
    await wait_for(lambda: ended(qf, "st0"), 60, "the resubmitted cell 0 to end")
    await transport.close()
    assert ended(qf, "st0") == "0" and slurm_jobs(qf)[-1] == [
        str(retried),
        "0",
        "0",
        slurm_jobs(qf)[-1][3],
        "retry",
    ]
    assert len((qf.qdir() / "cells.tsv").read_text().splitlines()) == 5  # nothing re-sent


@pytest.mark.parametrize("where", ["tmpdir", "tmp"])
async def test_a_durable_dir_on_node_local_storage_is_refused_before_anything_is_submitted(
    slurm_cluster: SlurmCluster, slurm_queue_fleet, tmp_path: Path, where: str
):
    qf = await slurm_queue_fleet(1, run=SCRIPT_RUN)
    node_tmp = tmp_path / "node-local"
    node_tmp.mkdir()
    qf.loopback.box("box1").extra_env["TMPDIR"] = str(node_tmp)  # the login node's $TMPDIR
    durable = node_tmp / "ckpt" if where == "tmpdir" else Path("/tmp/rgt-s2-ckpt")
    hosts = qf.loopback.hosts_file
    root = qf.root()
    hosts.write_text(
        hosts.read_text().replace(f'durable_dir = "{root}/results"', f'durable_dir = "{durable}"')
    )
    qf._fleet = None
    assert qf.host().durable_dir == str(durable)
    qf.write_queue(f"{qf.cell_script('local_ckpt', 'echo must not run')} t 1\n")
    host, transport = qf.host(), qf.transport()
    plan = await backend_for(host).plan_launch(qf.fleet, transport)
    [problem] = [p for p in plan.problems if "node-local" in p]
    rule = f"$TMPDIR ({node_tmp})" if where == "tmpdir" else "/tmp"
    assert f"durable_dir {durable} on box1 is under {rule}" in problem and "SLURM5" in problem
    # Said once (preflight's durable check is the same rule), and acknowledging that
    # check never lets it through: the launch's own refusal stays.
    acked = await backend_for(host).plan_launch(qf.fleet, transport, acks=("durable",))
    [still] = [p for p in acked.problems if "node-local" in p]
    assert not acked.ok and f"durable_dir {durable} on box1 is under {rule}" in still
    with pytest.raises(QueueError):
        await backend_for(host).launch(plan, transport)
    await transport.close()
    rc, out, _ = await slurm_cluster.arun("squeue", "-h", "-t", "all", "-o", "%i")
    assert rc == 0 and out.strip() == ""
    assert not (qf.qdir() / "slurm.jobs").exists()
    assert not (qf.qdir() / "cells.tsv").exists()


async def test_a_cell_near_its_walltime_gets_sigterm_and_checkpoints_before_the_kill(
    slurm_cluster: SlurmCluster, slurm_queue_fleet
):
    # time = 1 minute, the warning 58 s before it: due 2 s in, and Slurm may be up to
    # 60 s off (SLURM2) — the kill itself comes at 60 s (+ KillWait 5 s here).
    qf = await slurm_queue_fleet(1, run=SCRIPT_RUN, mem="100M", time="1", signal_lead_s=58)
    # The cell's own handler only sets a flag (SLURM1); the loop checkpoints, then exits.
    body = (
        'n=0; stop=0; trap "stop=1; n=\\$((n + 1))" TERM; mkdir -p "$2"; echo started; '
        'while [ "$stop" = 0 ]; do sleep 0.1; done; sleep 1; echo "$n" > "$2/terms"; '
        'echo step > "$2/ckpt.tmp" && mv "$2/ckpt.tmp" "$2/ckpt"; echo checkpointed; exit 0'
    )
    qf.write_queue(f"{qf.cell_script('near_wall', body)} t 1\n")
    host, transport = qf.host(), qf.transport()
    # A lead this short is the signal-lead check's refusal; this test acknowledges it.
    plan = await backend_for(host).plan_launch(qf.fleet, transport, acks=["signal-lead"])
    assert plan.ok, plan.problems
    assert any("up to 60 s late" in w and "SLURM2" in w for w in plan.warnings)
    await backend_for(host).launch(plan, transport)
    await transport.close()
    await wait_for(lambda: ended(qf, "near_wall"), 100, "the cell to checkpoint and end")
    state = qf.state("near_wall").splitlines()
    start = next(int(ln.split()[1]) for ln in state if ln.startswith("start "))
    signal = next(int(ln.split()[1]) for ln in state if ln.startswith("signal "))
    assert re.fullmatch(r"signal \d+ TERM", next(ln for ln in state if ln.startswith("signal ")))
    assert signal - start < 60  # ahead of the walltime
    assert ended(qf, "near_wall") == "0"
    # The warning (USR1 to the task script) reaches the cell as one TERM.
    assert (qf.root() / "results" / "near_wall" / "terms").read_text() == "1\n"
    assert (qf.root() / "results" / "near_wall" / "ckpt").read_text() == "step\n"
    assert "checkpointed" in (qf.qdir() / "cells" / "near_wall.log").read_text()


# A cell whose TERM handler prints, then notes the TERM in a file (the print first: a
# broken pipe there ends the handler), and whose loop checkpoints at its next safe point.
TERM_CELL = r"""
import os, signal, sys, time
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
stop = False
def on_term(signum, frame):
    global stop
    stop = True
    print("got SIGTERM, will checkpoint", flush=True)
    with open(os.path.join(out, "term_seen"), "a") as f:
        f.write("TERM\n")
signal.signal(signal.SIGTERM, on_term)
print("started", flush=True)
with open(os.path.join(out, "started.tmp"), "w") as f:
    f.write(str(os.getpid()))
os.replace(os.path.join(out, "started.tmp"), os.path.join(out, "started"))
while not stop:
    time.sleep(0.05)
time.sleep(1.0)  # the checkpoint's own time: a second TERM would land in it
with open(os.path.join(out, "ckpt.tmp"), "w") as f:
    f.write("step\n")
os.replace(os.path.join(out, "ckpt.tmp"), os.path.join(out, "ckpt"))
print("checkpointed", flush=True)
"""


def _handler_ready(qf: QueueFleet, out: Path) -> bool:
    starts = [ln.split() for ln in qf.state("term_ck").splitlines() if ln.startswith("start ")]
    try:
        mine = (out / "started").read_text()
    except OSError:
        return False
    return bool(starts) and starts[-1][-1] == mine


async def test_a_killed_cell_prints_and_checkpoints_in_its_term_handler_before_it_ends(
    slurm_cluster: SlurmCluster, slurm_queue_fleet
):
    # scancel (as a preemption) TERMs every process of the step, the log's writer too:
    # it must outlive the cell, or the handler's print is a broken pipe (ux-c #4).
    qf = await slurm_queue_fleet(1, run=SCRIPT_RUN, mem="100M")
    (qf.root() / "cells").mkdir(parents=True, exist_ok=True)
    (qf.root() / "cells" / "term_ck.py").write_text(TERM_CELL)
    body = 'exec python3 -S "$HOME/cells/term_ck.py" "$2"'
    qf.write_queue(f"{qf.cell_script('term_ck', body)} t 1\n")
    host, transport = qf.host(), qf.transport()
    out = qf.root() / "results" / "term_ck"
    try:
        plan = await backend_for(host).plan_launch(qf.fleet, transport)
        assert plan.ok, plan.problems
        await backend_for(host).launch(plan, transport)
        # Started with its handler in place: this attempt's (its pid is the last start
        # record's), not an earlier attempt's file if Slurm requeued the task meanwhile.
        await wait_for(lambda: _handler_ready(qf, out), 60, "the cell to start")
        killed = await backend_for(host).kill(transport, "term_ck")
        assert killed.ended
    finally:
        await transport.close()
    await wait_for(lambda: ended(qf, "term_ck") is not None, 30, "the cell's end record")
    log = (qf.qdir() / "cells" / "term_ck.log").read_text()
    assert "got SIGTERM, will checkpoint" in log and "checkpointed" in log, log
    # Once: scancel TERMs the cell itself; a second TERM from the task script could
    # land after the handler, as the interpreter exits, and end the cell with 143.
    assert (out / "term_seen").read_text() == "TERM\n"
    assert (out / "ckpt").read_text() == "step\n"
    assert ended(qf, "term_ck") == "0"


async def test_a_stopped_queue_names_its_held_tasks_and_reads_running_once_released(
    slurm_cluster: SlurmCluster, slurm_queue_fleet
):
    # ux-c #7: after a stop the held tasks never run by themselves; a launch is refused
    # naming them and the release, and once released no view says "stop requested".
    qf = await slurm_queue_fleet(1, run=SCRIPT_RUN, mem="100M", max_parallel=1)
    lines = "".join(f"{qf.cell_script(f'h{i}', GATE)} t 1\n" for i in range(3))
    qf.write_queue(lines)
    host, transport = qf.host(), qf.transport()
    try:
        plan = await backend_for(host).plan_launch(qf.fleet, transport)
        assert plan.ok, plan.problems
        job = (await backend_for(host).launch(plan, transport)).pid
        await wait_for(lambda: qf.state("h0") != "", 60, "cell h0 to start")
        stopped = await backend_for(host).stop(transport)
        assert sorted(stopped.held) == [f"{job}_1", f"{job}_2"], stopped
        # The stop record names what it held: the view lifts the stop once one ran, even
        # when the release and the runs fall within the stop's own second.
        stop_line = (qf.qdir() / "runner.state").read_text().splitlines()[-1].split()
        assert stop_line[0] == "stop" and sorted(stop_line[3:]) == sorted(stopped.held)
        again = await backend_for(host).plan_launch(qf.fleet, transport, start_index=1)
        [refusal] = [p for p in again.problems if "already submitted" in p]
        ids = f"{job}_1 {job}_2"
        assert f"held by a stop ({ids})" in refusal and f"scontrol release {ids}" in refusal
        view = await backend_for(host).read_view(transport)
        assert view.stop_requested
    finally:
        await transport.close()
    rc, _, err = await slurm_cluster.arun("scontrol", "release", *stopped.held)
    assert rc == 0, err
    (qf.root() / "go").touch()
    view = await wait_view(
        qf, lambda v: v.cells[1].status in (RUNNING, DONE), what="a released cell to run"
    )
    assert not view.stop_requested and "stop requested" not in view.summary()
    done = await wait_view(qf, lambda v: v.state == FINISHED, what="every cell to end")
    assert [c.status for c in done.cells] == [DONE, DONE, DONE] and done.stop_text() == ""


async def test_a_slurm_plan_names_every_credential_that_cannot_be_read(
    slurm_cluster: SlurmCluster, slurm_queue_fleet, tmp_path: Path, monkeypatch
):
    # As a box's plan: read before anything is submitted, all named at once.
    monkeypatch.delenv("RGT_TEST_NEVER_SET", raising=False)
    qf = await slurm_queue_fleet(1, run=SCRIPT_RUN)
    hosts = qf.loopback.hosts_file
    hosts.write_text(
        hosts.read_text() + "\n[hosts.credentials]\n"
        f'MY_SECRET = {{ env = "RGT_TEST_NEVER_SET" }}\n'
        f'TOKEN = {{ file = "{tmp_path / "no-such-token"}" }}\n'
    )
    qf._fleet = None
    qf.write_queue(f"{qf.cell_script('c0', 'echo must not run')} t 1\n")
    host, transport = qf.host(), qf.transport()
    try:
        plan = await backend_for(host).plan_launch(qf.fleet, transport)
    finally:
        await transport.close()
    said = [p for p in plan.problems if p.startswith("cannot read credential")]
    assert len(said) == 2 and not plan.ok, plan.problems
    assert any("MY_SECRET" in p for p in said) and any("TOKEN" in p for p in said)


async def test_a_wrong_partition_is_refused_by_the_plan_and_a_refused_sbatch_takes_its_cells_back(
    slurm_cluster: SlurmCluster, slurm_queue_fleet
):
    """Hour s22b #7: a partition the cluster lacks was caught only by sbatch, after the
    cells were sent; those lines then pinned the local file ("earlier lines … changed
    since they were sent … --fresh") when the user fixed a typo in them."""
    qf = await slurm_queue_fleet(1, run=SCRIPT_RUN, mem="100M", partition="gpu")
    hosts = qf.loopback.hosts_file
    qf.write_queue(f"{qf.cell_script('pa', 'echo ran $1')} t 1\n")
    wrong = await arun("launch", "box1", "--hosts", str(hosts), "--yes")
    said = " ".join(wrong.stdout.split())
    assert wrong.returncode == 1, wrong.stdout + wrong.stderr
    assert "box1's cluster has no partition gpu" in said, wrong.stdout
    assert "Its partitions: debug (the default)" in said
    assert f"set partition in {hosts}:" in said
    assert not (qf.qdir() / "cells.tsv").exists()  # refused before anything was sent
    # No acknowledgement settles it, and none is offered (hour s23c #8: "ACKNOWLEDGED",
    # then "launch anyway with --ack partition").
    acked = await arun("launch", "box1", "--hosts", str(hosts), "--yes", "--ack", "partition")
    assert acked.returncode == 1, acked.stdout + acked.stderr
    assert "ACKNOWLEDGED" not in acked.stdout and "--ack partition" not in acked.stdout
    assert "no acknowledgement changes this" in " ".join(acked.stdout.split())

    # A partition that exists, but a request sbatch refuses (more memory than any node).
    hosts.write_text(
        hosts.read_text().replace('partition = "gpu"', 'partition = "debug"')
        .replace('mem = "100M"', 'mem = "999999G"')
    )  # fmt: skip
    refused = await arun("launch", "box1", "--hosts", str(hosts), "--yes")
    assert refused.returncode != 0, refused.stdout + refused.stderr
    assert "nothing was submitted and the cells were taken back" in (
        refused.stdout + refused.stderr
    )
    assert not (qf.qdir() / "cells.tsv").exists() and not (qf.qdir() / "queue.txt").exists()

    # The typo fixed in the line that was sent for the refused array: not pinned.
    hosts.write_text(hosts.read_text().replace('mem = "999999G"', 'mem = "100M"'))
    qf.write_queue(f"{qf.cell_script('pb', 'echo ran $1')} t 1\n")
    again = await arun("launch", "box1", "--hosts", str(hosts), "--yes")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "since they were sent" not in again.stdout
    await wait_for(lambda: ended(qf, "pb"), 60, "the fixed cell to end")
    assert ended(qf, "pb") == "0"
