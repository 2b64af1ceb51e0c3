"""A refusal for cells on the box that no longer match the queue file names the first
three and counts the rest: a 200-cell queue listed all of them, two lines each, in a
toast (a user's hour met 33 lines for 3 cells)."""

from __future__ import annotations

from rgt_tui.domain.queue_records import DeployedCell
from rgt_tui.services.queue.cells import RenderedQueue


def test_a_mismatch_names_three_cells_and_counts_the_rest() -> None:
    rendered = RenderedQueue("", (), ())  # the template changed: nothing renders the same
    deployed = tuple(DeployedCell(i, f"c{i}", f"python run.py {i}") for i in range(200))
    problem = rendered.mismatch_problem("box1", deployed)
    assert problem is not None
    lines = problem.splitlines()
    assert lines[1] == "  cell 0 on the box: c0: python run.py 0", lines
    assert lines[-1] == "  … and 197 more cells differ" and len(lines) == 8, lines
    few = rendered.mismatch_problem("box1", deployed[:3])
    assert few is not None and "more cells differ" not in few and len(few.splitlines()) == 7
