"""The roster line's fix for a cell that runs (h618 #1): the line held to the queue file
as it is now (``roster_now``) named a running cell the last verify did not count, and
offered `--ack-missing` of it, which ``acknowledge`` refuses while it runs. It says what
works instead: wait for it and pull, or kill it first; the other cells keep their fix."""

from __future__ import annotations

from dataclasses import replace

from support.gate import happy_events

from rgt_tui.domain.gate_fixes import fixes
from rgt_tui.domain.teardown_gate import CellsRunning, GateState, apply, conditions
from rgt_tui.services.teardown.gate_conditions import roster_now


def _checklist() -> tuple:
    state = GateState("h1", box_id=happy_events()[-1].box_id)
    # cellD ran from before the pull (its start, 150, before the manifest's 200).
    for event in [*happy_events()[:7], CellsRunning(("cellD",), (("cellD", "1/150/"),))]:
        state = apply(state, event)
    lines = conditions(state)
    roster = next(c for c in lines if c.key == "roster")
    # The queue file now also names cellD (running) and cellE (never sent).
    held = roster_now(roster, state, ("cellA", "cellB", "cellD", "cellE"))
    assert not held.ok and held.settle == ("cellD", "cellE"), held
    return tuple(held if c.key == "roster" else c for c in lines)


def test_a_running_cell_is_not_offered_to_accept_as_missing() -> None:
    lines = _checklist()
    said = dict(zip((c.key for c in lines), fixes(lines, "box1", tui=False), strict=True))
    roster = said["roster"]
    assert "`rgt-tui teardown box1 --ack-missing cellE`" in roster, roster
    assert "--ack-missing cellD`" not in roster.split("cellD runs now")[0], roster
    assert roster.endswith(
        "cellD runs now, so its results may still come: wait for it to end, then "
        "`rgt-tui pull box1` and `rgt-tui verify box1`, which count it; to go without "
        "them, kill it (`rgt-tui queue kill box1`), then accept it as missing "
        "(`rgt-tui teardown box1 --ack-missing cellD`)"
    ), roster
    tui = dict(zip((c.key for c in lines), fixes(lines, "box1", tui=True), strict=True))
    assert "a missing cell (cellE) that never ran" in tui["roster"], tui["roster"]
    assert (
        "cellD runs now" in tui["roster"]
        and "then X), then accept it as missing (type its name" in tui["roster"]
    )


def test_an_accepted_running_cell_is_still_not_offered_as_missing() -> None:
    """Accepted running, it runs still: acknowledge refuses it as missing all the same."""
    lines = tuple(replace(c, ok=True, settle=()) if c.key == "idle" else c for c in _checklist())
    roster = fixes(lines, "box1", tui=False)[[c.key for c in lines].index("roster")]
    assert "cellD runs now" in roster and "--ack-missing cellE" in roster, roster
