"""The queue sub-commands: `queue check|show|append`, `launch`, `diagnose` (see cli.py).

Each is the scriptable twin of a queue screen: the same services, printed as text or
JSON. Exit codes follow cli.py: 0 ok, 1 the command ran and found problems (refused,
unreachable, a vanished run), 2 bad input (unknown host, arguments, no terminal to ask).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rgt_tui.cli_args import host_or_report
from rgt_tui.domain.config import Fleet
from rgt_tui.domain.queue_state import QueueView
from rgt_tui.domain.units import fmt_duration
from rgt_tui.domain.vanished import Diagnosis
from rgt_tui.transport import TransportError, open_transport

if TYPE_CHECKING:  # the services load lazily, so `rgt-tui status` does not pay for them
    from rgt_tui.services.queue import AppendResult, LaunchPlan

EXIT_OK, EXIT_PROBLEMS, EXIT_BAD_INPUT = 0, 1, 2


def add_queue_commands(sub: Any, add_hosts_arg: Callable[[argparse.ArgumentParser], None]) -> None:
    """Register `queue`, `launch` and `diagnose` on the top-level sub-parsers."""
    queue = sub.add_parser("queue", help="check queue files, show a queue, append cells")
    add_hosts_arg(queue)
    qsub = queue.add_subparsers(dest="queue_command", metavar="ACTION", required=True)
    check = qsub.add_parser("check", help="check every queue of the fleet (plus FILEs)")
    add_hosts_arg(check)
    check.add_argument("files", nargs="*", metavar="FILE", help="more queue files to check")
    check.add_argument("--json", action="store_true", help="print the parsed cells as JSON")
    show = qsub.add_parser("show", help="every cell's state on HOST, from the box's records")
    add_hosts_arg(show)
    show.add_argument("host", metavar="HOST")
    show.add_argument("--json", action="store_true", help="print the view as JSON")
    append = qsub.add_parser("append", help="send lines appended to HOST's queue file")
    add_hosts_arg(append)
    append.add_argument("host", metavar="HOST")

    launch = sub.add_parser("launch", help="launch HOST's queue, detached (asks first)")
    add_hosts_arg(launch)
    launch.add_argument("host", metavar="HOST")
    launch.add_argument(
        "--start", type=int, default=0, metavar="N", help="first cell index (default 0)"
    )
    launch.add_argument("--yes", action="store_true", help="launch without asking")
    launch.add_argument(
        "--detach",
        choices=("auto", "tmux", "nohup"),
        default="auto",
        help="default: tmux when the box has it",
    )
    launch.add_argument(
        "--fresh",
        action="store_true",
        help="move the box's previous queue aside and start a new one",
    )

    diagnose = sub.add_parser(
        "diagnose", help="why HOST's last run vanished (reboot, OOM, hang-up, kill)"
    )
    add_hosts_arg(diagnose)
    diagnose.add_argument("host", metavar="HOST")
    diagnose.add_argument("--json", action="store_true", help="print the diagnosis as JSON")


def _unreachable(exc: TransportError) -> int:
    print(f"rgt-tui: {exc}", file=sys.stderr)
    return EXIT_PROBLEMS


def cmd_queue(args: argparse.Namespace, fleet: Fleet) -> int:
    """Dispatch `queue check|show|append`."""
    return {"check": _check, "show": _show, "append": _append}[args.queue_command](args, fleet)


def _check(args: argparse.Namespace, fleet: Fleet) -> int:
    from rgt_tui.services.queue_check import check_fleet_queues

    checked = check_fleet_queues(fleet, [Path(f) for f in args.files])
    if args.json:
        host_of = {s.parsed.file: s.host for s in checked.sources}
        cells = [
            {"file": c.file, "line": c.line, "name": c.name, "cfg": c.cfg, "task": c.task,
             "epochs": c.epochs, "host": host_of.get(c.file)}
            for c in checked.cells
        ]  # fmt: skip
        print(json.dumps(cells, indent=2))
    else:
        files = len(checked.sources)
        print(f"{len(checked.cells)} cells in {files} queue file{'s' if files != 1 else ''}")
    for message in checked.messages():
        print(message, file=sys.stderr)
    if not checked.sources and not args.json:
        print("no queue files: no host has a queue key and no FILE was given", file=sys.stderr)
    return EXIT_OK if checked.ok else EXIT_PROBLEMS


def view_to_json(view: QueueView) -> dict[str, Any]:
    """The `queue show --json` object."""
    return {
        "host": view.host,
        "state": view.state,
        "summary": view.summary(),
        "total": view.total,
        "resume_index": view.resume_index,
        "elapsed_s": view.elapsed_s,
        "runner_alive": view.runner_alive,
        "cells": [asdict(c) for c in view.cells],
    }


def format_view(view: QueueView) -> str:
    """Plain text: the summary line, then one line per cell."""
    lines = [f"{view.host}: {view.summary()}"]
    for c in view.cells:
        ran = None
        if c.started_at:
            ran = (c.ended_at or view.now) - c.started_at
        note = f"  — {c.note}" if c.note else ""
        lines.append(
            f"  {c.index:>3}  {c.name:<28} {c.label:<18} {fmt_duration(ran) if ran is not None else '':>7}{note}"
        )
    return "\n".join(lines)


def _show(args: argparse.Namespace, fleet: Fleet) -> int:
    from rgt_tui.services.queue_view import read_queue_view

    host = host_or_report(fleet, args.host)
    if host is None:
        return EXIT_BAD_INPUT

    async def read() -> QueueView:
        async with open_transport(host) as transport:
            return await read_queue_view(host, transport)

    try:
        view = asyncio.run(read())
    except TransportError as exc:
        return _unreachable(exc)
    print(json.dumps(view_to_json(view), indent=2) if args.json else format_view(view))
    return EXIT_OK


def _append(args: argparse.Namespace, fleet: Fleet) -> int:
    from rgt_tui.services.queue import QueueError, append_cells

    host = host_or_report(fleet, args.host)
    if host is None:
        return EXIT_BAD_INPUT

    async def append() -> AppendResult:
        async with open_transport(host) as transport:
            return await append_cells(fleet, host, transport)

    try:
        result = asyncio.run(append())
    except TransportError as exc:
        return _unreachable(exc)
    except QueueError as exc:
        print(f"rgt-tui: {exc}", file=sys.stderr)
        return EXIT_PROBLEMS
    if not result.added:
        print(f"{host.name}: no new cells ({result.detail})")
        return EXIT_OK
    print(f"{host.name}: appended {len(result.added)} cell{'s' if len(result.added) != 1 else ''}:")
    for c in result.added:
        print(f"  {c.index:>3}  {c.name}  {c.task}  {c.epochs} epochs  ({c.where})")
    print(result.detail)
    return EXIT_OK


def format_plan(plan: LaunchPlan) -> str:
    """The launch plan as the confirmation text."""
    lines = [f"Launch plan for {plan.host}"]
    if plan.detach:
        lines.append(
            f"  detach {plan.detach}"
            + (f" (tmux session {plan.session})" if plan.detach == "tmux" else " (setsid nohup)")
            + f" · start index {plan.start_index} · {len(plan.to_run)} of {len(plan.cells)} cells to run"
        )
        lines.append(f"  workdir {plan.workdir} · records in {plan.box_queue_dir}")
    for c in plan.cells:
        mark = ">" if c.index >= plan.start_index else " "
        state = c.status or ("new" if not c.deployed else "pending")
        lines.append(
            f"  {mark}{c.index:>3}  {c.name:<28} {c.task:<16} {c.epochs:>4} ep  [{state}]  {c.where}"
        )
        if c.index >= plan.start_index:
            lines.append(f"        $ {c.command}")
    lines += [f"  warning: {w}" for w in plan.warnings]
    lines += [f"  REFUSED: {p}" for p in plan.problems]
    return "\n".join(lines)


def cmd_launch(args: argparse.Namespace, fleet: Fleet) -> int:
    """Plan, show the plan, ask (unless --yes), launch."""
    from rgt_tui.services.queue import QueueError, launch, plan_launch

    host = host_or_report(fleet, args.host)
    if host is None:
        return EXIT_BAD_INPUT
    if args.start < 0:
        print("rgt-tui launch: --start must be 0 or more", file=sys.stderr)
        return EXIT_BAD_INPUT

    async def run() -> int:
        async with open_transport(host) as transport:
            try:
                plan = await plan_launch(
                    fleet,
                    host,
                    transport,
                    start_index=args.start,
                    detach=args.detach,
                    fresh=args.fresh,
                )
                print(format_plan(plan))
                if not plan.ok:
                    return EXIT_PROBLEMS
                if not args.yes:
                    if not sys.stdin.isatty():
                        print(
                            "rgt-tui launch: stdin is not a terminal, so there is no one to ask — pass --yes to launch",
                            file=sys.stderr,
                        )
                        return EXIT_BAD_INPUT
                    answer = await asyncio.to_thread(
                        input, f"Launch {len(plan.to_run)} cells on {host.name}? [y/N] "
                    )
                    if answer.strip().lower() not in ("y", "yes"):
                        print("not launched")
                        return EXIT_PROBLEMS
                result = await launch(plan, transport)
            except TransportError as exc:
                return _unreachable(exc)
            except QueueError as exc:
                print(f"rgt-tui: {exc}", file=sys.stderr)
                return EXIT_PROBLEMS
        if result.archived:
            print(f"previous queue moved to {result.archived}")
        where = f"tmux session {result.session}" if result.detach == "tmux" else "setsid nohup"
        print(
            f"launched on {host.name}: runner pid {result.pid} ({where}), from cell {result.start_index}"
        )
        print(f"follow it: rgt-tui queue show {host.name}")
        return EXIT_OK

    return asyncio.run(run())


def diagnosis_to_json(view: QueueView, d: Diagnosis) -> dict[str, Any]:
    """The `diagnose --json` object."""
    return {**asdict(d), "evidence": [asdict(e) for e in d.evidence], "queue": view_to_json(view)}


def format_diagnosis(d: Diagnosis) -> str:
    """The diagnosis as text: the verdict, each cause's evidence, the next step."""
    lines = [f"{d.host}: {d.summary}"]
    for e in d.evidence:
        lines.append(f"  {e.cause:<12} {e.verdict:<8} {e.detail}")
    if d.next_step:
        lines.append(f"next: {d.next_step}")
    return "\n".join(lines)


def cmd_diagnose(args: argparse.Namespace, fleet: Fleet) -> int:
    """Name the cause of HOST's latest vanished run; exit 1 when there is one."""
    from rgt_tui.services.queue_view import diagnose_queue

    host = host_or_report(fleet, args.host)
    if host is None:
        return EXIT_BAD_INPUT

    async def diagnose() -> tuple[QueueView, Diagnosis]:
        async with open_transport(host) as transport:
            return await diagnose_queue(host, transport)

    try:
        view, diagnosis = asyncio.run(diagnose())
    except TransportError as exc:
        return _unreachable(exc)
    print(
        json.dumps(diagnosis_to_json(view, diagnosis), indent=2)
        if args.json
        else format_diagnosis(diagnosis)
    )
    return EXIT_OK if diagnosis.subject is None else EXIT_PROBLEMS
