"""The scheduler's words, parsed: squeue, sacct and job-completion lines as Slurm 22.05
prints them (recorded on the test cluster), hostile lines, and the merge of a Slurm
host's tasks into its queue view and diagnosis (issue 32)."""

from __future__ import annotations

from rgt_tui.domain.queue_records import (
    CellAttempt,
    CellMarks,
    DeployedCell,
    RunnerLaunch,
    parse_cell_state,
    parse_runner_state,
)
from rgt_tui.domain.queue_state import (
    CANCELLED,
    DONE,
    FAILED,
    FINISHED,
    INTERRUPTED,
    OUT_OF_MEMORY,
    PENDING,
    Q_RUNNING,
    RETRY,
    RUNNING,
    TIMEOUT,
    USER_STOPPED,
    derive_view,
)
from rgt_tui.domain.slurm_jobs import (
    ClusterSide,
    parse_duration,
    parse_jobcomp_line,
    parse_jobs_file,
    parse_partition,
    parse_sacct_line,
    parse_squeue_line,
)
from rgt_tui.domain.slurm_queue import CLUSTER_UNKNOWN, slurm_view
from rgt_tui.domain.slurm_vanished import WALLTIME, SlurmLimits, diagnose_slurm
from rgt_tui.domain.vanished import HANGUP, NO, OOM, YES
from rgt_tui.services.queue.slurm.view import parse_slurm_view

# Recorded from the test cluster (tests/support/slurm.py), Slurm 22.05.
JOBCOMP_OOM = (
    "JobId=7 UserId=root(0) GroupId=root(0) Name=wrap JobState=FAILED Partition=debug "
    "TimeLimit=525600 StartTime=2026-11-27T02:28:47 EndTime=2026-11-27T02:28:48 "
    "NodeList=rgtnode1 NodeCnt=1 ProcCnt=1 WorkDir=/tmp/rgt-slurm-g4dy5dnm ReservationName= "
    "Tres=cpu=1,mem=50M,node=1,billing=1 Account= QOS= WcKey= Cluster=unknown "
    "SubmitTime=2026-11-27T02:28:38 EligibleTime=2026-11-27T02:28:39 ArrayJobId=3 "
    "ArrayTaskId=0 DerivedExitCode=0:0 ExitCode=0:9 "
)
JOBCOMP_DONE = (
    JOBCOMP_OOM.replace("JobState=FAILED", "JobState=COMPLETED")
    .replace("ExitCode=0:9", "ExitCode=0:0")
    .replace("ArrayTaskId=0", "ArrayTaskId=1")
)
OOM_LINE = "slurmstepd-rgtnode1: error: Exceeded job memory limit"


def test_squeue_lines_pending_running_and_an_unsplit_array():
    (pending,) = parse_squeue_line("1_2|PENDING|JobArrayTaskLimit||0:00|UNLIMITED")
    assert (pending.array_id, pending.index, pending.state) == ("1", 2, "PENDING")
    assert pending.reason == "JobArrayTaskLimit" and pending.time_left_s is None
    (running,) = parse_squeue_line("2_0|RUNNING|None|rgtnode1|0:04|0:56")
    assert running.node == "rgtnode1" and running.reason == ""
    assert (running.elapsed_s, running.time_left_s) == (4, 56)
    assert [r.index for r in parse_squeue_line("1_[2-3%2]|PENDING|Priority||0:00|1:00")] == [2, 3]
    assert parse_duration("1-02:03:04") == 93784 and parse_duration("365-00:00:00") == 31536000


