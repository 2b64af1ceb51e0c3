"""Acknowledgements: the user's by-name word for a missing, running or unfinished cell,
of one box.

An acknowledgement names a cell of the host's queue (``queue_cells``); one of unfinished
work names a cell the box's last gate check recorded as unfinished (``NotUnfinishedError``
otherwise, with those cells). It is of the box
the user saw: when the journal holds another box under the name now, nothing is
recorded (``BoxMismatch``), so an acknowledgement of one box never counts for another.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from rgt_tui.domain import teardown_gate as g
from rgt_tui.domain.box_identity import BoxIdentity
from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.queue_state import PENDING
from rgt_tui.services.journal import HostJournal, Journal


class UnknownCellError(ValueError):
    """An acknowledgement named a cell the host's queue does not have."""

    def __init__(self, name: str, known_cells: Sequence[str]) -> None:
        self.name = name
        self.known_cells = tuple(known_cells)
        known = ", ".join(self.known_cells) or "none (the host has no queue cells)"
        super().__init__(f"no cell named '{name}' in the host's queue; its cells: {known}")


class NotUnfinishedError(UnknownCellError):
    """An ``--ack-unfinished`` named a cell the box's records do not know as unfinished."""

    def __init__(self, name: str, host: str, unfinished: Sequence[str]) -> None:
        super().__init__(name, unfinished)
        known = ", ".join(self.known_cells) or "none"
        ValueError.__init__(
            self,
            f"'{name}' is not an unfinished cell of {host} (as its last gate check read the "
            f"queue): nothing was acknowledged. Its unfinished cells: {known}",
        )


class StillToRun(ValueError):
    """An ``--ack-missing`` named a cell its queue still runs or will run (hour s25b #1:
    accepted by a stray press while pending, it later ran, and its results, lost, were
    never asked about again)."""

    def __init__(self, name: str, host: str, running: bool) -> None:
        self.name = name
        now = f"is running on {host}" if running else f"is pending on {host}, in a queue that runs"
        # The acknowledgement that does fit it is named: "refused" here beside the
        # checklist's own offer of the other read as a contradiction (h491 #2).
        fits = (
            f"accept it as running (--ack-running {name}; Running: accept in the TUI)"
            if running
            else f"accept it as unfinished work (--ack-unfinished {name}; Unfinished: accept "
            "in the TUI)"
        )
        super().__init__(
            # "nothing": every acknowledgement of the command is dropped with it (review
            # h492 #5: "not acknowledged as missing" read as the others going through).
            f"{name} {now}, as its last gate check read it: nothing was acknowledged — its "
            f"results may still come. To tear down without them, {fits}; or accept it as "
            f"missing once its queue has ended or been stopped (rgt-tui queue stop {host}), "
            "then check again"
        )


class NotRunningError(ValueError):
    """An ``--ack-running`` named a cell the box's last check did not see running (h551
    #1: accepted while pending, or done, it held for the run that came later)."""

    def __init__(self, name: str, host: str, running: Sequence[str], state: str = "") -> None:
        self.name = name
        now = ", ".join(running) or "none"
        # What fits it instead, by what the check saw of it (h555 #4: "one still to run"
        # was said of a done cell, whose --ack-unfinished is refused in turn).
        fits = (
            f"it is {state}: accept it as unfinished work (--ack-unfinished {name}; "
            "Unfinished: accept in the TUI)"
            if state
            else "the checklist asks nothing of it"
        )
        super().__init__(
            f"{name} is not running on {host}, as its last gate check read it: nothing was "
            f"acknowledged ({fits}). Its running cells: {now}; a cell is accepted as running "
            "while it runs, for that run only"
        )


def unfinished_cells(jh: HostJournal) -> tuple[str, ...]:
    """The cells the journal's box has recorded as unfinished (its last queue read)."""
    return tuple(name for name, _, _ in jh.gate().unfinished)


class BoxMismatch(ValueError):
    """What the user confirmed (or saw) was about another box than the one the journal
    holds now under the host's name: nothing was recorded."""


def same_box_or_refuse(jh: HostJournal, box: BoxIdentity | None, what: str) -> BoxIdentity:
    """The journal's current box when it is ``box``; BoxMismatch otherwise."""
    if box is None or jh.box is None:
        raise BoxMismatch(
            f"no box has been identified under {jh.host} yet: {what}. Check the gate first "
            f"(rgt-tui teardown {jh.host} --check) so that it says which box answers"
        )
    if not jh.box.same_box(box):
        raise BoxMismatch(
            f"another box is recorded under {jh.host} now ({jh.box.describe()}), not the one "
            f"you saw ({box.describe()}): {what}. Check the gate again"
        )
    return jh.box


def queue_cells(host: HostConfig) -> tuple[str, ...]:
    """The cell names of the host's queue file (none without a queue). Reads the file:
    call it off the event loop."""
    if host.queue is None:
        return ()
    from rgt_tui.services.queue.check import read_queue_file

    source = read_queue_file(host.queue, host=host.name, default_epochs=host.epochs)
    return tuple(c.name for c in source.parsed.cells)


def check_cells(names: Sequence[str], cells: Sequence[str]) -> None:
    """UnknownCellError for the first of ``names`` that is not one of ``cells``."""
    known = tuple(cells)
    for name in names:
        if name not in known:
            raise UnknownCellError(name, known)


def acknowledge(
    journal: Journal,
    host: str,
    *,
    missing: Sequence[str] = (),
    running: Sequence[str] = (),
    unfinished: Sequence[str] = (),
    cells: Sequence[str],
    box: BoxIdentity | None,
    now: float | None = None,
) -> HostJournal:
    """Record the user's by-name acknowledgements of missing, running or unfinished
    cells, for the box they were looking at (``box``: the checklist's, or ``observe_now``'s).

    ``unfinished`` names must be cells the box's gate last recorded as unfinished
    (``unfinished_cells``): otherwise nothing is recorded and NotUnfinishedError lists them.
    ``missing`` names must not be cells its last check saw running, or pending in a queue
    that runs (StillToRun): their results may still come. ``running`` names must be cells
    its last check saw running (NotRunningError), and hold for that run only.

    Every name must be one of ``cells`` (``queue_cells(host)``): otherwise nothing is
    recorded and UnknownCellError says which name, with the cells there are. When the
    journal holds another box under ``host`` now (or none), nothing is recorded and
    BoxMismatch says so: an acknowledgement of one box never counts for another.
    """
    check_cells((*missing, *running), cells)
    events: list[g.GateEvent] = [g.MissingCellAcknowledged(n) for n in missing]
    t = now if now is not None else time.time()

    def append(jh: HostJournal) -> bool:
        same_box_or_refuse(jh, box, "nothing was acknowledged")
        gate = jh.gate()
        for name in running:
            if name not in gate.running:
                state = next((s for n, s, _ in gate.unfinished if n == name), "")
                raise NotRunningError(name, jh.host, gate.running, state)
        # Each for the run of it the last check saw: a retry since is asked again.
        acks = [g.UnfinishedAcknowledged(n, g.unfinished_run(gate, n)) for n in unfinished]
        acks += [g.RunningAcknowledged(n, g.running_run(gate, n)) for n in running]
        pending = {n for n, status, _ in gate.unfinished if status == PENDING}
        for name in missing:
            if name in gate.running or name in pending:
                raise StillToRun(name, jh.host, name in gate.running)
        known = unfinished_cells(jh)
        for name in unfinished:
            if name not in known:
                raise NotUnfinishedError(name, jh.host, known)
        jh.events.extend((t, e) for e in (*events, *acks))
        return bool(events or acks)

    return journal.update(host, append)
