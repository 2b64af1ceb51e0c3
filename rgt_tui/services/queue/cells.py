"""A host's cells as its box will run them: read, rendered, compared with the box's copy.

Shared by the launch plan and by append. The local queue file is checked against the
whole fleet (names must be unique everywhere); each cell is rendered into its one-line
shell command with the box's HOME, as a ``cells.tsv`` line; and cells already deployed
must match their new render exactly, or the same index would run something else.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass

from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.queue_file import (
    QueueCell,
    epochs_note,
    expand_home,
    render_command,
)
from rgt_tui.domain.queue_records import DeployedCell, cells_tsv_line
from rgt_tui.services.queue.check import check_fleet_queues, host_problems


@dataclass(frozen=True)
class PlannedCell:
    """One cell as it will run: where it came from and the exact command."""

    index: int
    name: str
    cfg: str
    task: str
    epochs: int
    where: str  # file:line
    command: str
    deployed: bool  # already in the box's cells.tsv
    status: str | None  # its state on the box now (pending, done, …), None if not deployed
    epochs_note: str = ""  # the epochs passed and their source (domain.queue_file.epochs_note)


_SHOWN_CELLS = 3  # cells a mismatch refusal names


@dataclass(frozen=True)
class RenderedQueue:
    """The local queue file's exact text, its cells, and their ``cells.tsv`` lines."""

    text: str
    cells: tuple[QueueCell, ...]
    lines: tuple[str, ...]
    notes: tuple[str, ...] = ()  # each cell's epochs_note, in order

    def command(self, index: int) -> str:
        """The rendered shell command of cell ``index``."""
        return self.lines[index].split("\t", 2)[2].rstrip("\n")

    def planned(
        self, deployed: int, status: Mapping[str, str] | None = None
    ) -> tuple[PlannedCell, ...]:
        """Every cell as a PlannedCell; the first ``deployed`` are already on the box."""
        status = status or {}
        return tuple(
            PlannedCell(
                i,
                c.name,
                c.cfg,
                c.task,
                c.epochs,
                c.where,
                self.command(i),
                i < deployed,
                status.get(c.name) if i < deployed else None,
                self.notes[i] if i < len(self.notes) else "",
            )  # fmt: skip
            for i, c in enumerate(self.cells)
        )

    def mismatch(self, deployed: tuple[DeployedCell, ...]) -> list[str]:
        """Cells on the box whose name or command differ from this render, as text lines."""
        out = []
        for cell in deployed:
            theirs = cells_tsv_line(cell.index, cell.name, cell.command)
            if cell.index < len(self.lines) and self.lines[cell.index] == theirs:
                continue
            now = "(gone)"
            if cell.index < len(self.lines):
                now = f"{self.cells[cell.index].name}: {self.command(cell.index)}"
            out.append(f"  cell {cell.index} on the box: {cell.name}: {cell.command}")
            out.append(f"  cell {cell.index} now:        {now}")
        return out

    def mismatch_problem(self, host: str, deployed: tuple[DeployedCell, ...]) -> str | None:
        """Why a launch or an append is refused when cells on the box differ from this
        render (the run template or durable_dir changed), with both ways out; None when
        they all match. One text for both: an append once named no way out."""
        mismatch = self.mismatch(deployed)
        if not mismatch:
            return None
        # Two lines a cell: the first few name it (a 200-cell queue listed them all, in a
        # toast of 400 lines: a user's hour).
        if len(mismatch) > 2 * _SHOWN_CELLS:
            more = len(mismatch) // 2 - _SHOWN_CELLS
            mismatch = [*mismatch[: 2 * _SHOWN_CELLS], f"  … and {more} more cells differ"]
        return (
            "cells already on the box no longer match the queue file and run template "
            "(the same index must always run the same command): put the template back "
            "as it was, or start over on the command line with rgt-tui launch "
            f"{host} --fresh (the Launch dialog has no --fresh; the done cells run "
            "again, their records kept aside):\n" + "\n".join(mismatch)
        )


async def read_local_queue(
    fleet: Fleet, host: HostConfig
) -> tuple[list[str], tuple[QueueCell, ...], str]:
    """This host's problems, cells and exact text, checked against the whole fleet.

    The cells are every slot, ``#moved-to`` lines included: cell k must stay line k of
    the box's ``cells.tsv`` (the box skips a moved cell; services.queue.move).
    """
    checked = await asyncio.to_thread(check_fleet_queues, fleet)
    problems = host_problems(fleet, host, checked)
    source = checked.source_for(host.name)
    if source is None or source.text is None:
        return problems, (), ""
    return problems, source.parsed.slots, source.text


def unsent_moved(host: HostConfig, cells: tuple[QueueCell, ...], deployed: int) -> list[str]:
    """A ``#moved-to`` line the box does not hold yet would be sent and run: refuse it.

    Only a line already on the box becomes a ``#moved-to`` line (its box then skips the
    cell); one that is not there (never sent, or a ``--fresh`` launch) is deleted instead.
    """
    return [
        f"{c.where}: cell {i} ({c.name}) is marked '#moved-to {c.moved_to}' but {host.name}'s box "
        f"does not hold it — delete that line (the cell is {c.moved_to}'s now)"
        for i, c in enumerate(cells)
        if c.moved_to and i >= deployed
    ]


def render_queue(
    host: HostConfig, cells: tuple[QueueCell, ...], text: str, home: str
) -> RenderedQueue:
    """Render every cell with the host's ``run`` template; ``home`` is the box's HOME."""
    assert host.run is not None
    durable = expand_home(host.durable_dir, home)
    lines = tuple(
        cells_tsv_line(i, c.name, render_command(host.run, c, durable)) for i, c in enumerate(cells)
    )
    notes = tuple(epochs_note(host.run, c) for c in cells)
    return RenderedQueue(text, cells, lines, notes)