def test_hostile_lines_are_skipped_or_bounded():
    assert parse_squeue_line("garbage") == []
    assert parse_squeue_line("1_x|RUNNING|None|n|0:01|0:01") == []
    assert parse_squeue_line("1_0|RUN\x1bNING|None|n|0:01|0:01") == []
    # A reason holding the separator and a terminal escape: kept whole, made printable.
    (r,) = parse_squeue_line("5_1|PENDING|a|b\x1b[2J" + "x" * 5000 + "|node|0:00|1:00")
    assert "\x1b" not in r.reason and len(r.reason) <= 80 and r.node == "node"
    assert parse_squeue_line("1_[0-99999999]|PENDING|x||0:00|1:00") == []  # a range too big
    assert parse_jobcomp_line("JobId=1 JobState=COMPLETED") is None  # not an array task
    # A job name that spells keys does not decide: the last occurrence counts.
    forged = JOBCOMP_OOM.replace("Name=wrap", "Name=JobState=COMPLETED ArrayTaskId=9")
    report = parse_jobcomp_line(forged)
    assert report is not None and (report.state, report.index) == ("FAILED", 0)
    assert parse_jobs_file("12 0 3 1700000000 launch\n12 0 x\n13 5 2 1 append\n")[0].job_id == "12"
    assert len(parse_jobs_file("12 0 3 1700000000 launch\n12 0 x\n13 5 2 1 append\n")) == 1
    assert parse_partition("debug*|up|1/0/0/1").alloc == 1
    assert parse_partition("debug|up|a/b") is None


def test_jobcomp_and_sacct_lines():
    report = parse_jobcomp_line(JOBCOMP_OOM)
    assert report is not None
    assert (report.array_id, report.index, report.state) == ("3", 0, "FAILED")
    assert (report.exit_code, report.signal, report.elapsed_s) == (None, 9, 1)
    (acct,) = parse_sacct_line("12_3|CANCELLED by 1000|0:15|00:01:02|node7")
    assert (acct.state, acct.signal, acct.elapsed_s, acct.node) == ("CANCELLED", 15, 62, "node7")
    (acct,) = parse_sacct_line("12_4|OUT_OF_MEMORY|0:125|00:00:09|node7")
    assert acct.state == "OUT_OF_MEMORY" and (acct.exit_code, acct.signal) == (None, 125)


def probe_text(*, extra: str = "") -> str:
    return (
        "now\t1700000100\nuser\troot\n"
        "cell\t0\ta\ncell\t1\tb\ncell\t2\tc\ncell\t3\td\n"
        "jobs\t3 0 3 1700000000 launch\n"
        "sq\t3_2|RUNNING|None|rgtnode1|1:02|58:58\n"
        "sq\t3_3|PENDING|Resources||0:00|1:00:00\n"
        "acct_off\tSlurm accounting storage is disabled\n"
        "jc_loc\tjobcomp/filetxt /var/log/slurm/jobcomp.log\n"
        f"jc\t{JOBCOMP_OOM}\njc\t{JOBCOMP_DONE}\n"
        f"oomout\ta\t{OOM_LINE}\n"
        "mine\t1\tRUNNING\nmine\t1\tPENDING\n"
        "part\tdebug*|up|1/0/0/1\n" + extra
    )


def test_the_box_answer_becomes_one_task_per_cell():
    facts = parse_slurm_view(probe_text())
    a, b, c, d = (facts.cells[n] for n in "abcd")
    assert a.oom and a.state == "FAILED" and a.source == "jobcomp" and a.job_id == "3_0"
    assert not b.oom and b.state == "COMPLETED"  # its output has no OOM line
    assert (c.state, c.node, c.elapsed_s, c.time_left_s) == ("RUNNING", "rgtnode1", 62, 3538)
    assert (d.state, d.reason) == ("PENDING", "Resources")
    assert "job-completion log /var/log/slurm/jobcomp.log" in facts.cluster.accounting
    assert facts.cluster.jobs_text() == "your jobs: 1 PENDING · 1 RUNNING"
    assert facts.cluster.partitions_text() == "debug* 0 idle/1 alloc of 1"


def test_a_retry_array_supersedes_the_launch_for_its_index():
    text = probe_text(extra="jobs\t9 0 0 1700000050 retry\nsq\t9_0|PENDING|Priority||0:00|1:00\n")
    a = parse_slurm_view(text).cells["a"]
    assert (a.job_id, a.state, a.reason, a.oom) == ("9_0", "PENDING", "Priority", False)


