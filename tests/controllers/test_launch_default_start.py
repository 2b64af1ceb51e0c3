"""The launch dialog's default start index (``L``) after a queue that finished: the first
cell that is not done, not 0 (a user appended cells to a finished queue, acknowledged a
check, pressed Enter on Launch and ran the done cells again: paid work)."""

from __future__ import annotations

from typing import Any

from support.queues import SCRIPT_RUN, wait_view

from rgt_tui.controllers.launch_plan import LaunchControl
from rgt_tui.domain.queue_state import DONE, FAILED, FINISHED, RUNNING
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.queue.launch import launch, plan_launch


async def test_a_finished_queue_with_new_cells_starts_at_its_first_cell_not_done(
    make_queue_fleet: Any, monkeypatch: Any
) -> None:
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    cells = [qf.cell_script(n, "exit 0") for n in ("a", "b")] + [qf.cell_script("c", "exit 3")]
    qf.write_queue("".join(f"{c} t\n" for c in cells))
    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
    await transport.close()
    view = await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to finish")
    assert [c.status for c in view.cells] == [DONE, DONE, FAILED]
    assert view.resume_index is None  # finished: no resume index of its own
    qf.append_queue("".join(f"{qf.cell_script(n, 'exit 0')} t\n" for n in ("d", "e")))
    # The default start comes from the records: preflight (seconds on a real box) runs
    # once, for the plan shown (a user's hour waited 6.4 s for two).
    import rgt_tui.services.queue.launch as launch_module

    preflights: list[object] = []
    real = launch_module.run_preflight

    async def counted(*args: Any, **kwargs: Any) -> Any:
        preflights.append(kwargs.get("cells"))
        return await real(*args, **kwargs)

    monkeypatch.setattr(launch_module, "run_preflight", counted)
    connections = FleetConnections(qf.fleet.hosts)
    try:
        control = LaunchControl(qf.fleet, qf.host(), connections)
        plan, error = await control.plan_launch(None, ())
        assert error == "" and plan is not None, error
        assert len(preflights) == 1 and plan.preflight is not None
        assert plan.start_index == 2, plan.start_index  # c failed: the first not done
        assert plan.ok, plan.problems
        assert not any("run again" in w for w in plan.warnings), plan.warnings
        assert [c.name for c in plan.to_run] == ["c", "d", "e"]
    finally:
        await connections.close_all()


async def test_l_on_an_interruptible_box_that_does_not_answer_points_at_d_and_m(
    tmp_path: Any,
) -> None:
    """hour s17a #15: L on a preempted spot box said only "Could not plan: connection
    refused", where d names the preemption and the move. A real refused connection."""
    from support.machine import closed_port

    from rgt_tui.services.fleet.file import load_fleet

    with closed_port() as port:
        hosts = tmp_path / "hosts.toml"
        base = f'[[hosts]]\nname = "spot1"\nssh = "me@127.0.0.1:{port}"\n'
        for interruptible, hinted in ((False, False), (True, True)):
            extra = "interruptible = true\n" if interruptible else ""
            hosts.write_text(base + extra)
            fleet = load_fleet(hosts)
            connections = FleetConnections(fleet.hosts)
            try:
                control = LaunchControl(fleet, fleet.host("spot1"), connections)
                plan, error = await control.plan_launch(None, ())
            finally:
                await connections.close_all()
            assert plan is None and "connection refused" in error, error
            assert ("may be preempted: d says what happened" in error) == hinted, error


async def _l_and_r_torn_down(tmp_path: Any, port: int) -> list[str]:
    """What L and R say of box2, recorded as torn down, at 127.0.0.1:``port`` (a
    known_hosts file of its own, empty)."""
    import time

    from rgt_tui.domain.box_identity import BoxIdentity
    from rgt_tui.domain.queue_state import FAILED, CellView
    from rgt_tui.services.fleet.file import load_fleet
    from rgt_tui.services.journal import TeardownRecord, journal_for

    hosts = tmp_path / "hosts.toml"
    (tmp_path / "kh").write_text("")
    hosts.write_text(
        f'[[hosts]]\nname = "box2"\nssh = "me@127.0.0.1:{port}"\n'
        f'known_hosts = "{tmp_path / "kh"}"\n'
    )
    fleet = load_fleet(hosts)
    box = "0123456789abcdef0123456789abcdef"
    journal = journal_for(fleet)
    journal.observe_box("box2", BoxIdentity(box, None), time.time() - 60)
    journal.add_teardown("box2", TeardownRecord(time.time(), None, None, "", True, box, True))
    connections = FleetConnections(fleet.hosts)
    try:
        control = LaunchControl(fleet, fleet.host("box2"), connections)
        launched = await control.plan_launch(None, ())
        retried = await control.plan_retry(CellView(0, "a", FAILED), (), True)
    finally:
        await connections.close_all()
    said = []
    for plan, error in (launched, retried):
        assert plan is None and "box2 is recorded as torn down (" in error, error
        said.append(error)
    return said


async def test_l_and_r_on_a_torn_down_box_say_it_was_torn_down_not_its_port(
    tmp_path: Any,
) -> None:
    """h461 #1: L on a box recorded as torn down said "connection refused … is sshd
    running on that port? — check the port", as p did not: the plan refuses a torn-down
    host before asking the box, but the connection comes first. A real refused port."""
    from support.machine import closed_port

    with closed_port() as port:
        said = await _l_and_r_torn_down(tmp_path, port)
    for error in said:
        assert "does not answer, as a destroyed box should" in error, error
        assert "port" not in error, error


async def test_l_and_r_on_a_torn_down_box_whose_address_answers_do_not_say_it_does_not(
    tmp_path: Any, make_loopback_fleet: Any
) -> None:
    """Review s46 #10: something answering at a torn-down box's address with a key not
    known read "it does not answer, as a destroyed box should". A real loopback box."""
    fleet = await make_loopback_fleet(1)
    for error in await _l_and_r_torn_down(tmp_path, fleet.boxes[0].port):
        assert "does not answer" not in error, error
        assert "the connection says: " in error and "host key" in error, error
        assert "nothing is launched or retried there" in error, error


async def test_a_retry_confirmed_after_its_queue_ended_does_not_say_launched(
    make_queue_fleet: Any,
) -> None:
    """Planned while the queue ran, confirmed after it ended: nothing runs the cell, and the
    message said "launched for it" (hour s33, with the CLI's #5). It says to retry once more."""
    from support.queues import SCRIPT_RUN as run

    qf = await make_queue_fleet(1, run=run)
    gate = 'while [ ! -e "$HOME/go" ]; do sleep 0.05; done'
    qf.write_queue(f"{qf.cell_script('bad', 'exit 3')} t\n{qf.cell_script('hold', gate)} t\n")
    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
    await transport.close()
    view = await wait_view(qf, lambda v: [c.status for c in v.cells] == [FAILED, RUNNING])
    connections = FleetConnections(qf.fleet.hosts)
    try:
        control = LaunchControl(qf.fleet, qf.host(), connections)
        plan, error = await control.plan_retry(view.cells[0], (), True)
        assert error == "" and plan is not None and plan.running, error
        (qf.root() / "go").touch()
        await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to end")
        outcome = await control.retry(plan, "bad")
        assert outcome.message.startswith(
            "bad is set to run again, but the queue ended before the retry reached it: "
            "nothing runs it yet — retry it once more"
        ), outcome.message
        assert "launched" not in outcome.message
    finally:
        await connections.close_all()
