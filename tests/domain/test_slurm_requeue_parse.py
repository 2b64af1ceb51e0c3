"""slurm_view.sh's ``rq`` lines (a task Slurm requeued: restart count, when) parsed and
laid over the cell as a preemption; the cluster's text is bounded, junk is skipped."""

from __future__ import annotations

from rgt_tui.domain.queue_state import CellView, QueueView
from rgt_tui.domain.slurm_jobs import Requeue, parse_requeue_line
from rgt_tui.services.queue.slurm.view import parse_slurm_view, with_requeues

VIEW = "now\t1700000100\nuser\troot\ncell\t0\tck\njobs\t7 0 0 1700000000 launch\n"


def test_an_rq_line_is_a_requeue_and_junk_is_skipped() -> None:
    assert parse_requeue_line("7_0\t2\t1700000050") == Requeue("7", 0, 2, 1700000050)
    assert parse_requeue_line("7_0\t1\t-") == Requeue("7", 0, 1, None)
    for junk in ("7_0\t0\t1", "7\t1\t1", "7_0\tx\t1", "7_0 1 1", "\x1b[31m_0\t1\t1", ""):
        assert parse_requeue_line(junk) is None, junk


def test_a_requeued_task_reads_preempted_on_its_cell() -> None:
    text = VIEW + "sq\t7_0|PENDING|BeginTime||0:00|UNLIMITED\nrq\t7_0\t1\t1700000050\n"
    facts = parse_slurm_view(text)
    job = facts.cells["ck"]
    assert (job.restarts, job.requeued_at, job.state) == (1, 1700000050, "PENDING")
    # Another array's requeue is not this cell's.
    other = parse_slurm_view(VIEW + "sq\t7_0|RUNNING|None|n1|0:03|1:00\nrq\t8_0\t1\t1\n")
    assert other.cells["ck"].restarts == 0


def test_with_requeues_leads_the_note_with_the_preemption() -> None:
    facts = parse_slurm_view(VIEW + "sq\t7_0|PENDING|BeginTime||0:00|UNLIMITED\nrq\t7_0\t1\t-\n")
    cell = CellView(0, "ck", "pending", note="waiting: BeginTime", slurm=facts.cells["ck"])
    view = QueueView("box1", "running", (cell,), None, "boot", 1700000100, None)
    note = with_requeues(view).cells[0].note
    assert note == (
        "preempted: cell ck interrupted; requeued (Slurm restart 1, task 7_0) · waiting: BeginTime"
    )


def test_a_task_requeued_after_its_node_failed_is_named_so_not_preempted() -> None:
    """Hour s18b #9: `scontrol update nodename=… state=down` put NODE_FAIL for the task in
    the completion log, and the cell read "preempted at ~12:55 … requeued"."""
    node_fail = (
        "JobId=9 UserId=root(0) GroupId=root(0) Name=wrap JobState=NODE_FAIL Partition=debug "
        "NodeList=rgtnode1 ArrayJobId=7 ArrayTaskId=0 DerivedExitCode=0:0 ExitCode=0:0 "
    )
    text = VIEW + f"jc\t{node_fail}\nsq\t7_0|PENDING|BeginTime||0:00|UNLIMITED\nrq\t7_0\t1\t-\n"
    facts = parse_slurm_view(text)
    job = facts.cells["ck"]
    assert (job.state, job.requeued_after) == ("PENDING", "NODE_FAIL")
    cell = CellView(0, "ck", "pending", slurm=job)
    view = QueueView("box1", "running", (cell,), None, "boot", 1700000100, None)
    note = with_requeues(view).cells[0].note
    assert note.startswith("its node failed: cell ck interrupted; requeued (Slurm restart 1"), note