def _view(attempts: dict[str, tuple[CellAttempt, ...]]):
    deployed = tuple(DeployedCell(i, n, "true") for i, n in enumerate("abcd"))
    launch = RunnerLaunch(1700000000, "login-boot", "slurm", 0, "/x/slurm_task.sh", 3)
    return derive_view(
        "hpc", deployed, (launch,), attempts, boot_id="login-boot", now=1700000100,
        runner_alive=False,
    )  # fmt: skip


def test_view_and_diagnosis_read_the_scheduler():
    # a: OOM-killed (no end record: SIGKILL); b: done; c: running on a compute node
    # whose boot id is not the login node's; d: waiting for resources.
    attempts = {
        "a": (CellAttempt(1700000001, "node-boot", 41),),
        "b": (CellAttempt(1700000001, "node-boot", 42, 1700000004, 0),),
        "c": (CellAttempt(1700000040, "node-boot", 43),),
    }
    base = _view(attempts)
    assert base.cells[2].status == INTERRUPTED  # the records alone would say "rebooted"
    facts = parse_slurm_view(probe_text())
    view = slurm_view(base, facts.cells, facts.cluster)
    a, b, c, d = view.cells
    assert (a.status, a.label, a.exit_code) == (OUT_OF_MEMORY, "OUT_OF_MEMORY", 137)
    assert "Exceeded job memory limit" in a.note
    assert b.status == DONE
    assert c.status == RUNNING and c.note == "on rgtnode1 · 1m02s elapsed · 58m58s left"
    assert c.started_at == 1700000040  # its own start record, not the login node's guess
    assert d.status == PENDING and d.note == "waiting: Resources"
    assert view.state == Q_RUNNING and view.runner_alive
    summary = view.summary()
    assert "1/4 done" in summary and "1 OUT_OF_MEMORY" in summary
    assert "1 running" in summary and "1 pending (Resources)" in summary

    d = diagnose_slurm(view, SlurmLimits(mem="50M", time="00:10:00"))
    assert d.cause == OOM and d.subject == "cell 0 (a)" and d.resume_index == 0
    verdicts = {e.cause: e.verdict for e in d.evidence}
    assert verdicts[OOM] == YES and verdicts[WALLTIME] == NO and verdicts[HANGUP] == NO
    assert "raise mem in hosts.toml (now 50M)" in d.next_step
    assert d.found  # Slurm ended it: diagnose exits 1


def test_a_task_that_failed_by_itself_is_named_but_no_run_vanished():
    attempts = {"a": (CellAttempt(1700000001, "node-boot", 41, 1700000004, 1),)}
    facts = parse_slurm_view("now\t1700000100\ncell\t0\ta\njobs\t3 0 0 1700000000 launch\n")
    d = diagnose_slurm(slurm_view(_view(attempts), facts.cells, facts.cluster))
    assert d.subject == "cell 0 (a)" and "exited 1 by itself" in d.summary, d.summary
    assert d.cause is None and d.by_itself and not d.found  # diagnose exits 0


