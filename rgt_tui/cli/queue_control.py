"""`rgt-tui queue stop|kill|retry HOST …`: the queue-control keys' twins (rows of table.py).

Each reads the box first and says what it is about to do, naming the cell; asks (a
terminal) or needs ``--yes`` (no terminal), as ``launch`` does; then acts on a fresh
connection: no connection is held while a person decides. Exit codes: 0 done; 1
refused (nothing running, a cell that cannot be retried), answered no, or a kill the
check did not see end; 2 bad arguments, a name that is no cell of the queue (the
box's or the local queue file's), or no terminal to ask.
"""

from __future__ import annotations

import argparse
import shlex
from typing import TYPE_CHECKING

from rgt_tui.cli.exit_codes import EXIT_BAD_INPUT, EXIT_OK, EXIT_PROBLEMS
from rgt_tui.cli.prompt import confirmed
from rgt_tui.cli.runner import Call
from rgt_tui.domain.config import PREFLIGHT_CHECKS
from rgt_tui.domain.queue_state import RUNNING, QueueView, queue_is
from rgt_tui.domain.rank_control import rank_control_refusal
from rgt_tui.domain.text import pad, printable
from rgt_tui.domain.units import fmt_duration, plural
from rgt_tui.services.connect import Transport

if TYPE_CHECKING:
    from rgt_tui.services.queue.control import RetryPlan


def add_yes(parser: argparse.ArgumentParser) -> None:
    """``--yes`` alone."""
    parser.add_argument("--yes", action="store_true", help="do it without asking")


def add_kill_arguments(parser: argparse.ArgumentParser) -> None:
    """CELL (optional), ``--then``, ``--grace``, ``--yes``."""
    parser.add_argument("cell", nargs="?", metavar="CELL", help="the running cell (default: it)")
    parser.add_argument(
        "--then",
        choices=("next", "stop"),
        default="next",
        help="after the kill: go on to the next cell (default) or stop the queue",
    )
    parser.add_argument(
        "--grace", type=int, default=10, metavar="S", help="seconds between TERM and KILL (10)"
    )
    add_yes(parser)


def add_retry_arguments(parser: argparse.ArgumentParser) -> None:
    """CELLs, ``--resume``, ``--done``, ``--ack``, ``--no-launch-acks``, ``--yes``."""
    parser.add_argument("cells", nargs="+", metavar="CELL", help="failed or killed cells")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="keep each cell's {out} as it is (nothing set aside): a run that loads its "
        "latest checkpoint goes on from it, and no done cell runs again",
    )
    parser.add_argument(
        "--done", action="store_true", help="also retry cells that finished with exit 0"
    )
    parser.add_argument(
        "--ack",
        action="append",
        default=[],
        metavar="CHECK",
        help="launch the retry although preflight check CHECK failed (one of "
        f"{', '.join(PREFLIGHT_CHECKS)})",
    )
    parser.add_argument(
        "--no-launch-acks",
        action="store_true",
        help="do not go ahead on the checks the queue's launch acknowledged (--ack there): "
        "preflight must pass, or each check be acknowledged again with --ack",
    )
    add_yes(parser)


def _read_view(call: Call) -> QueueView:
    from rgt_tui.services.queue.view import read_queue_view

    return call.on_host(lambda transport: read_queue_view(call.host, transport))


def _known_cells(call: Call, view: QueueView) -> tuple[str, ...]:
    """The cells of HOST's queue: the box's, then those of the local queue file that are
    not there yet (a cell not launched yet is a cell, just not a running one)."""
    from rgt_tui.services.teardown.acknowledge import queue_cells

    on_box = tuple(c.name for c in view.cells)
    return on_box + tuple(n for n in queue_cells(call.host) if n not in on_box)


