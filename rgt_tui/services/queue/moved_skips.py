"""The skip a moved cell's box missed (issue 40, the skip gap).

``queue move`` asks the source box to record ``skip`` for a cell it holds before the line
becomes ``#moved-to HOST:``. A resume move of a cell whose box did not answer (preempted,
gone) cannot ask, so the line is rewritten and the box holds no skip. If that box comes
back and its queue is launched again from before the cell, or its old runner goes on, it
would run the cell a second time beside its new host.

So every launch and append that deploys the queue to a box first records the skip of each
``#moved-to`` cell that box holds without one (``plan_launch`` finds them from the box's
own records; the launch records them before the runner starts, or before ``sbatch``).

A ``#moved-to`` line alone is no proof that anything moved: anyone can type one. The
teardown gate counts a move only where the move left its mark at the destination
(``moves_on_record``): the destination's queue file holds the cell (``queue move`` writes
it there, under ``# moved from SOURCE``, before it rewrites the source line).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.queue_file import QueueCell
from rgt_tui.domain.queue_state import SKIPPED, QueueView
from rgt_tui.services.box_ctl import QueueError
from rgt_tui.services.queue.skip import skip_cell
from rgt_tui.transport import Transport


def moved_cells(host: HostConfig) -> dict[str, str]:
    """Cell name → host, of each ``#moved-to`` line of the host's local queue file (none
    without one, or when it cannot be read). Reads the file: call it off the event loop."""
    if host.queue is None:
        return {}
    from rgt_tui.services.queue.check import read_queue_file

    source = read_queue_file(host.queue, host=host.name, default_epochs=host.epochs)
    return {c.name: c.moved_to for c in source.parsed.moved}


@dataclass(frozen=True)
class MovesSeen:
    """The host's ``#moved-to`` cells, split by whether the move is on record.

    ``held``: cell → destination, whose queue file holds the cell (the move's record);
    ``unheld``: cell → (destination, why the move is not on record)."""

    held: dict[str, str]
    unheld: dict[str, tuple[str, str]]

    @property
    def every(self) -> dict[str, str]:
        """Cell → where it went, on record or not (``moved_on``)."""
        return {**{name: dest for name, (dest, _) in self.unheld.items()}, **self.held}


def moves_on_record(fleet: Fleet, host: HostConfig) -> MovesSeen:
    """The host's ``#moved-to`` cells, each checked against its destination's local queue
    file: a move counts only when that file holds the cell (live, or moved on again from
    there). Reads the files: call it off the event loop."""
    from rgt_tui.services.queue.check import display_path, read_queue_file

    held: dict[str, str] = {}
    unheld: dict[str, tuple[str, str]] = {}
    names = {h.name: h for h in fleet.hosts}
    for name, dest in moved_cells(host).items():
        target = names.get(dest)
        if target is None:
            unheld[name] = (dest, f"{dest} is no host of the fleet file")
            continue
        if target.queue is None:
            unheld[name] = (dest, f"{dest} has no queue file")
            continue
        source = read_queue_file(target.queue, host=target.name, default_epochs=target.epochs)
        if any(c.name == name for c in source.parsed.slots):
            held[name] = " → ".join(_moved_on(names, name, [host.name, dest]))
        else:
            unheld[name] = (
                dest,
                f"{dest}'s queue file ({display_path(target.queue)}) holds no cell {name}",
            )
    return MovesSeen(held, unheld)


def unskipped_moved(
    cells: tuple[QueueCell, ...], deployed: int, view: QueueView | None
) -> tuple[tuple[str, str], ...]:
    """``(name, host it moved to)`` of each ``#moved-to`` cell among the first ``deployed``
    (the box holds its line) whose last record on the box is not a skip."""
    status = {c.name: c.status for c in view.cells} if view is not None else {}
    return tuple(
        (c.name, c.moved_to)
        for c in cells[:deployed]
        if c.moved_to and status.get(c.name) != SKIPPED
    )


def moved_skip_notes(host: str, skips: Iterable[tuple[str, str]]) -> list[str]:
    """The plan's line for each skip the launch records first."""
    return [
        f"{name} was moved to {dest} while {host} did not answer: {host}'s box records "
        "its skip before the runner starts, so it never runs here again"
        for name, dest in skips
    ]


async def record_moved_skips(
    transport: Transport, host: str, skips: Iterable[tuple[str, str]]
) -> None:
    """Record ``skip <ts> moved to DEST`` for each cell (idempotent: another skip record
    only restates the last). QueueError naming the cell when the box refuses one (e.g.
    it runs that cell now: an old runner went on while the box did not answer)."""
    for name, dest in skips:
        try:
            await skip_cell(transport, host, name, f"moved to {dest}")
        except QueueError as exc:
            raise QueueError(
                host,
                f"{name} was moved to {dest}, but {host}'s box did not record its skip "
                f"({exc.message}) — nothing was launched; "
                + (
                    f"kill it there first (rgt-tui queue kill {host}), then launch again"
                    if exc.code == "running"
                    else "launch again when the box answers"
                ),
                code=exc.code,
            ) from exc


def moved_on(fleet: Fleet, host: HostConfig) -> dict[str, str]:
    """Cell name → where each ``#moved-to`` cell of the host's queue file went, followed
    on while the move is on record (``box2 → box3``: a spot run moved twice; the pane of
    the box it first left said box2 while it ran on box3, s43 spot hour #2). Reads the
    files: call it off the event loop."""
    return moves_on_record(fleet, host).every


def _moved_on(names: dict[str, HostConfig], cell: str, path: list[str]) -> list[str]:
    """``path``'s hosts after the first, followed while each one's queue file moved the
    cell on to a host whose file holds it (box2 → box3: a spot run moved twice; the gate
    named box2 long after the cell had left it). Stops at a host seen before."""
    from rgt_tui.services.queue.check import read_queue_file

    while len(path) < 2 + len(names):
        here = names[path[-1]]
        if here.queue is None:
            break
        slots = read_queue_file(here.queue, host=here.name, default_epochs=here.epochs).parsed.slots
        nxt = next((c.moved_to for c in slots if c.name == cell and c.moved_to), "")
        there = names.get(nxt)
        if there is None or nxt in path or there.queue is None:
            break
        on = read_queue_file(there.queue, host=there.name, default_epochs=there.epochs)
        if not any(c.name == cell for c in on.parsed.slots):
            break
        path.append(nxt)
    return path[1:]