def test_timeout_names_the_walltime_and_the_resume_index():
    timeout_line = JOBCOMP_OOM.replace("JobState=FAILED", "JobState=TIMEOUT").replace(
        "ExitCode=0:9", "ExitCode=0:15"
    )
    text = (
        "now\t1700000100\ncell\t0\ta\ncell\t1\tb\ncell\t2\tc\ncell\t3\td\n"
        f"jobs\t3 0 0 1700000000 launch\njc\t{timeout_line}\n"
    )
    facts = parse_slurm_view(text)
    attempts = {"a": (CellAttempt(1700000001, "node-boot", 41, 1700000061, 143),)}
    view = slurm_view(_view(attempts), facts.cells, facts.cluster)
    assert view.cells[0].status == TIMEOUT and view.state == FINISHED
    assert view.resume_index == 0
    assert view.elapsed_text() == "1m01s"  # exact: Slurm reported the end (no "≥")
    d = diagnose_slurm(view, SlurmLimits(time="00:01:00", signal_lead_s=30))
    assert d.cause == WALLTIME and "raise time in hosts.toml (now 00:01:00)" in d.next_step
    # The records-only reading would have called exit 143 a plain failure.
    assert _view(attempts).cells[0].status == FAILED
    assert "SIGTERM ~30s before the kill, as asked" in d.next_step  # no signal record
    # s35 Slurm hour #6: its record says when the TERM came; the diagnosis says that, not
    # the lead asked for, and a cell that acted on it and exited 143 says it got one.
    (signalled,) = parse_cell_state(
        "start 1700000001 node-boot 41\nsignal 1700000019 TERM\nend 1700000061 143\n"
    )
    assert signalled.signalled_at == 1700000019
    view = slurm_view(_view({"a": (signalled,)}), facts.cells, facts.cluster)
    d = diagnose_slurm(view, SlurmLimits(time="00:01:00", signal_lead_s=30))
    assert "it got SIGTERM 42s before the kill, SLURM2" in d.next_step, d.next_step
    failed = _view({"a": (signalled,)}).cells[0]
    assert failed.status == FAILED and failed.note.startswith(
        "a SIGTERM reached it 42s before its end (the walltime's warning, a scancel or a "
        "preemption)"
    ), failed.note


def test_a_vanished_task_and_a_failed_squeue():
    attempts = {"c": (CellAttempt(1700000040, "node-boot", 43),)}
    facts = parse_slurm_view("now\t1\ncell\t0\ta\njobs\t3 0 0 1 launch\n")
    view = slurm_view(_view(attempts), facts.cells, ClusterSide())
    assert view.cells[2].status == INTERRUPTED and "no longer lists" in view.cells[2].note
    broken = parse_slurm_view("now\t1\njobs\t3 0 0 1 launch\nsq_err\tslurm_load_jobs: timeout\n")
    assert not broken.squeue_ok and "squeue failed" in broken.cluster.line()
    view = slurm_view(_view(attempts), broken.cells, broken.cluster, squeue_ok=False)
    assert "squeue failed" in view.cells[2].note
    # Nothing the cluster says is known (s35 Slurm hour #4: a paused slurmctld read
    # "stopped", and "resume: --start" would have run done cells again): the queue's
    # state is unknown, no resume is offered, and a cell with no end record says so.
    assert view.state == CLUSTER_UNKNOWN and view.resume_index is None
    assert view.summary().startswith("unknown: squeue did not answer")
    assert all("squeue failed" in c.note for c in view.cells if c.status != DONE)


# A pending single-task array scancelled whole: Slurm logs the array's own record, no
# task fields (recorded on the test cluster); slurm_view.sh passes it on with them empty.
JOBCOMP_UNSPLIT = (
    "JobId=3 JobState=CANCELLED NodeList=(null) StartTime=2026-11-29T22:21:00 "
    "EndTime=2026-11-29T22:21:00 ExitCode=0:0 ArrayJobId= ArrayTaskId="
)