def run_stop(call: Call) -> int:
    """Stop HOST's queue after its current cell."""
    from rgt_tui.services.box_ctl import QueueError
    from rgt_tui.services.queue.backends import backend_for

    host = call.host
    refused = rank_control_refusal(call.fleet, host, "stop")
    if refused is not None:
        return call.fail(refused[0], fix=refused[1])
    backend = backend_for(host)
    view = _read_view(call)
    if not view.runner_alive and not backend.stops_without_runner:  # else the scheduler is asked
        return call.fail(f"{host.name}: {queue_is(view.state)}, not running: nothing to stop")
    current = view.current
    what = view.running_text()
    answer = confirmed(call, f"Stop the queue on {host.name} after {what}?")
    if answer is not None:
        return answer
    try:
        result = call.on_host(lambda transport: backend.stop(transport))
    except QueueError as exc:
        return call.fail(str(exc))
    said = "was already asked to stop" if result.already else "stops"
    if result.holds:  # a scheduler held the pending tasks; the running ones finish
        print(
            f"{host.name}: held {plural(len(result.held), 'pending Slurm task')}"
            f"{' (a stop was recorded before)' if result.already else ''}: {' '.join(result.held)}"
        )
        for line in (*result.running, *(f"not held: {n}" for n in result.not_held)):
            print(f"  {line}")
        if result.held:
            print(
                f"later: scontrol release {' '.join(result.held)} lets them run "
                "(a launch is refused while they wait in squeue)"
            )
        return EXIT_OK
    start = view.start_after_stop
    moved = result.moved_on(current.name if current else None)
    if moved:  # the confirmed cell ended meanwhile: the stop ends after another one
        print(f"{host.name}: warning: {moved.strip()}")
        start = result.start
    else:
        print(f"{host.name}: the queue {said} after {what}; {view.stop_effect()}")
    if result.waiting:  # the stop leaves it waiting; only a retry runs it (hour s21a #12)
        print(f"{host.name}: {result.waiting_words()}")
    if start is not None:
        print(f"later: rgt-tui launch {host.name} --start {start} goes on from where it stopped")
    return EXIT_OK


def run_kill(call: Call) -> int:
    """Kill HOST's running cell now; the queue goes on (--then next) or stops."""
    from rgt_tui.services.box_ctl import QueueError
    from rgt_tui.services.queue.backends import backend_for

    args, host = call.args, call.host
    refused = rank_control_refusal(call.fleet, host, "kill")
    if refused is not None:
        return call.fail(refused[0], fix=refused[1])
    if args.grace < 0:
        return call.fail("--grace must be 0 or more", code=EXIT_BAD_INPUT)
    view = _read_view(call)
    running = [c for c in view.cells if c.status == RUNNING]
    if args.cell is None and len(running) > 1:
        # Several run at once (Slurm's max_parallel): the current one is a guess, and
        # --yes killed it unasked (a Slurm hour, s39 #6). The TUI's X asks which.
        names = ", ".join(printable(c.name, 60) for c in running[:8])
        return call.fail(
            f"{host.name}: {len(running)} cells are running ({names}): name the one to kill",
            fix=f"rgt-tui queue kill {host.name} CELL",
            code=EXIT_BAD_INPUT,
        )
    cell = view.current if args.cell is None else next(
        (c for c in view.cells if c.name == args.cell), None
    )  # fmt: skip
    if cell is None and args.cell is not None:
        known = _known_cells(call, view)
        if args.cell not in known:  # no cell of the queue: the input is wrong, as retry's
            return call.fail(
                f"{host.name}: no cell named {printable(args.cell, None)} in its queue: "
                f"nothing to kill. Its cells: {', '.join(known) or 'none'}",
                code=EXIT_BAD_INPUT,
            )
    if cell is None or cell.status != "running":
        which = f"cell {args.cell} is not running" if args.cell else "no cell is running"
        return call.fail(f"{host.name}: {which}: nothing to kill")
    ran = fmt_duration(view.now - cell.started_at) if cell.started_at else "?"
    after = "go on to the next cell" if args.then == "next" else "stop the queue"
    answer = confirmed(
        call,
        f"Kill cell {cell.index} ({cell.name}) on {host.name}, running for {ran}, and {after}?",
    )
    if answer is not None:
        return answer

    async def kill(transport: Transport):  # noqa: ANN202 - the service's KillResult
        return await backend_for(host).kill(
            transport, cell.name, then=args.then, grace_s=args.grace
        )

    try:
        result = call.on_host(kill)
    except QueueError as exc:  # "unknown": the cell left the box's queue meanwhile
        return call.fail(str(exc), code=EXIT_BAD_INPUT if exc.code == "unknown" else EXIT_PROBLEMS)
    print(result.summary())
    return EXIT_OK if result.ended else EXIT_PROBLEMS


