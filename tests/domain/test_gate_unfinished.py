"""The gate knows unfinished work (issue 40): a cell the records or the scheduler know as
failed, killed, interrupted, ended by Slurm or pending does not count for the roster by
its verified files; it is a checklist line of its own, naming the cell, its state and
what is safe, locked until it is moved (``#moved-to``) or acknowledged by name. Results
with no record of a run count by their verified files, as before. Pure: recorded views.
"""

from __future__ import annotations

from dataclasses import replace

from support.gate import ATTEMPT, LOCAL, happy_events, listing

from rgt_tui.domain import teardown_gate as g
from rgt_tui.domain.gate_fixes import fix
from rgt_tui.domain.queue_records import CellAttempt, DeployedCell, RunnerLaunch
from rgt_tui.domain.queue_state import CANCELLED, FAILED, derive_view
from rgt_tui.domain.slurm_queue import slurm_view
from rgt_tui.domain.unfinished import queue_cells_seen
from rgt_tui.domain.units import local_time
from rgt_tui.services.journal import _decode_event, _encode_event
from rgt_tui.services.queue.slurm.view import parse_slurm_view

NOW = 1700000100
BOOT = "boot-1"


def _box_view(attempts, *, runner_alive=False, launched=True, cells=("cellA", "cellB")):  # type: ignore[no-untyped-def]
    deployed = tuple(DeployedCell(i, n, "true") for i, n in enumerate(cells))
    launches = (
        (RunnerLaunch(1700000000, BOOT, "tmux", 0, "/q/run_queue.sh", 9),) if launched else ()
    )
    return derive_view(
        "h1", deployed, launches, attempts, boot_id=BOOT, now=NOW, runner_alive=runner_alive
    )


def _state(*extra: g.GateEvent) -> g.GateState:
    """The happy facts of h1 (tests/support/gate.py) with ``extra`` before the typed name."""
    events = happy_events()
    confirmation = events[-3:]  # typed name, local re-check, re-scan for it
    state = g.GateState("h1", box_id="0123456789abcdef0123456789abcdef")
    for e in [*events[:-3], *extra, *confirmation]:
        state = g.apply(state, e)
    return state


def _confirm_again(state: g.GateState) -> g.GateState:
    """An acknowledgement drops the typed name: type it again, with its re-scan."""
    for e in (
        g.ConfirmationTyped("h1", "attempt-2"),
        LOCAL,
        g.Rescanned(listing(), at=220.0, attempt="attempt-2", box_id=_state().box_id),
    ):
        state = g.apply(state, e)
    return state


def _unfinished(state: g.GateState) -> list[g.Condition]:
    return [c for c in g.conditions(state) if c.key == "unfinished"]


def _ack(state: g.GateState, name: str) -> g.UnfinishedAcknowledged:
    """The acknowledgement the checklist records: of the run of ``name`` it showed."""
    return g.UnfinishedAcknowledged(name, g.unfinished_run(state, name))


def _roster(state: g.GateState) -> g.Condition:
    return next(c for c in g.conditions(state) if c.key == "roster")


def test_happy_facts_unlock_without_queue_facts():
    assert g.is_unlocked(_state()) and ATTEMPT  # the baseline the cases below break


def test_an_interrupted_cell_with_a_verified_checkpoint_is_its_own_line_until_acknowledged():
    seen = g.QueueCellsSeen(unfinished=(("cellA", "interrupted", "interrupted after ≥41m"),))
    state = _state(seen)
    assert not g.is_unlocked(state)
    (line,) = _unfinished(state)
    assert not line.ok and line.settle == ("cellA",)
    assert line.evidence.startswith("cellA interrupted after ≥41m — ")
    # The newest verified checkpoint of the cell (pulled, hashed, loaded), with its time.
    assert f"its checkpoint from {local_time(100.0)} (cellA/ckpt.pt)" in line.evidence
    assert "pulled and verified" in line.evidence and line.checkpoint == "cellA/ckpt.pt"
    cli = fix(line, "h1", tui=False)
    assert "`rgt-tui queue move cellA --to HOST` resumes it elsewhere" in cli
    assert "`rgt-tui teardown h1 --ack-unfinished cellA`" in cli
    assert "Unfinished: accept" in fix(line, "h1", tui=True)
    # Its verified checkpoint no longer counts it as a cell with results.
    roster = _roster(state)
    assert roster.ok and roster.evidence.startswith("1/2 cells have results")
    assert "settled on its own line: cellA (unfinished)" in roster.evidence

    acked = _confirm_again(g.apply(state, g.UnfinishedAcknowledged("cellA")))
    (line,) = _unfinished(acked)
    assert line.ok and "acknowledged" in line.evidence and g.is_unlocked(acked)


