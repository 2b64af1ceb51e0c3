"""`launch` (a row of table.py): plan a host's queue, show the plan, ask, launch.

The scriptable twin of the launch dialog (``screens/launch_confirm.py``): the same
services (``services.queue.launch`` through the host's backend), printed as text. Exit
codes (exit_codes.py): 0 launched, 1 refused or failed, 2 bad input.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rgt_tui.cli.exit_codes import EXIT_BAD_INPUT, EXIT_OK, EXIT_PROBLEMS
from rgt_tui.cli.prompt import confirmed
from rgt_tui.cli.runner import Call, interrupted_saying
from rgt_tui.domain.config import PREFLIGHT_CHECKS
from rgt_tui.domain.text import pad
from rgt_tui.domain.units import plural
from rgt_tui.services.connect import Transport
from rgt_tui.services.credentials import plan_line

if TYPE_CHECKING:  # the services load lazily, so `rgt-tui status` does not pay for them
    from collections.abc import Iterable

    from rgt_tui.domain.preflight import PreflightReport
    from rgt_tui.services.queue.launch import LaunchPlan, LaunchResult


def add_launch_arguments(parser: argparse.ArgumentParser) -> None:
    """``--start``, ``--yes``, ``--detach``, ``--fresh`` and ``--ack``."""
    parser.add_argument(
        "--start",
        type=int,
        default=None,
        metavar="N",
        help="first cell index (default: where the queue stopped, else its first cell not "
        "done, else 0)",
    )
    parser.add_argument("--yes", action="store_true", help="launch without asking")
    parser.add_argument(
        "--detach",
        choices=("auto", "tmux", "nohup"),
        default="auto",
        help="default: tmux when the box has it",
    )
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="move the box's previous queue aside and start a new one",
    )
    parser.add_argument(
        "--ack",
        action="append",
        default=[],
        metavar="CHECK",
        help="launch although preflight check CHECK failed (repeatable; one of "
        f"{', '.join(PREFLIGHT_CHECKS)})",
    )


def format_plan(plan: LaunchPlan) -> str:
    """The launch plan as the confirmation text."""
    lines = [f"Launch plan for {plan.host}"]
    if plan.detach:
        lines.append(
            f"  detach {plan.detach}"
            + {"tmux": f" (tmux session {plan.session})", "nohup": " (setsid nohup)"}.get(
                plan.detach, ""
            )
            + f" · start index {plan.start_index} · {len(plan.runs)} of {len(plan.cells)} cells to run"
        )
        lines.append(f"  workdir {plan.workdir} · records in {plan.box_queue_dir}")
        if plan.credentials:
            lines.append(f"  credentials: {plan_line(plan.credentials)}")
        lines += [f"  {note}" for note in plan.notes]  # a Slurm host: the array, its limits
    runs = {c.index for c in plan.runs}
    for c in plan.cells:
        mark = ">" if c.index in runs else " "
        state = c.status or ("new" if not c.deployed else "pending")
        lines.append(
            f"  {mark}{c.index:>3}  {pad(c.name, 28)} {c.task:<16} [{state}]  {c.where} · {c.epochs_note}"
        )
        if c.index in runs:
            lines.append(f"        $ {c.command}")
    from rgt_tui.services.queue.launch_preflight import is_preflight_problem

    lines += preflight_lines(plan)
    # Preflight's failures are listed above with their detail and fix: one line each
    # here would say it all again. The rest as the plan gives them.
    lines += [f"  warning: {w}" for w in plan.warnings if not is_preflight_problem(w)]
    lines += [f"  REFUSED: {p}" for p in plan.problems if not is_preflight_problem(p)]
    # A certain failure is refused above, in its own words: no --ack is offered for it.
    certain = {c.name for c in plan.preflight.checks if c.certain} if plan.preflight else set()
    waiting = [name for name in plan.unacknowledged if name not in certain]
    if waiting:
        acks = " ".join(f"--ack {name}" for name in waiting)
        lines.append(
            f"  REFUSED: preflight check{'s' if len(waiting) > 1 else ''} {', '.join(waiting)} "
            f"failed — fix the box, or launch anyway with {acks}"
        )
    return "\n".join(lines)


def preflight_lines(plan: LaunchPlan, *, refusing_only: bool = False) -> list[str]:
    """The plan's preflight checks (a failed one with its detail and fix, an acknowledged
    one marked) and the code identity each cell will record (U42). ``refusing_only``:
    only the failed checks not acknowledged, and nothing at all when none is (a retry's
    plan, whose other lines say the rest)."""
    report = plan.preflight
    if report is None:
        return ["  preflight: not run"] if plan.detach and not refusing_only else []
    return report_lines(report, (*plan.acks, *plan.host_acks), refusing_only=refusing_only)


def report_lines(
    report: PreflightReport, acks: Iterable[str], *, refusing_only: bool = False
) -> list[str]:
    """A preflight report's lines with ``acks`` acknowledged, as ``preflight_lines`` says
    (a resume move's target prints its own: ``queue move``)."""
    acked = set(acks)
    if refusing_only and not any(not c.ok and c.name not in acked for c in report.checks):
        return []
    lines = [f"  preflight on {report.host}:"]
    # The name column fits the longest name (a group's same-stack, rendezvous; a Slurm
    # host's signal-lead), so every mark and detail lines up (ux-h #16).
    width = max((len(c.name) for c in report.checks), default=0)
    for c in report.checks:
        if refusing_only and (c.ok or c.name in acked):
            continue
        if not c.ran:
            mark = "not run"
        elif c.ok:
            mark = "ok"
        elif c.name in acked and not c.certain:  # a certain one no --ack settles (s23c #8)
            mark = "ACKNOWLEDGED"
        else:
            mark = "FAILED"
        lines.append(f"    {c.name:<{width}} {mark:<12} {c.detail}")
        # An acknowledged check's fix is done already: its "preflight_ack = [...]" was
        # printed as if still to do (hour s19a #14).
        if not c.ok and c.fix and (c.name not in acked or c.certain):
            lines.append(f"    {'':<{width}} {'':<12} fix: {c.fix}")
    if report.code is not None and not refusing_only:
        lines.append(f"  code recorded with each cell: {report.code.short()}")
    return lines


# Ctrl-C: at the question nothing was sent; after it, the box may have started.
launch_interrupted = interrupted_saying(
    lambda name: (
        "nothing is launched unless the question was answered yes before it — "
        f"rgt-tui queue show {name} says whether the queue runs"
    )
)


def run_launch(call: Call) -> int:
    """Plan, show the plan, ask (unless --yes), launch.

    No connection is held while a person decides: one plans (and, with --yes, launches),
    a fresh one launches after the answer. The box re-checks under its lock that the
    plan still holds, so a plan gone stale meanwhile is refused, not run.
    """
    from rgt_tui.domain.errors import HostKeyError, TransportError
    from rgt_tui.domain.queue_state import DONE, cell_span
    from rgt_tui.services.box_ctl import QueueError
    from rgt_tui.services.queue.backends import backend_for
    from rgt_tui.services.queue.launch import default_start
    from rgt_tui.services.queue.launch_acks import launch_recorded

    args, host = call.args, call.host
    if args.start is not None and args.start < 0:
        return call.fail("--start must be 0 or more", code=EXIT_BAD_INPUT)
    backend = backend_for(host)

    unrecorded = ""
    sent = False  # the launch itself began on the box (not only its plan)

    async def recorded(plan: LaunchPlan, transport: Transport) -> LaunchResult:
        # What the launch acknowledged goes with it: its retries go ahead on it.
        nonlocal unrecorded, sent
        sent = True
        result, unrecorded = await launch_recorded(call.fleet, backend, plan, transport)
        return result

    async def planned(transport: Transport, start: int, *, preflight: bool = True) -> LaunchPlan:
        return await backend.plan_launch(
            call.fleet, transport, start_index=start, detach=args.detach,
            fresh=args.fresh, acks=args.ack, preflight=preflight,
        )  # fmt: skip

    async def plan_then_launch(transport: Transport) -> tuple[LaunchPlan, LaunchResult | None]:
        if args.start is None:
            # As the launch dialog: from where the queue stopped, or past its last done
            # cell (earlier would run done cells again: paid work), over the same
            # connection; the records alone decide it, so preflight runs once, for that.
            start = default_start(await planned(transport, 0, preflight=False))
        else:
            start = args.start
        plan = await planned(transport, start)
        print(format_plan(plan))
        if not (plan.ok and args.yes):
            return plan, None
        again = [c.index for c in plan.cells[plan.start_index :] if c.status == DONE]
        if args.start is None and again:
            # --yes alone never runs done cells again (h472 #2: a finished queue ran every
            # cell into its {out} once more): a start typed says the user means it, as
            # Shift+Tab to Launch does in the dialog.
            raise QueueError(
                host.name,
                f"not launched: {cell_span(again, 'is', 'are')} done and would run again into "
                f"{'its' if len(again) == 1 else 'their'} {{out}} — to mean it, name the start: "
                f"rgt-tui launch {host.name} --start {plan.start_index} --yes (or rgt-tui queue "
                f"retry {host.name} CELL --done, which sets a cell's old outputs aside first)",
            )
        return plan, await recorded(plan, transport)

    try:
        plan, result = call.on_host(plan_then_launch)
        if not plan.ok:
            return EXIT_PROBLEMS
        if result is None:
            question = f"Launch {plural(len(plan.runs), 'cell')} on {host.name}?"
            declined = confirmed(call, question, verb="launch", declined="not launched")
            if declined is not None:
                return declined
            result = call.on_host(lambda transport: recorded(plan, transport))
    except QueueError as exc:
        return call.fail(str(exc))
    except TransportError as exc:
        if isinstance(exc, HostKeyError) or (not args.fresh and (exc.fix or not sent)):
            raise  # the runner's message and fix (nothing was sent: review h526 #1)
        if not args.fresh:
            # Lost while the box ran the launch: it may have begun there (h521 #4:
            # "unreachable: connection lost" and nothing more, after .rgt/queue was
            # written there).
            return call.fail(
                f"{host.name} unreachable: {exc.message}",
                fix=f"whether the queue started is not known: rgt-tui queue show {host.name} "
                "says, once it answers; launch again then (a queue already running is "
                "refused, never run twice)",
            )
        # The box sets the old queue aside first: a drop after that read as an empty
        # queue where the finished cells had been (s36 faults #2).
        return call.fail(
            f"{host.name} unreachable: {exc.message}",
            fix=f"--fresh may have set the box's old queue aside already (in "
            f"~/.rgt/queue.archived.<time> on the box, nothing deleted): rgt-tui queue show "
            f"{host.name} says what the box holds; launch again once it answers",
        )
    if result.archived:
        print(f"previous queue moved to {result.archived}")
    if result.credentials:  # an earlier launch's credentials.env was removed (U34)
        print(result.credentials)
    if unrecorded:
        print(unrecorded)
    where = f"tmux session {result.session}" if result.detach == "tmux" else "setsid nohup"
    if result.detach == "slurm":  # the pid is the array's job id
        print(
            f"submitted on {host.name}: array job {result.pid} ({result.session}), from cell {result.start_index}"
        )
    else:
        print(
            f"launched on {host.name}: runner pid {result.pid} ({where}), from cell {result.start_index}"
        )
    print(f"follow it: rgt-tui queue show {host.name}")
    return EXIT_OK
