"""The queue view, `queue show`, the pane line and diagnose on a real Slurm cluster
(issue 32), through the product's transport to a loopback login node.

Arrays are submitted by hand with ``sbatch`` over the box's own session, in the
launch's box layout (cells.tsv, ``slurm.jobs``, runner.state's ``slurm`` launch line),
each task running the product's slurm_task.sh → run_one.sh, so the records and the
``cells/NAME.slurm.out`` link are the real ones. The test cluster enforces memory by
polling (``OverMemoryKill``): an over-memory task ends FAILED with slurmstepd's
``Exceeded job memory limit`` in its output, which must read as OUT_OF_MEMORY.
"""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path

import pytest
from support.cli import arun
from support.slurm import SlurmCluster
from support.waiting import wait_for

from rgt_tui.content.queue_text import queue_pane_line
from rgt_tui.domain.queue_state import (
    DONE,
    OUT_OF_MEMORY,
    PENDING,
    RUNNING,
    TIMEOUT,
    QueueView,
)
from rgt_tui.domain.slurm_vanished import WALLTIME
from rgt_tui.domain.vanished import OOM, YES
from rgt_tui.services.box_script import script_text
from rgt_tui.services.queue.view import diagnose_queue, read_queue_view
from rgt_tui.transport import Transport, open_transport

HOG = "python3 -c 'import time; a = bytearray(400 << 20); time.sleep(20)'"


def lay_out(home: Path, cells: list[tuple[str, str]]) -> Path:
    """cells.tsv, the runner scripts under ~/.rgt/bin and an (empty) slurm.jobs."""
    q = home / ".rgt" / "queue"
    for sub in ("cells", "slurm"):
        (q / sub).mkdir(parents=True, exist_ok=True)
    (q / "cells.tsv").write_text("".join(f"{k}\t{n}\t{c}\n" for k, (n, c) in enumerate(cells)))
    (q / "queue.txt").write_text("".join(f"{n}.yaml train 1\n" for n, _ in cells))
    bin_dir = home / ".rgt" / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for script in ("slurm_task.sh", "run_one.sh"):
        (bin_dir / script).write_text(script_text(script))
    (q / "runner.state").write_text(
        f"launch {int(time.time())} boot slurm 0 {bin_dir / 'slurm_task.sh'} 1\n"
    )
    return q


async def submit(t: Transport, home: Path, index: int, *options: str) -> str:
    """``sbatch`` cell ``index`` as a one-task array over the box's session (its HOME
    and SLURM_CONF); its line in slurm.jobs."""
    q, bin_dir = home / ".rgt" / "queue", home / ".rgt" / "bin"
    argv = [
        "sbatch", "--parsable", f"--array={index}", f"--output={q}/slurm/%A_%a.out",
        *options, str(bin_dir / "slurm_task.sh"), str(q), str(bin_dir / "run_one.sh"), str(home),
    ]  # fmt: skip
    result = await t.run(" ".join(map(shlex.quote, argv)), timeout=60)
    assert result.exit_status == 0, result.stderr
    job = result.stdout.strip().split(";")[0]
    with (q / "slurm.jobs").open("a") as f:
        f.write(f"{job} {index} {index} {int(time.time())} launch\n")
    return job


def shown(view: QueueView) -> str:
    return "\n".join(f"{c.index} {c.name} {c.status} {c.note}" for c in view.cells)


