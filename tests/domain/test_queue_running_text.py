"""The running cells as the stop dialog and `queue stop` name them: a Slurm host running
two at once was asked to stop "after cell 5 (late1)" while cell 2 ran too (a Slurm hour,
s39 #11)."""

from __future__ import annotations

from rgt_tui.domain.queue_state import DONE, PENDING, RUNNING, CellView, QueueView


def view(*statuses: str) -> QueueView:
    cells = tuple(CellView(i, f"c{i}", s) for i, s in enumerate(statuses))
    return QueueView("hpc", "running", cells, None, "boot", 0, None, True)


def test_one_two_and_many_running_cells_are_named() -> None:
    assert view(DONE, RUNNING, PENDING).running_text() == "cell 1 (c1)"
    assert view(RUNNING, DONE, RUNNING).running_text() == "cells 0 (c0) and 2 (c2)"
    many = view(*[RUNNING] * 6).running_text()
    assert many == "cells 0 (c0), 1 (c1), 2 (c2), 3 (c3) and 2 more", many
    assert view(DONE, PENDING).running_text() == "the current cell"
