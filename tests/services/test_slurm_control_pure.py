"""Queue control and the teardown gate on a Slurm host: the pure parts (issue 32).

The command lines sent to the login node, the parsing of what it answers, and the gate's
``jobs`` condition. The same verbs on a real Slurm cluster: test_slurm_control_cluster.py.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from rgt_tui.domain import teardown_gate as g
from rgt_tui.domain.gate_fixes import fix
from rgt_tui.services.box_script import script_text
from rgt_tui.services.journal import Journal
from rgt_tui.services.queue.slurm.control import (
    cancel_args,
    ctl_command,
    hold_args,
    kill_args,
    parse_tasks,
)

TASKS = (
    "array\t12\t0\t3\tlaunch\n"
    "array\t15\t2\t2\tretry\n"
    "task\t12\t0\t12_0\tRUNNING\tNone\trgtnode1\n"
    "task\t12\t1\t12_1\tPENDING\tJobHeldUser\t\n"
    "task\t15\t2\t15_2\tPENDING\tPriority\t\n"
    "task\t12\t2\t12_2\tCOMPLETING\tNone\trgtnode1\n"
    "garbage line from a login banner\n"
    "task\t12\t3\t12_3; rm -rf ~\tPENDING\tx\t\n"  # not a job id: dropped
)


def test_ctl_command_sends_the_script_whole_and_quotes_every_argument() -> None:
    command = ctl_command("kill", "cell a'b", "12_0", "next")
    argv = shlex.split(command)
    assert argv[:2] == ["bash", "-c"]
    assert argv[2] == script_text("slurm_ctl.sh")
    assert argv[3:] == ["slurm_ctl", "kill", "cell a'b", "12_0", "next"]


def test_hold_holds_each_pending_task_and_records_a_user_stop() -> None:
    assert hold_args(["12_1", "15_2"]) == ("hold", "user", "12_1", "15_2")
    assert hold_args([]) == ("hold", "user")  # nothing pending: the stop is still recorded


def test_kill_cancels_one_task_and_with_stop_holds_the_pending_ones() -> None:
    assert kill_args("c0", "12_0", "next", ["12_1"]) == ("kill", "c0", "12_0", "next")
    assert kill_args("c0", "12_0", "stop", ["12_1", "15_2"]) == (
        "kill", "c0", "12_0", "stop", "12_1", "15_2",
    )  # fmt: skip
    with pytest.raises(ValueError, match="next or stop"):
        kill_args("c0", "12_0", "later")


@pytest.mark.parametrize("bad", ["12_0;reboot", "-1", "12_", "_3", "12_3_4", "", "12 13"])
def test_only_slurm_job_ids_reach_a_slurm_command(bad: str) -> None:
    for make in (
        lambda: hold_args([bad]),
        lambda: kill_args("c0", bad, "next"),
        lambda: kill_args("c0", "12_0", "stop", [bad]),
        lambda: cancel_args([bad], pending_only=False),
    ):
        with pytest.raises(ValueError, match="not a Slurm job id"):
            make()


def test_cancel_says_whether_only_pending_tasks_may_go() -> None:
    assert cancel_args(["15_2"], pending_only=True) == ("cancel", "pending", "15_2")
    assert cancel_args(["12_0", "12_1"], pending_only=False) == ("cancel", "any", "12_0", "12_1")
    with pytest.raises(ValueError, match="at least one"):
        cancel_args([], pending_only=False)


def test_parse_tasks_keeps_the_arrays_and_live_tasks_and_drops_the_rest() -> None:
    tasks = parse_tasks(TASKS)
    assert [(a.job_id, a.first, a.last, a.kind) for a in tasks.arrays] == [
        ("12", 0, 3, "launch"),
        ("15", 2, 2, "retry"),
    ]
    assert [t.task_id for t in tasks.tasks] == ["12_0", "12_1", "15_2", "12_2"]
    assert [t.task_id for t in tasks.pending()] == ["12_1", "15_2"]
    # Cell 2 has a task in the launch array and in the retry: the retry's is the live one.
    assert tasks.of_index(2).task_id == "15_2"  # type: ignore[union-attr]
    assert tasks.of_index(0).task_id == "12_0"  # type: ignore[union-attr]
    assert tasks.of_index(7) is None


def test_a_task_names_itself_as_the_gate_shows_it() -> None:
    by_id = {t.task_id: t.evidence() for t in parse_tasks(TASKS).tasks}
    assert by_id == {
        "12_0": "job 12_0 RUNNING on rgtnode1",
        "12_1": "job 12_1 PENDING (JobHeldUser)",
        "15_2": "job 15_2 PENDING (Priority)",
        "12_2": "job 12_2 COMPLETING on rgtnode1",
    }


# --- the gate ------------------------------------------------------------------------


def _jobs(state: g.GateState) -> g.Condition | None:
    return next((c for c in g.conditions(state) if c.key == "jobs"), None)


def test_a_host_that_is_not_slurm_has_no_jobs_condition() -> None:
    assert _jobs(g.GateState("box1")) is None


def test_the_gate_stays_locked_while_a_job_is_pending_or_running_naming_it() -> None:
    state = g.apply(
        g.GateState("hpc"),
        g.SlurmJobsSeen(("job 12_0 RUNNING on rgtnode1", "job 12_1 PENDING (JobHeldUser)")),
    )
    jobs = _jobs(state)
    assert jobs is not None and not jobs.ok
    assert "2 jobs not ended: job 12_0 RUNNING on rgtnode1; job 12_1 PENDING (JobHeldUser)" in (
        jobs.evidence
    )
    assert not g.is_unlocked(state)
    # The name is typed, never pasted from the hint (hour s22b #1: the hint's filled-in
    # line cancelled a running cell with nothing pulled).
    said = fix(jobs, "hpc", tui=False)
    assert "`rgt-tui teardown hpc --cancel-jobs HOSTNAME`, typing the host's name" in said
    assert "--cancel-jobs hpc" not in said and "loses its work" in said


def test_jobs_ended_holds_and_an_unread_queue_does_not() -> None:
    ended = _jobs(g.apply(g.GateState("hpc"), g.SlurmJobsSeen(())))
    assert ended is not None and ended.ok and "ended" in ended.evidence
    unread = _jobs(g.apply(g.GateState("hpc"), g.SlurmJobsSeen((), error="squeue failed: x")))
    assert unread is not None and not unread.ok
    assert "cannot read the cluster's queue: squeue failed" in unread.evidence
    # Its fix is to make squeue answer, not --cancel-jobs (which needs squeue too: s39
    # Slurm hour #10).
    said = fix(unread, "hpc", tui=False)
    assert "make squeue answer" in said and "--cancel-jobs" not in said, said
    assert "rgt-tui teardown hpc --check" in said


def test_a_new_manifest_keeps_what_squeue_said() -> None:
    state = g.apply(g.GateState("hpc"), g.SlurmJobsSeen(("job 12_0 RUNNING on n1",)))
    state = g.apply(state, g.ManifestTaken((), 1.0, 1.0))
    jobs = _jobs(state)
    assert jobs is not None and not jobs.ok and "12_0" in jobs.evidence


def test_the_journal_keeps_the_jobs_event(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    journal.record("hpc", 1.0, g.SlurmJobsSeen(("job 12_0 RUNNING on n1",), error=""))
    state = journal.load("hpc").gate()
    assert state.slurm_jobs == ("job 12_0 RUNNING on n1",)


def test_a_kill_of_a_pending_task_says_how_to_keep_it_from_starting() -> None:
    """`queue kill hpc extra` of a task still waiting said only "nothing to kill", with
    no way on (h531 #7): a pending task is held by a stop or moved, and that is said."""
    from rgt_tui.services.box_ctl import QueueError
    from rgt_tui.services.queue.slurm.control import _task_for

    tasks = parse_tasks(TASKS)
    with pytest.raises(QueueError) as pending:
        _task_for("hpc", tasks, {"a": 0, "my run": 2}, "my run")
    said = str(pending.value)
    assert "cell my run is not running (job 15_2 is PENDING): there is nothing to kill" in said
    assert "rgt-tui queue stop hpc holds the tasks not started" in said, said
    assert "rgt-tui queue move 'my run' --to HOST runs it elsewhere" in said
    with pytest.raises(QueueError) as gone:
        _task_for("hpc", tasks, {"a": 0, "old": 9}, "old")
    assert "no job of it is in Slurm's queue" in str(gone.value)
    assert "queue stop" not in str(gone.value)  # nothing left to hold


def test_a_pending_reason_keeps_its_spaces(tmp_path: Path) -> None:
    """h593 #6: the teardown `jobs` line read `PENDING (NodesrequiredforjobareDOWN,
    DRAINED…)`: slurm_ctl.sh took every space out of squeue's line. The real script, with
    a `squeue` on PATH that prints the line Slurm 22.05 printed for a drained node."""
    import os
    import subprocess

    (tmp_path / ".rgt" / "queue").mkdir(parents=True)
    (tmp_path / ".rgt" / "queue" / "slurm.jobs").write_text("7 0 1 1700000000 launch\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    reason = "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions"
    squeue = bin_dir / "squeue"
    squeue.write_text(f"#!/bin/sh\nprintf '%s\\n' '7|1|7_1|PENDING|{reason}|'\n")
    squeue.chmod(0o755)
    env = {**os.environ, "HOME": str(tmp_path), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    out = subprocess.run(
        ["bash", "-c", script_text("slurm_ctl.sh"), "slurm_ctl", "tasks"],
        env=env, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    (task,) = parse_tasks(out).tasks
    assert task.reason == reason, out
