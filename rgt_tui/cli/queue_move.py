"""`rgt-tui queue move CELL... --to HOST` (a row of table.py): the twin of the Queue tab's
"Move cells…" dialog.

The cells' names say which host they are on (names are unique across the fleet). The
plan is printed; a move of cells the source box holds asks first, naming them, because
that box must then skip them (``--yes`` off a terminal, as ``launch`` does).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rgt_tui.cli.exit_codes import EXIT_BAD_INPUT, EXIT_OK, EXIT_PROBLEMS
from rgt_tui.cli.prompt import confirmed
from rgt_tui.cli.runner import Call

if TYPE_CHECKING:
    from rgt_tui.services.queue.move import MovePlan


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


def format_move(plan: MovePlan) -> str:
    """The plan as text: each cell, what happens to its line, warnings and refusals."""
    from rgt_tui.services.queue.move import plan_lines

    head = f"Move from {plan.source} to {plan.dest}"
    return "\n".join([head, *(f"  {line}" for line in plan_lines(plan))])


def run_move(call: Call) -> int:
    """Plan the move, show it, ask when the box must skip cells, move."""
    from rgt_tui.services.queue.move import MoveError, apply_move, find_source, plan_move

    args = call.args
    if args.to not in {h.name for h in call.fleet.hosts}:
        known = ", ".join(h.name for h in call.fleet.hosts) or "none"
        return call.fail(f"no host named {args.to!r} (known: {known})", code=EXIT_BAD_INPUT)
    try:
        call.host_config = find_source(call.fleet, args.cells)
    except MoveError as exc:
        return call.fail(str(exc))
    host = call.host
    plan = call.on_host(lambda t: plan_move(call.fleet, host, args.cells, args.to, t))
    print(format_move(plan))
    if not plan.ok:
        return EXIT_PROBLEMS
    if plan.on_box:
        names = ", ".join(c.name for c in plan.on_box)
        declined = confirmed(
            call,
            f"Move {names} to {plan.dest}? {host.name}'s box will skip them.",
            verb="move",
            why=f"{host.name}'s box holds {names} and must skip them; ",
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
    print(f"run them: rgt-tui queue append {plan.dest} (or rgt-tui launch {plan.dest})")
    return EXIT_OK