def test_a_checkpoint_changed_here_since_it_verified_is_not_offered_to_resume_from():
    # ux-h 12: the local line said CHANGED cellA/ckpt.pt while the unfinished line still
    # said the checkpoint was pulled and verified and the move would resume from it.
    seen = g.QueueCellsSeen(unfinished=(("cellA", "interrupted", "interrupted after ≥41m"),))
    changed = g.LocalCopyChecked(
        "/results/h1", 230.0, matched=LOCAL.matched - 1, changed=("cellA/ckpt.pt: SHA-256 differs",)
    )
    state = g.apply(_state(seen), changed)
    local = next(c for c in g.conditions(state) if c.key == "local")
    assert not local.ok and "CHANGED cellA/ckpt.pt" in local.evidence
    (line,) = _unfinished(state)
    assert (
        line.checkpoint == "" and "no checkpoint of it is pulled and verified here" in line.evidence
    )
    assert "cellA/ckpt.pt was, but its local copy is missing or changed now" in line.evidence
    assert "starts it over elsewhere" in fix(line, "h1", tui=False)
    assert "resumes it" not in fix(line, "h1", tui=False)


def test_a_failed_cell_locks_until_acknowledged():
    view = _box_view(
        {
            "cellA": (CellAttempt(1700000001, BOOT, 41, 1700000050, 0),),
            "cellB": (CellAttempt(1700000051, BOOT, 42, 1700000076, 3),),
        }
    )
    assert [c.status for c in view.cells] == ["done", FAILED]
    state = _state(queue_cells_seen(view, {}, lambda name: ()))
    (line,) = _unfinished(state)
    assert not line.ok and not g.is_unlocked(state)
    assert line.evidence.startswith("cellB failed (exit 3) after 25s — ")
    assert "no checkpoint of it is pulled and verified here" in line.evidence  # json only
    assert "--from-scratch" in fix(line, "h1", tui=False)
    # An acknowledgement of another kind does not settle it.
    assert not g.is_unlocked(_confirm_again(g.apply(state, g.MissingCellAcknowledged("cellB"))))
    assert g.is_unlocked(_confirm_again(g.apply(state, _ack(state, "cellB"))))


def test_a_cell_moved_to_another_host_does_not_lock():
    # cellB's runner died with it (same boot, no end record): interrupted on this box; the
    # queue file's '#moved-to box2' line says its work is box2's now.
    view = _box_view(
        {
            "cellA": (CellAttempt(1700000001, BOOT, 41, 1700000050, 0),),
            "cellB": (CellAttempt(1700000051, BOOT, 42),),
        }
    )
    assert view.cells[1].status == "interrupted"
    locked = _state(queue_cells_seen(view, {}, lambda name: ()))
    assert [c.settle for c in _unfinished(locked)] == [("cellB",)]
    state = _state(queue_cells_seen(view, {"cellB": "box2"}, lambda name: ()))
    assert _unfinished(state) == [] and g.is_unlocked(state)
    moved = [c for c in g.conditions(state) if c.key == "moved"]
    assert [(c.ok, c.evidence) for c in moved] == [
        (True, "cellB moved to box2 (the queue file's #moved-to; box2's queue file holds it)")
    ]


# A Slurm host's answer (the probe's lines, as recorded on the test cluster): task 0
# FAILED with exit 1, task 1 cancelled (scancel: signal 15), both read from sacct.
SLURM_PROBE = (
    "now\t1700000100\nuser\troot\n"
    "cell\t0\tcellA\ncell\t1\tcellB\n"
    "jobs\t3 0 1 1700000000 launch\n"
    "acct\t3_0|FAILED|1:0|00:00:30|rgtnode1\n"
    "acct\t3_1|CANCELLED by 0|0:15|00:00:40|rgtnode1\n"
    "part\tdebug*|up|1/0/0/1\n"
)


def test_slurm_failed_and_cancelled_tasks_lock_the_gate():
    facts = parse_slurm_view(SLURM_PROBE)
    attempts = {
        "cellA": (CellAttempt(1700000001, "node-boot", 41),),
        "cellB": (CellAttempt(1700000001, "node-boot", 42),),
    }
    records = _box_view(attempts)
    view = slurm_view(records, facts.cells, facts.cluster)
    assert [c.status for c in view.cells] == [FAILED, CANCELLED]
    state = _state(queue_cells_seen(view, {}, lambda name: ()))
    lines = _unfinished(state)
    assert [c.settle for c in lines] == [("cellA",), ("cellB",)]
    assert lines[0].evidence.startswith("cellA failed")
    assert lines[1].evidence.startswith("cellB CANCELLED after 40s")
    # cellA's checkpoint verified, yet the roster counts neither cell.
    assert _roster(state).evidence.startswith("0/2 cells have results")
    assert not g.is_unlocked(state)
    both = g.apply(g.apply(state, _ack(state, "cellA")), _ack(state, "cellB"))
    assert g.is_unlocked(_confirm_again(both))