def test_a_pending_array_cancelled_whole_ends_its_cells_before_they_started():
    (whole,) = [parse_jobcomp_line(JOBCOMP_UNSPLIT)]
    assert whole is not None and (whole.array_id, whole.index, whole.state) == (
        "3",
        None,
        "CANCELLED",
    )
    text = (
        "now\t1700000100\ncell\t0\ta\ncell\t1\tb\ncell\t2\tc\ncell\t3\td\n"
        "jobs\t2 0 3 1700000000 launch\njobs\t3 0 1 1700000050 retry\n"
        f"jc\t{JOBCOMP_DONE.replace('ArrayJobId=3', 'ArrayJobId=2')}\n"
        f"jc\t{JOBCOMP_UNSPLIT}\n"
    )
    facts = parse_slurm_view(text)
    # The retry's array covers a and b: both its cells ended with it; c and d are the
    # launch's (b's own launch line is superseded).
    assert (facts.cells["a"].job_id, facts.cells["a"].state) == ("3_0", "CANCELLED")
    assert (facts.cells["b"].job_id, facts.cells["b"].state) == ("3_1", "CANCELLED")
    assert "c" not in facts.cells and "d" not in facts.cells
    # a failed, then its retry was queued (the retry record, no start after it).
    deployed = tuple(DeployedCell(i, n, "true") for i, n in enumerate("abcd"))
    launch = RunnerLaunch(1700000000, "login-boot", "slurm", 0, "/x/slurm_task.sh", 2)
    base = derive_view(
        "hpc", deployed, (launch,), {"a": (CellAttempt(1700000001, "node-boot", 41, 1700000002, 4),)},
        boot_id="login-boot", now=1700000100, runner_alive=False,
        marks={"a": CellMarks(retry_aside="-", retries=((1700000049, "-"),))},
    )  # fmt: skip
    assert base.cells[0].status == RETRY
    view = slurm_view(base, facts.cells, facts.cluster)
    a, b = view.cells[:2]
    assert (a.status, a.exit_code) == (CANCELLED, None)
    assert a.note == "Slurm: CANCELLED before it started (the job-completion log, task 3_0)"
    assert (b.status, b.exit_code) == (CANCELLED, None)


def test_a_stop_is_shown_while_its_holds_last_and_not_once_they_are_released():
    # Cell a ran before the stop (at 1700000050); b and c were held by it.
    deployed = tuple(DeployedCell(i, n, "true") for i, n in enumerate("abc"))
    launch = RunnerLaunch(
        1700000000, "login-boot", "slurm", 0, "/x/slurm_task.sh", 3,
        stop_requested_at=1700000050, stop_by="user",
    )  # fmt: skip
    attempts = {"a": (CellAttempt(1700000001, "node-boot", 41),)}
    base = derive_view(
        "hpc", deployed, (launch,), attempts, boot_id="login-boot", now=1700000100,
        runner_alive=False,
    )  # fmt: skip

    def view(*squeue: str):  # type: ignore[no-untyped-def]
        text = (
            "now\t1700000100\ncell\t0\ta\ncell\t1\tb\ncell\t2\tc\njobs\t3 0 2 1700000000 launch\n"
        )
        facts = parse_slurm_view(text + "".join(f"sq\t{line}\n" for line in squeue))
        return slurm_view(base, facts.cells, facts.cluster)

    held = view(
        "3_0|RUNNING|None|rgtnode1|1:39|UNLIMITED",
        "3_1|PENDING|JobHeldUser||0:00|UNLIMITED",
        "3_2|PENDING|JobHeldUser||0:00|UNLIMITED",
    )
    assert held.stop_requested and held.stop_text().startswith("stop requested")
    # Nothing running, b and c still held: no "resume: rgt-tui launch" line, since that
    # launch is refused until the holds are released or cancelled (h572 #4).
    waiting = view(
        "3_1|PENDING|JobHeldUser||0:00|UNLIMITED", "3_2|PENDING|JobHeldUser||0:00|UNLIMITED"
    )
    assert waiting.state == USER_STOPPED and waiting.resume_index is None, waiting
    # scontrol release: b runs (it started after the stop), c waits on the array's limit.
    released = view(
        "3_1|RUNNING|None|rgtnode1|0:10|UNLIMITED",
        "3_2|PENDING|JobArrayTaskLimit||0:00|UNLIMITED",
    )
    assert released.state == Q_RUNNING and not released.stop_requested
    assert released.stop_text() == "" and "stop requested" not in released.summary()
    # Both released cells ran to their end: the queue finished, it was not stopped.
    done = {
        **attempts,
        "b": (CellAttempt(1700000060, "node-boot", 42, 1700000070, 0),),
        "c": (CellAttempt(1700000071, "node-boot", 43, 1700000080, 0),),
    }
    base = derive_view(
        "hpc", deployed, (launch,), done, boot_id="login-boot", now=1700000100,
        runner_alive=False,
    )  # fmt: skip
    assert view().state == FINISHED


