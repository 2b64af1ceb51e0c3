"""Which cells of a queue will still start as things stand, and why the others will not.

One rule for every view that waits on a cell: ``logs -f`` (stop waiting for a log that
will never appear), the Logs tab (say why a cell has no log), and the Queue tab's note on
the code the cells still to run will run. They decided apart before, and disagreed: the
tab said nothing of a cell a running queue had passed over, ``logs -f`` waited on it.
"""

from __future__ import annotations

from rgt_tui.domain.queue_state import (
    PENDING,
    Q_RUNNING,
    RETRY,
    SKIPPED,
    STOP_ASKED_WHY,
    QueueView,
    queue_is,
)


def still_to_run(view: QueueView) -> list[str]:
    """The cells the running queue has yet to start (none when it does not run): those
    waiting for a retry, and those pending from where the launch started on."""
    if view.state != Q_RUNNING or not view.runner_alive or view.stop_requested:
        return []  # a stop asked for: the queue ends after its current cell (hour s42)
    start = view.launch.start_index if view.launch is not None else 0
    return [
        c.name
        for c in view.cells
        if c.status == RETRY or (c.status == PENDING and c.index >= start)
    ]


def will_not_start(view: QueueView) -> dict[str, str]:
    """Why each cell that has not run will not start unless launched again, by name:
    ``has not started and the queue is finished``. Names are the box's text, unchanged
    (each view makes them printable its own way); a cell still to run is not here."""
    waiting = set(still_to_run(view))
    running = view.state == Q_RUNNING and view.runner_alive
    start = view.launch.start_index if view.launch is not None else 0
    notes: dict[str, str] = {}
    for cell in view.cells:
        if cell.status not in (PENDING, SKIPPED, RETRY) or cell.name in waiting:
            continue
        if cell.status == SKIPPED:
            why = f"{queue_is(view.state)} (moved or taken off this box)"
        elif running and view.stop_requested:
            why = STOP_ASKED_WHY
        elif running:  # pending before where this launch started: it is passed over
            why = f"the running queue started after it, at cell {start}"
        else:
            why = queue_is(view.state)
        notes[cell.name] = f"has not started and {why}"
    return notes
