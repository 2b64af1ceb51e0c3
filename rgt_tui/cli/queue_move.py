"""`rgt-tui queue move CELL... --to HOST` (a row of table.py): the twin of the Queue tab's
"Move cells…" dialog.

The cells' names say which host they are on (names are unique across the fleet). The
plan is printed; a move of cells the source box holds asks first, naming them, because
that box must then skip them (``--yes`` off a terminal, as ``launch`` does).

One cell that ran and did not finish (interrupted, killed, failed, preempted, or on a box
that no longer answers) is a resume move (``services.queue.resume``): its files pulled
and verified here are pushed to HOST, checked by hash there, and HOST runs it from its
last verified checkpoint. Without one, ``--from-scratch`` says the run starts over.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rgt_tui.cli.args import find_host
from rgt_tui.cli.exit_codes import EXIT_BAD_INPUT, EXIT_OK, EXIT_PROBLEMS
from rgt_tui.cli.prompt import confirmed
from rgt_tui.cli.runner import Call
from rgt_tui.domain.units import plural

if TYPE_CHECKING:
    from rgt_tui.services.connect import Transport
    from rgt_tui.services.queue.move import MovePlan
    from rgt_tui.services.queue.resume import ResumePlan


def add_move_arguments(parser: argparse.ArgumentParser) -> None:
    """CELLs, ``--to HOST`` and ``--yes``."""
    parser.add_argument("cells", nargs="+", metavar="CELL", help="the cells to move (names)")
    parser.add_argument(
        "--to", required=True, metavar="HOST", help="the host whose queue file gets them"
    )
    parser.add_argument(
        "--yes",
        action="store_true",
        help="move without asking (cells the box holds are skipped there)",
    )
    parser.add_argument(
        "--from-scratch",
        action="store_true",
        help="move an unfinished cell that has no verified checkpoint here: the run starts over",
    )
    parser.add_argument(
        "--ack",
        action="append",
        default=[],
        metavar="CHECK",
        help="acknowledge a failed preflight check of HOST's launch by name (repeatable)",
    )


def format_move(plan: MovePlan) -> str:
    """The plan as text: each cell, what happens to its line, warnings and refusals."""
    from rgt_tui.services.queue.move import plan_lines

    head = f"Move from {plan.source} to {plan.dest}"
    return "\n".join([head, *(f"  {line}" for line in plan_lines(plan))])


def format_resume(plan: ResumePlan) -> str:
    """A resume move's plan as text: checkpoint, repeat, push, line, refusals."""
    from rgt_tui.services.queue.resume import resume_lines

    head = f"Move {plan.cell} from {plan.move.source} to {plan.move.dest}"
    return "\n".join([head, *(f"  {line}" for line in resume_lines(plan))])


def run_move(call: Call) -> int:
    """Plan the move, show it, ask when the box must skip cells, move."""
    from rgt_tui.services.connect import host_connection
    from rgt_tui.services.queue.move import (
        MoveError,
        NotACellError,
        apply_move,
        find_source,
        plan_move,
        run_moved_hint,
    )

    args = call.args
    find_host(call.fleet, args.to)  # UnknownHost: every command's message and fix (exit 2)
    try:
        call.host_config = find_source(call.fleet, args.cells)
    except MoveError as exc:  # a name that is no cell is bad input, as kill's and retry's
        bad = isinstance(exc, NotACellError)
        return call.fail(str(exc), code=EXIT_BAD_INPUT if bad else EXIT_PROBLEMS)
    if len(dict.fromkeys(args.cells)) == 1:
        return _run_resume(call)
    if args.from_scratch:
        return call.fail("--from-scratch moves one cell: name one", code=EXIT_BAD_INPUT)
    host = call.host

    async def planned(t: Transport) -> MovePlan:
        # The target's box is asked for the cells' configs (a warning: h471 #11).
        async with host_connection(call.fleet.host(args.to)) as t2:
            return await plan_move(call.fleet, host, args.cells, args.to, t, target_transport=t2)

    plan = call.on_host(planned)
    print(format_move(plan))
    if not plan.ok:
        return EXIT_PROBLEMS
    if plan.on_box:
        names = ", ".join(c.name for c in plan.on_box)
        them = "them" if len(plan.on_box) > 1 else "it"
        declined = confirmed(
            call,
            f"Move {names} to {plan.dest}? {host.name}'s box will skip {them}.",
            verb="move",
            why=f"{host.name}'s box holds {names} and must skip {them}; ",
            declined="not moved",
        )
        if declined is not None:
            return declined
    try:
        result = call.on_host(lambda t: apply_move(plan, host, t))
    except MoveError as exc:
        return call.fail(str(exc))
    moved = ", ".join(c.name for c in plan.cells)
    print(f"moved {moved} from {plan.source} to {plan.dest}")
    if result.skipped:
        print(f"{plan.source}'s box skips {', '.join(result.skipped)}; its outputs there stay")
    for said in result.origins:
        print(said)
    print(run_moved_hint(plan.dest, len(plan.cells)))
    return EXIT_OK


