"""Step 4 of a resume move (``services.queue.resume``): how the target runs the moved cell.

A running queue there gets the cell appended; an idle one is launched from it — from
the target's own cells that never ran just before it, when there are some, so they are
not left pending behind it (ux-h 14), unless the user stopped that queue: then they stay
pending, said, with the launch that runs them. The plan says which of these will happen
from the target's queue as last read (``plan_words``: an idle queue the move launches,
running the target's own pending cells too, is said as such); the move does it and says
what it did (``run_on_target``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.queue_state import PENDING, Q_RUNNING, RETRY, USER_STOPPED
from rgt_tui.services.box_ctl import QueueError
from rgt_tui.services.queue.move import MovedNotRun, MoveError
from rgt_tui.transport import Transport

# When the target's queue cannot be read at plan time: the rule, not this case.
GENERAL_RULE = (
    "then {dest} runs {cell} under its name: appended to its running queue, or its queue "
    "launched from it — its own cells that never ran first, unless a done, failed or "
    "killed cell lies between (never run again unattended: they stay pending) or the user "
    "stopped its queue (preflight as any launch)"
)


@dataclass(frozen=True)
class _Slot:
    """A cell of the target's queue as the plan reads it: its index, name and state."""

    index: int
    name: str
    status: str | None  # None: not on the box yet (never ran)


def _never_ran_tail(cells: Sequence[_Slot]) -> list[_Slot]:
    """The cells at the end of ``cells`` (those before the moved cell) that never ran
    (pending, or not yet on the box), with nothing between them and the moved cell that
    would run a second time (a done, failed or killed cell: never rerun unattended).
    Moved-away and skipped cells are passed over, as the runner passes them."""
    from rgt_tui.services.queue.launch import NOT_RUN

    tail: list[_Slot] = []
    for c in reversed([c for c in cells if c.status not in NOT_RUN]):
        if c.status not in (None, PENDING):
            break
        tail.insert(0, c)
    return tail


def _retries_words(retries: Sequence[_Slot]) -> str:
    """``; its cell 2 (bad2), waiting for a retry, runs first`` ("" when none waits): the
    runner runs a waiting retry before any cell, also on a queue the user stopped (an
    unattended move ran one and said nothing: a user's hour, s21a #4)."""
    if not retries:
        return ""
    one = len(retries) == 1
    named = ", ".join(f"{c.index} ({c.name})" for c in retries)
    return (
        f"; its {'cell' if one else 'cells'} {named}, waiting to run again, "
        f"{'runs' if one else 'run'} first"
    )


def _launch_words(
    target: str,
    name: str,
    start: int,
    waiting: list[_Slot],
    stopped: bool,
    retries: Sequence[_Slot] = (),
) -> str:
    return _launch_only(target, name, start, waiting, stopped) + _retries_words(retries)


def _launch_only(target: str, name: str, start: int, waiting: list[_Slot], stopped: bool) -> str:
    said = f"{target}'s queue launched from cell {start}"
    own = ("cell " if len(waiting) == 1 else "cells ") + ", ".join(
        f"{c.index} ({c.name})" for c in waiting
    )
    if waiting and not stopped:
        return f"{said}: its own pending {own} first, then {name}"
    if waiting:
        return (
            f"{said} ({name}); its own pending {own} before it "
            f"stay{'s' if len(waiting) == 1 else ''} pending, as its queue was stopped by the user — rgt-tui launch "
            f"{target} --start {waiting[0].index} runs them ({name} then runs again, "
            "from its newest checkpoint)"
        )
    return f"{said} ({name})"


def _idle_words(target: str, name: str, start: int, waiting: Sequence[_Slot]) -> str:
    """The plan's words when the move launches ``target``'s idle queue and so runs its
    own pending cells before ``name`` too: ``box2's queue is idle: the move launches it
    from cell 0, running its 2 other pending cells too (a, b), then ck``. Said as what
    the move sets going (hour s25a #7: "its queue launched from cell 0: its own pending
    cells … first" did not read as the move starting them)."""
    one = len(waiting) == 1
    return (
        f"{target}'s queue is idle: the move launches it from cell {start}, running its "
        f"{len(waiting)} other pending {'cell' if one else 'cells'} too "
        f"({', '.join(c.name for c in waiting)}), then {name}"
    )


def _running_words(target: str) -> str:
    return f"{target}'s running queue runs it after its current cells"


