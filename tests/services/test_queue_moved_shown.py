"""ux-b #5: a cell moved while its box did not answer (the local queue file holds
``#moved-to box2: …``, the box no skip record yet) reads moved in ``queue show`` and
``diagnose`` of its old box — not "interrupted", no "relaunch from cell 0" — and on a
box named preempted, ``diagnose`` names the preemption rather than a manual kill.
Loopback boxes, the real runner, the real command line."""

from __future__ import annotations

import time
from dataclasses import replace

from support.cli import arun
from support.queues import GATE, SCRIPT_RUN, wait_view

from rgt_tui.domain.preemption import LOST, Preemption
from rgt_tui.domain.queue_state import INTERRUPTED, PENDING, SKIPPED, STOPPED, QueueView
from rgt_tui.domain.vanished import MANUAL_KILL, PREEMPTED, with_preemption
from rgt_tui.paths import journal_dir
from rgt_tui.services.queue.launch import launch, plan_launch
from rgt_tui.services.queue.move import apply_move, plan_move
from rgt_tui.services.queue.view import diagnose_queue, read_queue_view
from rgt_tui.services.runtime.preemption import PreemptionWatch, preempt_dir, unreachable_fix
from rgt_tui.services.watch.events import HostState
from rgt_tui.services.watch.tracker import HostMemory, derive, memory_from_json, memory_to_json


def told(memory: HostMemory, view: QueueView) -> tuple[HostMemory, list]:
    """What watch's tracker tells of box1 with ``view`` read."""
    state = HostState(None, (), "connected", None, view, None, None, time.time())
    return derive("box1", memory, state, reminder_s=0)


async def launch_until_gate_runs(qf) -> None:  # type: ignore[no-untyped-def]
    """box2's queue empty (the move's target), box1's launched, its first cell running."""
    qf.write_queue("", "box2")
    transport = qf.transport("box1")
    try:
        plan = await plan_launch(qf.fleet, qf.host("box1"), transport)
        assert plan.ok, plan.problems
        await launch(plan, transport)
    finally:
        await transport.close()
    await wait_view(qf, lambda v: v.cells[0].status == "running", what="gate to run")


async def test_a_cell_moved_while_its_box_was_away_reads_moved_there(make_queue_fleet):
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    gate, after = qf.cell_script("gate", GATE), qf.cell_script("after", "echo after")
    qf.write_queue(f"{gate} t 1\n{after} t 1\n")
    await launch_until_gate_runs(qf)
    qf.kill_session()  # the runner and its cell die at once, as in a preemption
    gone = await wait_view(qf, lambda v: v.state == STOPPED, what="the queue to stop")
    assert [c.status for c in gone.cells] == [INTERRUPTED, PENDING] and gone.resume_index == 0

    # box1 stops answering; gate is moved to box2 all the same (box1 never told).
    box1 = qf.loopback.box("box1")
    await box1.stop()
    transport = qf.transport("box1")
    try:
        moving = await plan_move(
            qf.fleet, qf.host("box1"), ["gate"], "box2", transport, resume=True
        )
        assert moving.ok and not moving.source_answered, moving.problems
        await apply_move(moving, qf.host("box1"), transport)
    finally:
        await transport.close()
    assert qf.queue_file("box1").read_text().startswith(f"#moved-to box2: {gate} t 1\n")
    # No runtime saw which cell ran (moved from the command line, nothing watching): the
    # fix of an interruptible box not answering says the move, not "move CELL" (h541 #4).
    spot = qf.host("box1")
    spot = replace(spot, watch=replace(spot.watch, interruptible=True))
    queue = qf.queue_file("box1")
    kept = queue.read_text()
    # A #moved-to line no destination holds (no such host) is no move on record, as the
    # gate counts them (review h544 #4).
    queue.write_text(kept + f"#moved-to box9: {qf.cell_script('ghost', 'true')} t 1\n")
    fix = unreachable_fix(qf.fleet, spot) or ""
    queue.write_text(kept)
    assert fix.startswith(
        "box1 does not answer (preempted?); moved from it already (its queue file's "
        "#moved-to): gate → box2 — follow them there (rgt-tui queue show box2)"
    ), fix
    assert "box9" not in fix
    await box1.start()

    transport = qf.transport("box1")
    try:
        view = await read_queue_view(qf.host("box1"), transport)
        _, diagnosis = await diagnose_queue(qf.host("box1"), transport)
    finally:
        await transport.close()
    moved = view.cells[0]
    assert (moved.status, moved.label) == (SKIPPED, "moved") and moved.note.startswith(
        "moved to box2"
    )
    assert view.resume_index == 1 and "interrupted" not in view.summary()
    # What vanished is the runner (it was killed before reaching cell 1), not gate.
    assert diagnosis.cell is None and diagnosis.subject == "the runner"
    assert diagnosis.cause == MANUAL_KILL and "cell 0" not in diagnosis.next_step

    hosts = qf.loopback.hosts_file
    shown = await arun("queue", "show", "box1", "--hosts", hosts)
    assert shown.returncode == 0, shown.stderr
    assert "moved to box2" in shown.stdout and "--start 0" not in shown.stdout, shown.stdout
    assert "interrupted" not in shown.stdout, shown.stdout

    # watch named box1 preempted (its memory, as the runtime keeps it): diagnose says so.
    named = Preemption("box1", LOST, 1_700_000_000.0, "boot/1", "gate")
    memory = PreemptionWatch(qf.fleet, memory_dir=preempt_dir(journal_dir(qf.fleet.path)))
    memory.current["box1"] = named
    memory.with_checkpoint(qf.host("box1"), replace(named))  # kept for the command line
    told = await arun("diagnose", "box1", "--hosts", hosts)
    assert "the runner stopped without an end record: preempted" in told.stdout, told.stdout
    assert "manual kill  likely" not in told.stdout
    assert "find what killed it" not in told.stdout and "relaunch from cell 1" in told.stdout


