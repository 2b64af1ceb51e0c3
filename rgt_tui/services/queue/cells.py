"""A host's cells as its box will run them: read, rendered, compared with the box's copy.

Shared by the launch plan and by append. The local queue file is checked against the
whole fleet (names must be unique everywhere); each cell is rendered into its one-line
shell command with the box's HOME, as a ``cells.tsv`` line; and cells already deployed
must match their new render exactly, or the same index would run something else.
"""

from __future__ import annotations

import asyncio
import shlex
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
        moved = self.moved_out(deployed)
        if moved is not None:
            # durable_dir alone changed (a preflight disk fix followed): "put the template
            # back" blamed a setting never touched (s38 spot hour #3).
            was, now = moved
            what = (
                f"durable_dir changed since these cells were sent: their output folder was "
                f"under {was} on the box and is now under {now}, so the same index would "
                f"run another command: set durable_dir back to {was} for this queue"
            )
        else:
            what = (
                "cells already on the box no longer match the queue file and run template "
                "(the same index must always run the same command): put the template back "
                "as it was"
            )
        return (
            f"{what}, or start over: rgt-tui launch {host} --fresh, or Start over in the "
            "Launch dialog (L) (the done cells run again, their records kept aside):\n"
            + "\n".join(mismatch)
        )

    def moved_out(self, deployed: tuple[DeployedCell, ...]) -> tuple[str, str] | None:
        """(the folder the box's cells wrote under, the one they would now) when every
        differing cell differs only there: durable_dir changed; None otherwise."""
        found: set[tuple[str, str]] = set()
        for cell in deployed:
            if cell.index >= len(self.lines):
                return None
            now = self.command(cell.index)
            if now == cell.command:
                continue
            if self.cells[cell.index].name != cell.name:
                return None
            pair = _out_change(cell.command, now, cell.name)
            if pair is None:
                return None
            found.add(pair)
        return found.pop() if len(found) == 1 else None


def _out_change(before: str, after: str, name: str) -> tuple[str, str] | None:
    """(old parent, new parent) when ``after`` is ``before`` with the cell's output folder
    ``<parent>/<name>`` under another parent, and nothing else changed; else None."""
    tail = "/" + name
    for word in shlex.split(before) if _splits(before) else ():
        if not word.endswith(tail):
            continue
        old_parent = word[: -len(tail)]
        for other in shlex.split(after) if _splits(after) else ():
            if other.endswith(tail) and other != word:
                new_parent = other[: -len(tail)]
                if before.replace(shlex.quote(word), shlex.quote(other)) == after:
                    return old_parent, new_parent
                if before.replace(word, other) == after:
                    return old_parent, new_parent
    return None


def _splits(command: str) -> bool:
    try:
        shlex.split(command)
    except ValueError:
        return False
    return True


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