async def plan_words(
    fleet: Fleet, target: HostConfig, transport: Transport, name: str
) -> tuple[str, int]:
    """The plan's line for how ``target`` will run cell ``name`` once it is appended to
    its queue file: this target's case, read now; the general rule when its queue cannot
    be read. The move's own words afterwards are exact (``run_on_target``). With it, how
    many of the target's own cells the launch runs first (paid: the dialog's Enter says
    so)."""
    from rgt_tui.services.queue.cells import read_local_queue
    from rgt_tui.services.queue.launch import MOVED
    from rgt_tui.services.queue.view import read_queue_view

    try:
        view = await read_queue_view(target, transport)
        _, slots, _ = await read_local_queue(fleet, target)
    except (TransportError, QueueError, OSError):
        return GENERAL_RULE.format(dest=target.name, cell=name), 0
    if view.state == Q_RUNNING:
        return f"then {_running_words(target.name)} (appended)", 0
    on_box = {c.name: c.status for c in view.cells}
    cells = [
        _Slot(i, c.name, MOVED if c.moved_to else on_box.get(c.name)) for i, c in enumerate(slots)
    ]
    waiting = _never_ran_tail(cells)
    stopped = view.state == USER_STOPPED
    own_first = bool(waiting) and not stopped  # the launch runs the target's own cells first
    start = waiting[0].index if own_first else len(slots)
    retries = [c for c in cells if c.status == RETRY and c.index < start]
    if own_first:
        words = _idle_words(target.name, name, start, waiting) + _retries_words(retries)
    else:
        words = _launch_words(target.name, name, start, waiting, stopped, retries)
    # The launch's preflight runs when the move is made: a failed check refuses that
    # launch while the move stands (a user's hour read "preflight as any launch" in the
    # command line's plan, answered y, and only then met a failed check: hour s17a #9).
    words = f"then {words}, after its preflight (a failed check stops the launch, not the move)"
    return words, len(waiting) if own_first else 0


async def run_on_target(
    fleet: Fleet, target: HostConfig, transport: Transport, name: str, acks: Iterable[str]
) -> str:
    """Run the moved cell on the target, through its backend (a box's runner, a Slurm
    array, every rank of a group): append to a running queue, else launch from it (from
    its own cells that never ran just before it). How, in words.

    Through ``backend_for`` and never the box runner's functions directly: a move to a
    Slurm host ran the cell in tmux on the login node, outside Slurm, and a move to a
    group rendered the group's template as one box's (KeyError 'nnodes') after both queue
    files were rewritten (hour s18b #1, #2)."""
    from rgt_tui.services.queue.backends import backend_for
    from rgt_tui.services.queue.cells import read_local_queue
    from rgt_tui.services.queue.scheduler import Appendable, JobGated, Launchable, lacks

    backend = backend_for(target)
    if not isinstance(backend, Appendable) or not isinstance(backend, Launchable):
        raise MoveError(
            f"{name} is {target.name}'s now (its line is in {target.name}'s queue file), but it cannot run it: "
            + lacks(backend, "append or launch")
        )
    try:
        appended = await backend.append_cells(fleet, transport)
        if appended.running:
            # A scheduler's append submits the cell (Slurm: a new array): its words.
            if isinstance(backend, JobGated):
                return f"{target.name} took it: {appended.detail}"
            return _running_words(target.name)
    except QueueError as exc:
        if "launch it first" not in exc.message:
            raise MovedNotRun(
                f"{name} is {target.name}'s now, but appending it failed: {exc.message} — "
                f"launch it: rgt-tui launch {target.name}"
            ) from exc
    _, slots, _ = await read_local_queue(fleet, target)
    index = max(i for i, c in enumerate(slots) if c.name == name and not c.moved_to)
    plan = await backend.plan_launch(fleet, transport, start_index=index, acks=acks)
    waiting = _never_ran_tail([_Slot(c.index, c.name, c.status) for c in plan.cells[:index]])
    stopped = plan.current is not None and plan.current.state == USER_STOPPED
    if waiting and not stopped:
        plan = await backend.plan_launch(fleet, transport, start_index=waiting[0].index, acks=acks)
    if not plan.ok:
        raise MovedNotRun(
            f"{name} is {target.name}'s now (its line is in {target.name}'s queue file), but the launch was refused:\n"
            + "\n".join(plan.problems)
            + f"\nfix that, then: rgt-tui launch {target.name} --start {plan.start_index}"
        )
    await backend.launch(plan, transport)
    retries = [_Slot(c.index, c.name, c.status) for c in plan.runs if c.index < plan.start_index]
    return _launch_words(target.name, name, plan.start_index, waiting, stopped, retries)