def _retry_verb(plan: RetryPlan) -> str:
    """What the plan does, in one word: only cells waiting for their retry run as their
    mark left them — "Resume" over one whose {out} that mark set aside read as a promise
    to go on from its checkpoint (review s45 #1)."""
    if not plan.cells and plan.waiting:
        return "Run as marked"
    return "Resume" if plan.resume else "Retry"


def format_retry(plan: RetryPlan) -> str:
    """The retry plan as the confirmation text."""
    from rgt_tui.services.disk.out_checkpoints import checkpoint_notes

    lines = [f"{_retry_verb(plan)} on {plan.host}"]
    # Refused: why first, and not how it would run (h493 #8: "the running queue runs
    # them before its next cell" stood above the REFUSED line of a running cell).
    lines += [f"  REFUSED: {p}" for p in plan.problems]
    for cell, out in zip(plan.cells, plan.outs, strict=True):
        if plan.resume:
            moved = f"{out} is kept as it is" if out != "-" else "nothing set aside"
        elif out != "-":
            moved = f"{out} is set aside as {out}.before-retry-<time>"
        else:
            moved = "no {out} to set aside"
        lines.append(f"  {cell.index:>3}  {pad(cell.name, 28)} {cell.label:<20} {moved}")
    for cell in plan.waiting:
        # It runs as its mark left it, --resume or not (s44 note).
        then = (
            f"set aside then, to {cell.set_aside}"
            if cell.set_aside and not cell.note
            else "nothing set aside then"
        )
        lines.append(
            f"  {cell.index:>3}  {pad(cell.name, 28)} {cell.label:<20} marked before the queue "
            f"stopped: runs as marked ({{out}} {then})"
        )
    if plan.cells:
        lines.append(
            "  each runs again with its {out} as it is: a run that loads its latest checkpoint "
            "goes on from it"
            if plan.resume
            else "  each starts over: its {out} is renamed aside (kept, not deleted), so the "
            "run finds no checkpoint there to resume from"
        )
    for name, warning, advice in checkpoint_notes(
        plan,
        lambda name: (
            f"answer no, then rgt-tui queue retry {plan.host} {shlex.quote(name)} --resume"
        ),
    ):
        lines.append(f"  ⚠ {name}: {printable(warning, None)}")  # the box's file name
        if advice is not None:
            lines.append(f"    {printable(advice, None)}")
    if plan.resume and plan.checkpoints_looked and plan.cells and not plan.checkpoints:
        # "goes on from it" with nothing to go on from (the review of s43).
        one = len(plan.cells) == 1
        # What rgt-tui can tell, not a forecast: a run that saves its state as JSON or
        # under a name of its own still goes on from it (h546 #5: "runs it from the
        # start" beside a resume at epoch 6).
        # The box's audit looks for these four (disk_ctl.sh): "a name with ckpt" was
        # said beside a file named `ckpt` it had not looked at (h593 #7).
        lines.append(
            f"  ⚠ no file rgt-tui reads as a checkpoint (*.pt, *.pth, *.ckpt, *.safetensors) "
            f"in {'its' if one else 'their'} {{out}} on the box now: unless "
            f"the run keeps its state under another name, the resume runs "
            f"{'it' if one else 'them'} from the start"
        )
    if not plan.problems:  # refused: why is said first, above, not how it would run
        lines += _how_it_runs(plan)
    lines += [f"  warning: {w}" for w in plan.warnings]
    if plan.launch is not None and plan.launch.unacknowledged:
        acks = " ".join(f"--ack {n}" for n in plan.launch.unacknowledged)
        lines.append(f"  REFUSED: preflight failed — fix the box, or retry anyway with {acks}")
    return "\n".join(lines)


def _how_it_runs(plan: RetryPlan) -> list[str]:
    """How the retried cells run: before the running queue's next cell, as a scheduler
    array, or by a launch (with what of its plan carries information)."""
    out: list[str] = []
    if plan.running:
        them = "it" if len(plan.cells) + len(plan.waiting) == 1 else "them"
        out.append(f"  the running queue runs {them} before its next cell{plan.with_others()}")
    elif plan.submits:
        out.append(f"  submitted to {plan.submits} as a new job array of these cells")
    elif plan.launch is not None:
        from rgt_tui.cli.launch import format_plan, preflight_lines
        from rgt_tui.services.queue.launch_acks import acks_line

        also = (
            f" and {plan.others_named()}, set to run again earlier" if plan.others_waiting else ""
        )
        out.append(f"  the queue is not running: a launch runs only these cells{also}")
        if plan.launch_acks:  # what the queue's launch acknowledged (services.queue.launch_acks)
            revoked = " — revoked for this retry (--no-launch-acks)" if plan.revoked else ""
            out.append(f"  {acks_line(plan.launch_acks)}{revoked}")
        # Only what carries information: the launch's other refusals and warnings, and
        # the checks that refuse it (their own lines, each with its fix); the preflight
        # refusal itself is said below in the retry's words (--ack on the retry).
        out += ["  " + line for line in format_plan(plan.launch).splitlines()[1:]
                  if ("REFUSED" in line or "warning" in line) and "preflight" not in line]  # fmt: skip
        out += ["  " + line for line in preflight_lines(plan.launch, refusing_only=True)]
    return out