async def test_pending_running_completed_and_oom_read_from_the_scheduler(
    slurm_cluster: SlurmCluster, slurm_queue_fleet
) -> None:  # type: ignore[no-untyped-def]
    qf = await slurm_queue_fleet(1)
    home = qf.root()
    gate = home / "go"
    q = lay_out(
        home,
        [
            ("ok", "echo fine"),
            ("hog", HOG),
            ("busy", f'echo busy started; while [ ! -e "{gate}" ]; do sleep 0.2; done'),
            ("wide", "echo wide"),
        ],
    )
    host = qf.host()
    async with open_transport(host) as t:
        await t.connect()
        await submit(t, home, 0, "--mem=50M")
        hog = await submit(t, home, 1, "--mem=60M")
        await submit(t, home, 2, "--mem=50M", "--time=10")
        # Needs both CPUs while "busy" holds one: it waits, and Slurm says why.
        await submit(t, home, 3, "--mem=50M", "--cpus-per-task=2")

        async def settled() -> QueueView | None:
            view = await read_queue_view(host, t)
            ok, h, busy, wide = view.cells
            if (ok.status, h.status, busy.status) == (DONE, OUT_OF_MEMORY, RUNNING) and (
                wide.status == PENDING and "Resources" in wide.note
            ):
                return view
            return None

        view = await wait_for(settled, 90, "the scheduler's states in the queue view")
        ok, h, busy, wide = view.cells
        assert h.slurm is not None and h.slurm.job_id == f"{hog}_1"
        assert h.slurm.state == "FAILED" and h.slurm.source == "jobcomp"  # no sacct here
        assert "Exceeded job memory limit" in h.note
        assert busy.note.startswith(f"on {slurm_cluster.node} · ")
        assert busy.slurm is not None and busy.slurm.elapsed_s is not None
        assert busy.slurm.time_left_s is not None and busy.slurm.time_left_s <= 600
        assert wide.note == "waiting: Resources"
        assert view.state == "running" and view.runner_alive
        summary = view.summary()
        for part in ("1/4 done", "1 OUT_OF_MEMORY", "1 running", "1 pending (Resources)"):
            assert part in summary, summary
        assert view.cluster is not None
        assert "job-completion log" in view.cluster.accounting
        assert "debug" in view.cluster.partitions_text()

        pane = queue_pane_line(view)
        assert pane is not None
        first, *rest = pane.plain.split("\n")
        assert "1 running · 1 pending · 1 OUT_OF_MEMORY" in first, pane.plain
        assert rest[-1].startswith("cluster: your jobs: ") and "GPU telemetry" in rest[-1]

        view, diagnosis = await diagnose_queue(host, t)
        assert diagnosis.cause == OOM and diagnosis.subject == "cell 1 (hog)"
        assert {e.cause: e.verdict for e in diagnosis.evidence}[OOM] == YES
        assert "raise mem in hosts.toml" in diagnosis.next_step

    hosts = qf.loopback.hosts_file
    text = await arun("queue", "show", "box1", "--hosts", hosts)
    assert text.returncode == 0, text.stderr
    assert "OUT_OF_MEMORY" in text.stdout and "waiting: Resources" in text.stdout
    assert "cluster: your jobs:" in text.stdout
    as_json = await arun("queue", "show", "box1", "--json", "--hosts", hosts)
    data = json.loads(as_json.stdout)
    assert [c["status"] for c in data["cells"]] == [DONE, OUT_OF_MEMORY, RUNNING, PENDING]
    assert data["cells"][1]["slurm"]["oom"] is True and data["cluster"]["partitions"]
    told = await arun("diagnose", "box1", "--hosts", hosts)
    assert told.returncode == 1 and "OUT_OF_MEMORY" in told.stdout, told.stdout
    # Logs follow a cell's own log, written by run_one.sh inside the task: a running one too.
    log = await arun("logs", "box1", "busy", "--hosts", hosts)
    assert log.returncode == 0 and "busy started" in log.stdout, log.stdout + log.stderr
    # No cell named: a login node has no queue log, and says to name a cell (s35 Slurm
    # hour #5: it read "the queue has not been launched on this host").
    whole = await arun("logs", "box1", "--hosts", hosts)
    said = " ".join(whole.stderr.split())
    assert whole.returncode == 1 and "is a Slurm login node: its queue has no queue log" in said
    assert "rgt-tui logs box1 CELL" in said and "not been launched" not in said
    gate.touch()  # "busy" ends, "wide" runs
    assert (q / "cells" / "hog.slurm.out").exists()


@pytest.mark.timeout(300)  # Slurm's walltime is at least a minute, checked every ~30 s
async def test_a_task_past_its_time_reads_timeout_with_the_resume_index(
    slurm_cluster: SlurmCluster, slurm_queue_fleet
) -> None:  # type: ignore[no-untyped-def]
    qf = await slurm_queue_fleet(1, time="00:01:00")
    home = qf.root()
    lay_out(home, [("slow", "sleep 600")])
    host = qf.host()
    async with open_transport(host) as t:
        await t.connect()
        await submit(t, home, 0, "--mem=50M", "--time=1")

        async def running() -> bool:
            return (await read_queue_view(host, t)).cells[0].status == RUNNING

        await wait_for(running, 60, "the task running")

        async def timed_out() -> QueueView | None:
            view = await read_queue_view(host, t)
            return view if view.cells[0].status == TIMEOUT else None

        view = await wait_for(timed_out, 200, "TIMEOUT", every=2.0)
        assert view.state == "finished" and view.resume_index == 0
        assert view.cells[0].slurm is not None and view.cells[0].slurm.state == "TIMEOUT"
        _, diagnosis = await diagnose_queue(host, t)
    assert diagnosis.cause == WALLTIME, diagnosis
    assert "raise time in hosts.toml (now 00:01:00)" in diagnosis.next_step
    assert diagnosis.resume_index == 0