def test_a_stop_released_within_its_own_second_reads_finished_once_its_tasks_ran():
    # A whole second holds the stop, the release and both released cells (short cells on
    # an idle cluster): no start is later than the stop. Its record names the tasks it
    # held, so once one of them ran the queue reads finished, not "stopped by the user"
    # (the last CI run's test_slurm_launch_cluster failure).
    deployed = tuple(DeployedCell(i, n, "true") for i, n in enumerate("abc"))
    at = 1700000050
    done = {
        "a": (CellAttempt(at, "node-boot", 41, at, 0),),
        "b": (CellAttempt(at, "node-boot", 42, at, 0),),
        "c": (CellAttempt(at, "node-boot", 43, at, 0),),
    }
    text = "now\t1700000100\ncell\t0\ta\ncell\t1\tb\ncell\t2\tc\njobs\t3 0 2 1700000000 launch\n"
    jobcomp = "".join(
        f"jc\t{JOBCOMP_DONE.replace('ArrayTaskId=1', f'ArrayTaskId={i}')}\n" for i in range(3)
    )
    facts = parse_slurm_view(
        text + "jc_loc\tjobcomp/filetxt /var/log/slurm/jobcomp.log\n" + jobcomp
    )

    def state(stop_record: str) -> str:
        launches = parse_runner_state(
            f"launch 1700000000 login-boot slurm 0 /x/slurm_task.sh 3\n{stop_record}\n"
        )
        base = derive_view(
            "hpc", deployed, launches, done, boot_id="login-boot", now=1700000100,
            runner_alive=False,
        )  # fmt: skip
        return slurm_view(base, facts.cells, facts.cluster).state

    assert state(f"stop {at} user 3_1 3_2") == FINISHED
    # A record that names no task (a box runner's, or one written before) has only the
    # seconds: a start in the stop's own second may have been before it.
    assert state(f"stop {at} user") == USER_STOPPED
    # The tasks it held never ran (cancelled while held): stopped, whatever the second.
    assert state(f"stop {at} user 3_7") == USER_STOPPED
    # A held task's cell whose start is an earlier run's (before the stop: a resubmitted
    # task keeps it), its task cancelled while held: still stopped (review s35).
    done["b"] = (CellAttempt(at - 30, "node-boot", 42, at - 20, 0),)
    done["c"] = (CellAttempt(at - 19, "node-boot", 43, at - 10, 0),)
    assert state(f"stop {at} user 3_1 3_2") == USER_STOPPED


def test_a_failed_squeue_says_nothing_of_the_users_jobs():
    """s39 Slurm hour #10: "squeue failed: … · your jobs: none in the queue" read as a
    fact; with squeue failed nothing is known of them, and the line says only that."""
    facts = parse_slurm_view(probe_text(extra="sq_err\tslurm_load_jobs error: timeout\n"))
    line = facts.cluster.line()
    assert "squeue failed: slurm_load_jobs error: timeout" in line, line
    assert "your jobs" not in line, line
    assert not facts.squeue_ok


def test_a_retry_waiting_on_slurm_reads_the_schedulers_note_alone() -> None:
    """h501 #12: a cell queued to retry and pending on Slurm read "— ; waiting: Resources"."""
    from rgt_tui.domain.queue_state import CellView
    from rgt_tui.domain.slurm_jobs import SlurmCell
    from rgt_tui.domain.slurm_queue import _cell

    job = SlurmCell("a", 0, "3_0", "PENDING", reason="Resources", source="squeue")
    bare = _cell(CellView(0, "a", RETRY), job, 1700000100, True)
    assert bare.note == "waiting: Resources", bare.note
    noted = _cell(CellView(0, "a", RETRY, note="retry asked"), job, 1700000100, True)
    assert noted.note == "retry asked; waiting: Resources", noted.note