def test_a_preemption_names_only_the_run_it_interrupted() -> None:
    """Another cell's kill, or real evidence (an OOM kill), stays as the records say."""
    from rgt_tui.domain.vanished import LIKELY, OOM, UNKNOWN, YES, Diagnosis, Evidence

    named = Preemption("box1", LOST, 1_700_000_000.0, "boot/1", "b1_long")
    killed = Diagnosis(
        "box1", "cell 0 (b1_long)", MANUAL_KILL, "cell 0 (b1_long) stopped without an end "
        "record: manual kill", next_step="find what killed it", resume_index=0, cell="b1_long",
        evidence=(Evidence(MANUAL_KILL, LIKELY, "it left no end record; no reboot, no OOM "
                           "kill and no hang-up: a kill is what remains"),),
    )  # fmt: skip
    said = with_preemption(killed, named, ("box2",))
    # Not "manual kill likely … a kill is what remains" beside "preempted yes" (s44 #7).
    assert [(e.cause, e.verdict) for e in said.evidence] == [
        (PREEMPTED, YES),
        (MANUAL_KILL, UNKNOWN),
    ]
    assert said.evidence[1].detail.endswith("the preemption explains it")
    assert said.cause == PREEMPTED
    assert said.summary == "cell 0 (b1_long) stopped without an end record: preempted"
    assert said.evidence[0].detail.startswith("preempted at ~")
    assert "queue move b1_long --to box2" in said.next_step
    assert with_preemption(replace(killed, cell="other"), named) == replace(killed, cell="other")
    assert with_preemption(replace(killed, cause=OOM), named).cause == OOM
    assert with_preemption(killed, None) == killed


async def test_a_moved_cell_still_running_on_its_old_box_is_said_to_run_twice(make_queue_fleet):
    """Hour s18a #4: moved while its box did not answer, the cell went on running there
    when the box came back, while queued on the other host; every view said only
    "running"."""
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    gate = qf.cell_script("gate", GATE)
    qf.write_queue(f"{gate} t 1\n")
    await launch_until_gate_runs(qf)
    box1 = qf.loopback.box("box1")
    await box1.stop()  # its SSH server only: the cell runs on
    transport = qf.transport("box1")
    try:
        moving = await plan_move(
            qf.fleet, qf.host("box1"), ["gate"], "box2", transport, resume=True
        )
        assert moving.ok, moving.problems
        await apply_move(moving, qf.host("box1"), transport)
    finally:
        await transport.close()
    await box1.start()
    transport = qf.transport("box1")
    try:
        view = await read_queue_view(qf.host("box1"), transport)
    finally:
        await transport.close()
    (cell,) = view.cells
    assert cell.status == "running", cell
    assert cell.note.startswith("RUNS TWICE: moved to box2 by the queue file, yet it runs here")
    assert (
        "keep one run: kill it here (rgt-tui queue kill box1 gate), or, to keep this" in cell.note
    )
    shown = await arun("queue", "show", "box1", "--hosts", qf.loopback.hosts_file)
    assert "RUNS TWICE" in shown.stdout, shown.stdout
    # h541 #1: watch (and the TUI's notices) tell it once, a restart included.
    memory, events = told(HostMemory(), view)
    assert [(e.kind, e.title) for e in events] == [
        ("runs_twice", "box1: cell gate runs here, yet is queued on box2")
    ]
    assert events[0].body.startswith("RUNS TWICE: moved to box2") and "queue kill" in events[0].body
    memory = memory_from_json("box1", memory_to_json("box1", memory))  # a restart
    memory, events = told(memory, view)
    assert events == []
    (qf.root() / "go").touch()
    # Hour s24c #2: once it finished here, box2 still holds it and would run it again.
    done = await wait_view(qf, lambda v: v.cells[0].status == "done", what="gate to finish")
    note = done.cells[0].note
    assert note.startswith("DONE HERE, YET QUEUED ON BOX2: moved to box2 by the queue file"), note
    # Taking it off box2's file helps only while box2 was not sent it (s35 resume #6).
    assert "box2 runs it again unless you take it off box2's queue file if box2's box was " in note
    assert (
        "not sent it yet (rgt-tui queue show box2 lists it as not sent), else kill it on " in note
    )
    assert "box2 when it starts there (rgt-tui queue kill box2 gate)" in note
    shown = await arun("queue", "show", "box1", "--hosts", qf.loopback.hosts_file)
    assert "DONE HERE, YET QUEUED ON BOX2" in shown.stdout, shown.stdout
    _, events = told(memory, done)  # its end is one more thing to do: told too
    assert [e.title for e in events if e.kind == "runs_twice"] == [
        "box1: cell gate finished here, yet is queued on box2"
    ]