def _run_resume(call: Call) -> int:
    """One cell: a resume move when it ran (its verified files go with it), else the
    plain move of a line."""
    from rgt_tui.cli.launch import report_lines
    from rgt_tui.services.connect import host_connection
    from rgt_tui.services.queue.move import MoveError
    from rgt_tui.services.queue.resume import resume_move
    from rgt_tui.services.queue.resume_preflight import ResumeDialogPlan, plan_resume_with_preflight

    args, host = call.args, call.host
    target = call.fleet.host(args.to)
    name = args.cells[0]

    async def plan(t: Transport) -> ResumeDialogPlan:
        async with host_connection(target) as t2:
            return await plan_resume_with_preflight(
                call.fleet, host, name, args.to, t, t2, from_scratch=args.from_scratch,
                acks=args.ack,
            )  # fmt: skip

    checked = call.on_host(plan)
    planned, pf = checked.plan, checked.preflight
    print(format_resume(planned))
    if not planned.ok:
        return EXIT_PROBLEMS
    # The target's launch preflight, before anything moves (the TUI's dialog shows it with
    # its plan): found only after the move, a failed check left the cell moved and not
    # running on an idle, billing box (s36 acts hour #5).
    if pf is not None and pf.error:
        print(f"  {pf.error}")
    elif pf is not None and pf.report is not None:
        print("\n".join(report_lines(pf.report, pf.acknowledged)))
    if not checked.ok and pf is not None:
        waiting = pf.unacknowledged
        acks = " ".join(f"--ack {c}" for c in waiting)
        return call.fail(
            f"{args.to}'s launch would refuse {name}: preflight check "
            f"{', '.join(waiting)} failed — fix it on {args.to}, or move anyway with {acks}; "
            "nothing was moved"
        )
    if planned.ran or planned.move.on_box:
        if planned.ran:
            what = (
                f"push {plural(len(planned.files), 'verified file')} to {args.to} and run {name} there"
                if planned.files
                else f"run {name} on {args.to} from the start"
            )
            question, why = f"{what[0].upper()}{what[1:]}?", f"the move would {what}; "
        else:
            question = f"Move {name} to {args.to}? {host.name}'s box will skip it."
            why = f"{host.name}'s box holds {name} and must skip it; "
        declined = confirmed(call, question, verb="move", why=why, declined="not moved")
        if declined is not None:
            return declined

    async def move(t: Transport):  # type: ignore[no-untyped-def]
        async with host_connection(target) as t2:
            return await resume_move(planned, call.fleet, host, t, t2, acks=args.ack)

    try:
        result = call.on_host(move)
    except MoveError as exc:
        return call.fail(str(exc))
    print(f"moved {name} from {planned.move.source} to {planned.move.dest}")
    if result.moved.skipped:
        print(f"{planned.move.source}'s box skips {name}; its outputs there stay")
    if planned.files:
        print(f"pushed {plural(len(planned.files), 'verified file')} to {args.to}:{result.out}")
    print(result.queued)
    return EXIT_OK
