"""Runs that vanish on the loopback boxes: reboot, hang-up, kill — seen and diagnosed."""

from __future__ import annotations

import os
import re
import signal

import pytest
from support.machine import alive
from support.queues import GATE, SCRIPT_RUN, wait_view
from support.waiting import wait_for

from rgt_tui.domain.queue_state import (
    DONE,
    FAILED,
    FINISHED,
    INTERRUPTED,
    REBOOTED,
    RUNNING,
    STOPPED,
)
from rgt_tui.domain.vanished import HANGUP, MANUAL_KILL, NO, REBOOT, YES
from rgt_tui.services.box_ctl import deployed_name
from rgt_tui.services.queue.append import append_cells
from rgt_tui.services.queue.launch import launch, plan_launch
from rgt_tui.services.queue.view import diagnose_queue


def start_pid(state: str) -> int:
    return int(re.findall(r"^start \d+ \S+ (\d+)$", state, re.M)[-1])


async def _launch(qf, **kwargs):
    transport = qf.transport()
    plan = await plan_launch(qf.fleet, qf.host(), transport, **kwargs)
    assert plan.ok, plan.problems
    result = await launch(plan, transport)
    await transport.close()
    return result


async def _diagnose(qf):
    transport = qf.transport()
    try:
        return await diagnose_queue(qf.host(), transport)
    finally:
        await transport.close()


async def test_after_a_reboot_the_cell_is_interrupted_and_resumes_from_its_index(make_queue_fleet):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    first, gate, last = (
        qf.cell_script(n, b) for n, b in (("first", "echo 1"), ("gate", GATE), ("last", "echo 3"))
    )
    qf.write_queue(f"{first} t\n{gate} t\n{last} t\n")
    await _launch(qf)
    running = await wait_view(
        qf, lambda v: v.cells[1].status == RUNNING, what="the gate cell to run"
    )
    old_boot = running.boot_id

    new_boot = qf.reboot()  # the tmux session dies with everything in it; the boot id changes
    view = await wait_view(qf, lambda v: v.state == REBOOTED, what="the reboot to show")
    assert view.boot_id == new_boot != old_boot
    assert [c.status for c in view.cells] == [DONE, INTERRUPTED, "pending"]
    assert view.resume_index == 1 and "resume from cell 1" in view.summary()
    assert "--start" not in view.summary()  # the CLI and the TUI add their own hint

    _, diagnosis = await _diagnose(qf)
    assert diagnosis.cause == REBOOT and diagnosis.subject == "cell 1 (gate)"
    assert "relaunch from cell 1" in diagnosis.next_step and "--start" not in diagnosis.next_step

    (qf.root() / "go").touch()
    await _launch(qf, start_index=view.resume_index)
    done = await wait_view(qf, lambda v: v.state == FINISHED, what="the resumed queue to finish")
    assert [(c.status, c.attempts) for c in done.cells] == [(DONE, 1), (DONE, 2), (DONE, 1)]


async def test_a_foreground_runner_dies_with_its_ssh_session_and_that_is_a_hang_up(
    make_queue_fleet,
):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.write_queue(f"{qf.cell_script('first', 'echo 1')} t\n")
    result = await _launch(qf)
    await wait_view(qf, lambda v: v.state == FINISHED)
    qf.append_queue(f"{qf.cell_script('gate', GATE)} t\n")
    transport = qf.transport()
    appended = await append_cells(qf.fleet, qf.host(), transport)
    await transport.close()
    assert not appended.running and "launch from cell 1" in appended.detail
    assert "rgt-tui" not in appended.detail and "--start" not in appended.detail

    # What a user does by hand: run the deployed runner in the foreground of an SSH session.
    q, bin_dir = qf.qdir(), qf.root() / ".rgt" / "bin"
    runner = bin_dir / deployed_name("run_queue.sh")
    command = f"bash {runner} {q} 1 none {bin_dir / deployed_name('run_one.sh')} {qf.root()}"
    conn = await qf.loopback.connect("box1")
    await conn.create_process(command)
    await wait_for(lambda: "start" in qf.state("gate"), what="the gate cell to start")
    pid = start_pid(qf.state("gate"))
    conn.close()  # the connection drops: sshd (here the loopback box) hangs up on the session
    await wait_for(lambda: not alive(pid), what="the hung-up cell to die")

    view, diagnosis = await _diagnose(qf)
    assert view.state == STOPPED and view.cells[1].status == INTERRUPTED and view.resume_index == 1
    assert diagnosis.cause == HANGUP, diagnosis
    evidence = {e.cause: e for e in diagnosis.evidence}
    assert evidence[HANGUP].verdict == YES and "foreground" in evidence[HANGUP].detail
    assert evidence[REBOOT].verdict == NO
    assert result.pid != view.launch.pid  # the diagnosis is about the second, hand-made launch