def run_retry(call: Call) -> int:
    """Retry failed or killed cells of HOST under their names, outputs set aside."""
    from rgt_tui.services.box_ctl import QueueError
    from rgt_tui.services.disk.out_checkpoints import with_checkpoints
    from rgt_tui.services.queue.backends import backend_for

    args, host = call.args, call.host
    refused = rank_control_refusal(call.fleet, host, "retry")
    if refused is not None:
        return call.fail(refused[0], fix=refused[1])
    backend = backend_for(host)

    async def planned(transport: Transport) -> RetryPlan:
        plan = await backend.plan_retry(
            call.fleet,
            transport,
            args.cells,
            allow_done=args.done,
            acks=args.ack,
            launch_acks=not args.no_launch_acks,
            resume=args.resume,
        )
        return await with_checkpoints(plan, call.fleet, host, transport)

    try:
        plan = call.on_host(planned)
    except QueueError as exc:
        return call.fail(str(exc))
    if plan.unknown:  # a name that is no cell of the queue: the input is wrong
        # Only the refusal: the plan of the other cells read as if the retry would go on
        # (a user's hour saw a whole plan above "REFUSED: no cell named nosuch").
        print("\n".join([f"Retry on {plan.host}", *(f"  REFUSED: {p}" for p in plan.problems)]))
        return EXIT_BAD_INPUT
    print(format_retry(plan))
    if not plan.ok:
        return EXIT_PROBLEMS
    names = ", ".join(c.name for c in (*plan.cells, *plan.waiting))
    launching = "" if plan.running else " (launches the queue for them)"
    if plan.submits:
        launching = f" (submits them to {plan.submits} as a new array)"
    count = plural(len(plan.cells) + len(plan.waiting), "cell")
    verb = _retry_verb(plan)
    answer = confirmed(call, f"{verb} {count} on {host.name}: {names}{launching}?")
    if answer is not None:
        return answer
    try:
        result = call.on_host(lambda transport: backend.retry(plan, transport, fleet=call.fleet))
    except QueueError as exc:
        return call.fail(str(exc))
    for name, aside in result.aside:
        if plan.resume:
            where = "its {out} kept as it is"
        elif aside != "-":
            where = f"earlier outputs moved to {aside}"
        else:
            where = "no earlier outputs were there"
        print(f"{host.name}: {name} will run again; {where}")
    if result.job_id:
        print(
            f"submitted as Slurm array job {result.job_id}: it runs them when the cluster "
            f"schedules it (rgt-tui queue show {host.name} follows it)"
        )
    elif result.running:
        them = "it" if len(plan.cells) + len(plan.waiting) == 1 else "them"
        print(f"the running queue runs {them} before its next cell")
    elif result.launched is not None:
        print(f"launched runner pid {result.launched.pid} for them ({result.launched.detach})")
        if result.unrecorded:
            print(result.unrecorded)
    else:
        # The queue ended between the plan and the answer. Not `launch --start N`: a
        # launch from the start runs the done cells again (hour s33 CLI #5); a second
        # retry finds the cells waiting and launches the queue for them alone.
        retried = [c.name for c in (*plan.cells, *plan.waiting)]
        them = "it" if len(retried) == 1 else "them"
        print(
            f"the queue ended before the retry reached it: {', '.join(retried)} "
            f"{'is' if len(retried) == 1 else 'are'} set to run again, but nothing runs "
            f"{them} yet — rgt-tui queue retry {host.name} {' '.join(retried)} once more "
            f"launches the queue for {them} alone"
        )
    print(f"follow it: rgt-tui queue show {host.name}")
    return EXIT_OK
