"""The task script's signals, run as processes here (no Slurm): however a stop reaches a
Slurm task — the walltime's warning to the script alone, or a scancel's TERM to every
process of the step — the cell gets exactly one TERM, checkpoints, and the task ends 0.

A second TERM used to come from the script after a scancel, and could land after the
cell's handler, as its interpreter exited, ending a cell that had checkpointed with 143
(seen in CI on the cluster test)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

from support.waiting import wait_for

SCRIPTS = Path(__file__).resolve().parents[2] / "rgt_tui" / "scripts"

# Counts the TERMs it gets; after the first, a checkpoint's worth of time for any second.
CELL = r"""
import os, signal, sys, time
out = sys.argv[1]
terms = 0
def on_term(signum, frame):
    global terms
    terms += 1
signal.signal(signal.SIGTERM, on_term)
open(os.path.join(out, "ready"), "w").close()
while not terms:
    time.sleep(0.02)
time.sleep(0.5)
with open(os.path.join(out, "terms"), "w") as f:
    f.write(str(terms))
"""


def start_task(tmp_path: Path) -> tuple[subprocess.Popen[str], Path, Path]:
    qdir, out, home = tmp_path / "queue", tmp_path / "out", tmp_path / "home"
    for d in (qdir, out, home):
        d.mkdir()
    (tmp_path / "cell.py").write_text(CELL)
    cmd = f"exec {sys.executable} -S {tmp_path / 'cell.py'} {out}"
    (qdir / "cells.tsv").write_text(f"0\tsig\t{cmd}\n")
    env = {
        "PATH": os.environ["PATH"], "HOME": str(home), "SLURM_ARRAY_TASK_ID": "0",
        "RGT_CELL_ENV": str(tmp_path / "no-cell.env"),
    }  # fmt: skip
    task = subprocess.Popen(
        ["bash", str(SCRIPTS / "slurm_task.sh"), str(qdir), str(SCRIPTS / "run_one.sh"),
         str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        start_new_session=True,  # its own process group: the step a scancel signals
    )  # fmt: skip
    return task, qdir / "cells" / "sig.state", out


def finish(task: subprocess.Popen[str]) -> tuple[int, str]:
    output, _ = task.communicate(timeout=60)
    return task.returncode, output


async def test_the_walltime_warning_reaches_the_cell_as_one_term(tmp_path: Path):
    task, state, out = start_task(tmp_path)
    await wait_for(lambda: (out / "ready").exists(), 30, "the cell's handler")
    task.send_signal(signal.SIGUSR1)  # --signal=B:USR1: the task script alone
    code, output = finish(task)
    assert code == 0, output
    assert (out / "terms").read_text() == "1"
    records = state.read_text().splitlines()
    assert [r.split()[0] for r in records if r.split()[0] in ("signal", "end")] == ["signal", "end"]
    assert records[-1].split()[2] == "0"


async def test_a_warning_before_the_cell_started_reaches_it_once_it_has(tmp_path: Path):
    # Slurm may send the warning early (SLURM2): it waits for the cell instead of ending
    # the task script (USR1's default: -10) or being lost. The cell gets its TERM as soon
    # as its pid is recorded: before or after its handler is in place, which no script
    # can know — handled (it checkpoints, 0) or not (143), but the task ends either way
    # with the cell's own code, and the cell is not left to run to the walltime.
    task, state, out = start_task(tmp_path)
    assert task.stdout is not None
    assert "array job" in task.stdout.readline()  # the script runs; the cell not yet
    task.send_signal(signal.SIGUSR1)
    code, output = finish(task)
    assert code in (0, 143), output
    if code == 0:
        assert (out / "terms").read_text() == "1"
    records = [r.split() for r in state.read_text().splitlines()]
    assert [r[0] for r in records if r[0] in ("signal", "end")] == ["signal", "end"]
    assert records[-1][2] == str(code)


async def test_a_scancel_term_to_every_process_reaches_the_cell_once(tmp_path: Path):
    task, state, out = start_task(tmp_path)
    await wait_for(lambda: (out / "ready").exists(), 30, "the cell's handler")
    os.killpg(task.pid, signal.SIGTERM)  # scancel / preemption: the whole step
    code, output = finish(task)
    assert code == 0, output
    assert (out / "terms").read_text() == "1"
    assert any(
        r.startswith("signal ") and r.endswith(" TERM") for r in state.read_text().splitlines()
    )


def catches_usr1(pid: int) -> bool:
    """The shell's USR1 trap is in place: a USR1 before it would end the script."""
    status = Path(f"/proc/{pid}/status").read_text()
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) & (1 << (signal.SIGUSR1 - 1)))