def test_results_with_no_record_of_a_run_count_by_their_verified_files():
    # The queue was deployed, never launched: its cells' results were made outside rgt-tui.
    never = _box_view({}, launched=False)
    assert [c.status for c in never.cells] == ["pending", "pending"]
    seen = queue_cells_seen(never, {}, lambda name: ())
    assert seen.unfinished == ()
    state = _state(seen)
    assert _roster(state).evidence == "2/2 cells have results" and g.is_unlocked(state)
    # A cell waiting in a queue that runs is unfinished work, though.
    live = _box_view(
        {"cellA": (CellAttempt(1700000001, BOOT, 41, 1700000050, 0),)}, runner_alive=True
    )
    (waiting,) = queue_cells_seen(live, {}, lambda name: ()).unfinished
    assert waiting[:2] == ("cellB", "pending") and "not started yet" in waiting[2]


def test_the_queue_facts_and_their_acknowledgement_survive_the_journal_and_a_new_manifest():
    seen = g.QueueCellsSeen(
        unfinished=(("cellA", "interrupted", "interrupted after ≥41m"),),
        moved=(("cellC", "box2"),),
        outputs=(("cellA", "results/cellA"),),
    )
    for event in (seen, g.UnfinishedAcknowledged("cellA")):
        assert _decode_event(_encode_event(event)) == event
    state = g.apply(_state(seen, g.UnfinishedAcknowledged("cellA")), g.BoxChanged("new file"))
    assert state.unfinished == seen.unfinished and state.acked_unfinished == {("cellA", "")}


def test_an_acknowledgement_holds_for_the_run_it_saw_not_for_a_retry():
    # s35 Slurm hour #2: --ack-unfinished of a cancelled cell, then `queue retry` and a
    # kill of the new run: the gate read "killed … acknowledged" and opened on work nobody
    # had accepted. An acknowledgement names the run; the retry's run asks again.
    first = {
        "cellA": (CellAttempt(1700000001, BOOT, 41, 1700000050, 0),),
        "cellB": (CellAttempt(1700000051, BOOT, 42, 1700000076, 3),),
    }
    state = _state(queue_cells_seen(_box_view(first), {}, lambda name: ()))
    acked = _confirm_again(g.apply(state, _ack(state, "cellB")))
    assert g.is_unlocked(acked)
    retried = {
        **first,
        "cellB": (*first["cellB"], CellAttempt(1700000080, BOOT, 43, 1700000090, 143)),
    }
    again = _confirm_again(g.apply(acked, queue_cells_seen(_box_view(retried), {}, lambda n: ())))
    (line,) = _unfinished(again)
    assert not line.ok and "acknowledged" not in line.evidence and not g.is_unlocked(again)
    assert g.is_unlocked(_confirm_again(g.apply(again, _ack(again, "cellB"))))
    # An acknowledgement recorded before runs were (no run) holds only while none is known.
    legacy = _confirm_again(g.apply(state, g.UnfinishedAcknowledged("cellB")))
    assert not g.is_unlocked(legacy)


def test_a_ranks_missing_cell_is_run_by_its_group_not_by_a_launch_of_the_box():
    # s35 Slurm hour #9: a rank box's roster said "`rgt-tui launch box2` to run it", which
    # is refused (box2 has no queue: its cells are the group's).
    line = g.Condition("roster", False, "0/1 cells have results", ("hold",))
    assert "`rgt-tui launch box2` to run it" in fix(line, "box2", tui=False)
    rank = replace(line, cause=g.GROUP_ROSTER)
    for tui in (False, True):
        said = fix(rank, "box2", tui=tui)
        assert "launch its group (the group line names it)" in said, said
        assert "rgt-tui launch box2" not in said and "Queue tab's L" not in said
    assert "`rgt-tui teardown box2 --ack-missing hold`" in fix(rank, "box2", tui=False)


def test_a_cell_pending_again_after_a_run_is_not_said_not_started() -> None:
    """h501 #6: a Slurm task requeued after it ran read "pending after 10s (not started
    yet: … interrupted …)" on the gate: its next attempt has not started, it ran before."""
    from rgt_tui.domain.queue_state import PENDING, CellView, QueueView

    again = CellView(0, "a", PENDING, attempts=1, note="requeued (Slurm restart 1)")
    never = CellView(1, "b", PENDING)
    view = QueueView("h1", "running", (again, never), None, BOOT, NOW, None, True)
    seen = dict((n, w) for n, _, w in queue_cells_seen(view, {}, lambda n: ()).unfinished)
    assert "(ran before; its next attempt has not started: requeued" in seen["a"], seen
    assert "not started yet" not in seen["a"] and "(not started yet)" in seen["b"], seen
