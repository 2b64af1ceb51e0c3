"""The start an append names is the start a launch without one takes (the TUI's L): a
user's hour was told "launch from cell 4" and L planned from cell 0, running a done cell
again. A real loopback box."""

from __future__ import annotations

from support.queues import SCRIPT_RUN, wait_view

from rgt_tui.domain.queue_state import DONE, FAILED, FINISHED, RUNNING
from rgt_tui.services.queue.append import append_cells
from rgt_tui.services.queue.launch import default_start, launch, plan_launch


async def test_after_a_launch_from_a_later_cell_the_append_and_l_start_past_the_done_one(
    make_queue_fleet,
):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    cells = [qf.cell_script(n, "echo ran") for n in ("a", "b")]
    qf.write_queue("".join(f"{c} t 1\n" for c in cells))
    transport = qf.transport()
    try:
        plan = await plan_launch(qf.fleet, qf.host(), transport, start_index=1)
        assert plan.ok, plan.problems
        await launch(plan, transport)
        view = await wait_view(qf, lambda v: v.state == FINISHED, what="b to run")
        assert [c.status for c in view.cells] == ["pending", DONE]  # a never ran
        qf.append_queue(f"{qf.cell_script('c', 'echo ran')} t 1\n")
        appended = await append_cells(qf.fleet, qf.host(), transport)
        assert not appended.running
        assert "a launch from cell 2 runs it" in appended.detail, appended.detail  # one cell
        again = await plan_launch(qf.fleet, qf.host(), transport)
        assert default_start(again) == 2  # not 0: that would run b again
    finally:
        await transport.close()


async def test_an_append_behind_a_failed_cell_says_it_runs_again(make_queue_fleet):
    """hour s22a #12: "a launch from cell 1 runs it" — and runs failed cell 1 again first,
    which only the launch dialog said."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    cells = [qf.cell_script("a", "echo ran"), qf.cell_script("bad", "exit 3")]
    qf.write_queue("".join(f"{c} t 1\n" for c in cells))
    transport = qf.transport()
    try:
        await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
        view = await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to end")
        assert [c.status for c in view.cells] == [DONE, FAILED]
        qf.append_queue(f"{qf.cell_script('c', 'echo ran')} t 1\n")
        appended = await append_cells(qf.fleet, qf.host(), transport)
        assert appended.detail == (
            "the queue is not running: a launch from cell 1 runs it; cell 1 (bad, failed) "
            "runs again first"
        ), appended.detail
        # The command line's "start them: … --start N" names that start, not cell 2, the
        # first added (hour s22c #6: it skipped the earlier failed cell).
        assert appended.start == 1
    finally:
        await transport.close()


async def test_an_append_of_only_a_comment_to_a_running_queue_says_nothing_will_run(
    make_queue_fleet,
):
    """A user's hour (session 28): `# more later` appended while the queue ran, then `a`:
    "no new cells / the running queue … will run them after its current cells"."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    hold = qf.cell_script("hold", 'while [ ! -e "$HOME/go" ]; do sleep 0.05; done')
    qf.write_queue(f"{hold} t 1\n")
    transport = qf.transport()
    try:
        await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
        await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="hold to run")
        qf.append_queue("# more later\n")
        comment = await append_cells(qf.fleet, qf.host(), transport)
        assert not comment.added
        assert comment.detail == "only comments or blank lines were added: nothing new to run"
        qf.append_queue(f"{qf.cell_script('c', 'echo ran')} t 1\n")
        one = await append_cells(qf.fleet, qf.host(), transport)
        assert one.running and one.detail.endswith("will run it after its current cells")
    finally:
        (qf.root() / "go").touch()
        await transport.close()


async def test_nothing_new_to_append_on_a_stopped_queue_names_the_launch_that_runs_its_cells(
    make_queue_fleet,
):
    """h481 #11: `a` said "nothing new in the queue file" alone while three sent cells
    waited on a stopped queue; the user looked no further for L. It names the launch,
    counting only the cells a launch from its default start runs."""
    from support.queues import stopped_after_hold

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    cells = [qf.cell_script(n, "echo ran") for n in ("b", "c")]
    await stopped_after_hold(qf, "".join(f"{c} t 1\n" for c in cells))
    transport = qf.transport()
    try:
        nothing = await append_cells(qf.fleet, qf.host(), transport)
        assert nothing.detail == (
            "nothing new in the queue file; 2 sent cells wait for a launch: L (rgt-tui "
            "launch box1) runs them"
        ), nothing.detail
    finally:
        await transport.close()


async def test_a_new_shorter_queue_file_is_refused_for_its_lines_not_a_start_never_given(
    make_queue_fleet,
):
    """The box's queue stopped past the cells of a new, shorter queue file: a launch with
    no start was refused as "start index 1 is outside the queue", and only the next try
    (--start 0) named the changed lines and --fresh (h531 #9)."""
    from rgt_tui.domain.queue_state import USER_STOPPED
    from rgt_tui.services.queue.control import stop_queue

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    hold = 'while [ ! -e "$HOME/go" ]; do sleep 0.1; done'
    qf.write_queue(
        "".join(
            f"{qf.cell_script(n, s)} t 1\n" for n, s in (("a", hold), ("b", "true"), ("c", "true"))
        )
    )
    transport = qf.transport()
    try:
        await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
        await wait_view(qf, lambda v: v.current is not None, what="a to start")
        await stop_queue(qf.host(), transport)
        (qf.root() / "go").touch()
        view = await wait_view(qf, lambda v: v.state == USER_STOPPED, what="the stop")
        assert view.resume_index == 1
        qf.write_queue(f"{qf.cell_script('x', 'true')} t 1\n")  # a new queue file
        first = await plan_launch(qf.fleet, qf.host(), transport)
        start = default_start(first)
        assert start == 0, start
        plan = await plan_launch(qf.fleet, qf.host(), transport, start_index=start)
    finally:
        await transport.close()
    said = " ".join(plan.problems)
    assert "is outside the queue" not in said, said
    assert "changed since they were sent" in said and "--fresh" in said, said
