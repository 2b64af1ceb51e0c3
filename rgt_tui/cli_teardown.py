"""`rgt-tui teardown HOST`: the checklist, `--check` for scripts, and the typed confirmation.

Exit codes: 0 torn down (or, with --check, every condition but the typed name holds);
1 the gate is locked, the confirmation was refused or the teardown command failed;
2 bad input (fleet file, unknown host).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable
from pathlib import Path

from rgt_tui.domain.config import Fleet
from rgt_tui.paths import state_dir
from rgt_tui.services.journal import Journal
from rgt_tui.services.teardown import (
    GateReport,
    acknowledge,
    check_gate,
    confirm_and_tear_down,
    instructions,
)
from rgt_tui.transport import open_transport


def add_teardown_parser(
    sub: argparse._SubParsersAction, add_hosts: Callable[[argparse.ArgumentParser], None]
) -> None:
    """Add the ``teardown`` sub-command."""
    p = sub.add_parser(
        "teardown",
        help="the teardown checklist; tears down only after every check and your typed confirmation",
    )
    add_hosts(p)
    p.add_argument("host", help="host name from the fleet file")
    p.add_argument(
        "--check", action="store_true", help="re-scan; exit 0 only when all but the typed name hold"
    )
    p.add_argument(
        "--confirm", metavar="HOSTNAME", help="the host's name, typed, to confirm non-interactively"
    )
    p.add_argument(
        "--ack-missing",
        metavar="CELL",
        action="append",
        default=[],
        help="accept a cell with no results",
    )
    p.add_argument(
        "--ack-running",
        metavar="CELL",
        action="append",
        default=[],
        help="accept a cell still running",
    )


def journal() -> Journal:
    """The journal directory under the state dir."""
    return Journal(state_dir() / "journal")


def format_checklist(report: GateReport) -> str:
    """The checklist as text: each item with its state and evidence, then the profile."""
    lines = [f"Teardown checklist for {report.host.name} ({report.profile.title})"]
    for c in report.conditions:
        lines.append(f"  [{'x' if c.ok else ' '}] {c.key:<10} {c.evidence}")
    for problem in report.problems:
        lines.append(f"  ! {problem}")
    p = report.profile
    lines += [
        f"  teardown verb:      {p.teardown_verb}" + ("  (IRREVERSIBLE)" if p.irreversible else ""),
        f"  destroys:           {p.destroys}",
        f"  keeps billing:      {'; '.join(p.keeps_billing)}",
        f"  survives meter-stop: {p.meter_stop_survives}",
        f"  danger clocks:      {'; '.join(p.danger_clocks)}",
        f"  teardown command:   {report.host.teardown or '(none: you will be shown what to do)'}",
    ]
    if report.torn_down_at is not None:
        lines.append("  already recorded as torn down")
    return "\n".join(lines)


def cmd_teardown(args: argparse.Namespace, fleet: Fleet) -> int:
    """Run `rgt-tui teardown`."""
    try:
        host = fleet.host(args.host)
    except KeyError as exc:
        print(f"rgt-tui teardown: {exc.args[0]}", file=sys.stderr)
        return 2
    j = journal()
    if args.ack_missing or args.ack_running:
        acknowledge(j, host.name, missing=tuple(args.ack_missing), running=tuple(args.ack_running))

    async def gather() -> GateReport:
        async with open_transport(host) as transport:
            return await check_gate(fleet, host, transport, j)

    report = asyncio.run(gather())
    print(format_checklist(report))
    if args.check:
        if report.ready_but_confirmation:
            print("ready: every condition holds but the typed confirmation")
            return 0
        print(
            "locked: "
            + ", ".join(c.key for c in report.conditions if not c.ok and c.key != "confirmed")
        )
        return 1
    if not report.ready_but_confirmation:
        print("locked: nothing will be torn down until every item above holds", file=sys.stderr)
        return 1
    typed = args.confirm
    if typed is None:
        if not sys.stdin.isatty():
            print(
                "refused: no terminal to type the confirmation; pass --confirm HOSTNAME explicitly",
                file=sys.stderr,
            )
            return 1
        typed = input(f"Type the host's name ({host.name}) to tear it down: ").strip()
    if typed != host.name:
        print(f"refused: '{typed}' is not '{host.name}'; nothing was torn down", file=sys.stderr)
        return 1
    try:
        outcome = asyncio.run(
            confirm_and_tear_down(fleet, host, j, typed, report, cwd=Path(os.getcwd()))
        )
    except PermissionError as exc:
        print(f"refused: {exc}", file=sys.stderr)
        return 1
    if not outcome.ran:
        print(instructions(host, report.profile))
        print(f"{host.name} is recorded as torn down: its cost stops here.")
        return 0
    print(outcome.output, end="" if outcome.output.endswith("\n") else "\n")
    if not outcome.ok:
        print(
            f"teardown command FAILED (exit {outcome.exit_status}); {host.name} is NOT recorded as torn down",
            file=sys.stderr,
        )
        return 1
    print(f"teardown command exited 0; {host.name} is recorded as torn down.")
    return 0