async def test_sigkill_of_a_cell_is_recorded_and_diagnosed_as_a_kill_the_queue_goes_on(
    make_queue_fleet,
):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.write_queue(f"{qf.cell_script('gate', GATE)} t\n{qf.cell_script('after', 'echo after')} t\n")
    await _launch(qf)
    await wait_for(lambda: "start" in qf.state("gate"), what="the gate cell to start")
    os.kill(start_pid(qf.state("gate")), signal.SIGKILL)
    view = await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to go on and finish")
    assert [(c.status, c.exit_code) for c in view.cells] == [(FAILED, 137), (DONE, 0)]
    assert (qf.qdir() / "queue.log").read_text().splitlines()[-1] == (
        "QUEUE DONE: 1/2 succeeded; failed: gate(exit 137)"
    )

    _, diagnosis = await _diagnose(qf)
    assert diagnosis.cause == MANUAL_KILL and "SIGKILL" in diagnosis.summary
    evidence = {e.cause: e for e in diagnosis.evidence}
    assert "cannot tell them apart" in evidence[MANUAL_KILL].detail
    assert evidence[HANGUP].verdict == NO and "tmux" in evidence[HANGUP].detail
    assert evidence["OOM kill"].verdict != YES


async def test_a_killed_tmux_session_without_reboot_is_a_manual_kill(make_queue_fleet):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.write_queue(f"{qf.cell_script('gate', GATE)} t\n")
    await _launch(qf)
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING)
    qf.kill_session()
    view = await wait_view(qf, lambda v: v.state == STOPPED, what="the queue to stop")
    assert view.cells[0].status == INTERRUPTED and view.resume_index == 0
    _, diagnosis = await _diagnose(qf)
    assert diagnosis.cause == MANUAL_KILL and "stopped without an end record" in diagnosis.summary
    evidence = {e.cause: e for e in diagnosis.evidence}
    assert evidence[REBOOT].verdict == NO and "gone now" in evidence[HANGUP].detail


async def test_a_cell_that_outlived_its_runner_refuses_a_second_launch_beside_it(make_queue_fleet):
    """h612 #1: the runner gone (its tmux session killed) while its cell, which ignores the
    hang-up, still ran: a launch started a second copy of that cell beside the first, both
    writing its output. The plan refuses it, naming the cell and the kill that settles it,
    and so does the box under its lock (a plan made another way, or another rgt-tui)."""
    import dataclasses

    from rgt_tui.services.box_ctl import QueueError

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    deaf = qf.cell_script("deaf", "trap '' HUP; " + GATE)
    qf.write_queue(f"{deaf} t\n")
    await _launch(qf)
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="the cell to start")
    cell_pid = start_pid(qf.state("deaf"))
    qf.kill_session()
    view = await wait_view(
        qf, lambda v: not v.runner_alive and not v.session_present, what="the runner to die"
    )
    assert alive(cell_pid) and view.cells[0].status == RUNNING, view.cells[0]
    transport = qf.transport()
    try:
        plan = await plan_launch(qf.fleet, qf.host(), transport)
        assert not plan.ok
        (problem,) = [p for p in plan.problems if "still runs" in p]
        assert "cell 0 (deaf) still runs on box1 though its runner is gone" in problem, problem
        assert "rgt-tui queue kill box1 deaf" in problem, problem
        with pytest.raises(QueueError) as refused:
            await launch(dataclasses.replace(plan, problems=()), transport)
        assert refused.value.code == "running", refused.value
        assert f"cell deaf (pid {cell_pid}) still runs though its runner is gone" in str(
            refused.value
        )
    finally:
        await transport.close()
    assert len(re.findall(r"^start ", qf.state("deaf"), re.M)) == 1  # no second copy