def cell_started(state: Path) -> bool:
    """run_one.sh recorded the cell's pid: the script is past its own work, in `wait`."""
    return state.exists() and any(r.startswith("start ") for r in state.read_text().splitlines())


async def test_no_warning_is_lost_to_the_work_the_script_does_meanwhile(tmp_path: Path):
    # A warning can come while the script itself works (reads cells.tsv, counts records,
    # starts the cell). bash 5.2 lost a trap that came due while it expanded a `$(...)`:
    # "trap: line 2: unexpected EOF while looking for matching `)'", the cell never told
    # (seen in CI). Warnings every millisecond from the trap's first moment until the
    # cell's pid is recorded, ten times over: each one runs its trap. (Not on: bash runs
    # a trap within a trap, and hundreds a second while the cell's handlers run only
    # measure how deep bash's stack goes.)
    total = 0
    for attempt in range(10):
        run = tmp_path / str(attempt)
        run.mkdir()
        task, state, out = start_task(run)
        try:
            while not catches_usr1(task.pid):  # polled closely: the script starts its cell soon
                assert task.poll() is None, task.communicate()[0]
                await asyncio.sleep(0.0002)
            sent = 0
            while (not cell_started(state) or not sent) and task.poll() is None:
                task.send_signal(signal.SIGUSR1)  # at least one: the cell ends on its TERM
                sent += 1
                await asyncio.sleep(0.001)
            total += sent
            code, output = finish(task)
        finally:
            if task.poll() is None:  # a failure above: no cell left waiting for its TERM
                os.killpg(task.pid, signal.SIGKILL)
                task.communicate()
        assert "trap:" not in output, output
        assert code in (0, 143), output
        # A trap bash runs late, on a loaded machine, may record after the end record.
        records = [r.split()[0] for r in state.read_text().splitlines()]
        assert "signal" in records and "end" in records
    assert total >= 30, f"only {total} warnings in all: they hardly overlapped the script's work"


def _run_again(tmp_path: Path, state: str) -> tuple[int, str, bool]:
    """Task 0 run again (a requeue) over a cell whose records are ``state``: its exit,
    what it printed, and whether the cell ran."""
    qdir, home = tmp_path / "queue", tmp_path / "home"
    (qdir / "cells").mkdir(parents=True)
    home.mkdir()
    ran = tmp_path / "ran"
    (qdir / "cells.tsv").write_text(f"0\tck\ttouch {ran}\n")
    (qdir / "cells" / "ck.state").write_text(state)
    env = {
        "PATH": os.environ["PATH"], "HOME": str(home), "SLURM_ARRAY_TASK_ID": "0",
        "RGT_CELL_ENV": str(tmp_path / "no-cell.env"),
    }  # fmt: skip
    done = subprocess.run(
        ["bash", str(SCRIPTS / "slurm_task.sh"), str(qdir), str(SCRIPTS / "run_one.sh"),
         str(tmp_path)],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    return done.returncode, done.stdout, ran.exists()


def test_a_requeued_task_of_a_done_cell_does_not_run_it_but_resumes_one_it_signalled(
    tmp_path: Path,
) -> None:
    """h593 #4: a requeue ran a cell that had ended 0 again, over its results. Review
    h594 #2: one sent TERM that checkpointed and exited 0 (SLURM1) has not finished —
    its requeue (a preemption's) must run it, to resume."""
    rc, out, ran = _run_again(tmp_path / "done", "start 100 b 1\nend 160 0\n")
    assert (rc, ran) == (0, False) and "finished already (exit 0)" in out, out
    rc, out, ran = _run_again(tmp_path / "term", "start 100 b 1\nsignal 150 TERM\nend 160 0\n")
    assert ran and "finished already" not in out, out
    # Retried on purpose after it finished: runs.
    retried = "start 100 b 1\nend 160 0\nretry 170 user\n"
    assert _run_again(tmp_path / "retry", retried)[2]
