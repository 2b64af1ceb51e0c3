"""The command line: every sub-command, and the TUI when none is given.

Exit codes: 0 success, 1 the command ran and found problems (an unreachable host, a
failed check), 2 bad input (fleet file, arguments).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Sequence

from rgt_tui import __version__
from rgt_tui.cli_args import add_hosts_arg, load_fleet_arg
from rgt_tui.cli_logs import add_logs_parser, cmd_logs
from rgt_tui.cli_pull import add_pull_parsers, cmd_pull, cmd_verify
from rgt_tui.cli_queue import add_queue_commands, cmd_diagnose, cmd_launch, cmd_queue
from rgt_tui.cli_teardown import add_teardown_parser, cmd_teardown
from rgt_tui.domain.config import ConfigError, Fleet
from rgt_tui.domain.units import fmt_bytes, fmt_count, fmt_duration, fmt_pct

EXIT_OK, EXIT_PROBLEMS, EXIT_BAD_INPUT = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every sub-command."""
    parser = argparse.ArgumentParser(
        prog="rgt-tui",
        description="Terminal fleet manager for rented GPU boxes. With no command, opens the TUI.",
    )
    parser.add_argument("--version", action="version", version=f"rgt-tui {__version__}")
    add_hosts_arg(parser)
    parser.add_argument("--theme", metavar="NAME", help="colour theme (see themes/)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    status = sub.add_parser(
        "status", help="one telemetry sample from every host, as a table or JSON"
    )
    add_hosts_arg(status)
    status.add_argument(
        "--json", action="store_true", help="print a JSON list, one object per host"
    )
    status.add_argument("--timeout", type=float, default=30.0, help="seconds per host (default 30)")

    add_queue_commands(sub, add_hosts_arg)
    add_logs_parser(sub)
    add_pull_parsers(sub, add_hosts_arg)
    add_teardown_parser(sub, add_hosts_arg)

    demo = sub.add_parser("demo", help="start a loopback demo fleet and open the TUI on it")
    demo.add_argument("--boxes", type=int, default=3, help="number of demo boxes (default 3)")
    demo.add_argument("--theme", metavar="NAME", help="colour theme")
    return parser


def cmd_status(args: argparse.Namespace) -> int:
    """Sample every host once; exit 1 when any is unreachable."""
    from rgt_tui.services.status import collect_status, report_to_json

    fleet = load_fleet_arg(args)
    reports = asyncio.run(collect_status(fleet, timeout=args.timeout))
    if args.json:
        print(json.dumps([report_to_json(r) for r in reports], indent=2))
    else:
        print(format_status_table(reports))
    return EXIT_OK if all(r.reachable for r in reports) else EXIT_PROBLEMS


def format_status_table(reports: list) -> str:
    """A plain-text fleet summary: one block per host, alerts under it."""
    lines: list[str] = []
    for r in reports:
        if not r.reachable:
            lines.append(f"{r.host.name:<14} UNREACHABLE  {r.error}")
            if r.fix:
                lines.append(f"{'':<14} fix: {r.fix}")
            continue
        s = r.snapshot
        cg = s.cgroup
        mem = "?"
        if cg is not None:
            limit = "unlimited" if cg.memory_unlimited else fmt_bytes(cg.memory_max)
            mem = f"{fmt_bytes(cg.memory_current)}/{limit}"
        cpu = (
            "?" if cg is None else ("unlimited" if cg.cpu_unlimited else f"{cg.cpu_quota_vcpus:g}")
        )
        oom = "?" if cg is None or cg.oom_kill is None else str(cg.oom_kill)
        lines.append(
            f"{r.host.name:<14} up {fmt_duration(s.uptime_s):<7} cgroup mem {mem}  vCPU {cpu}  oom_kill {oom}"
        )
        if s.gpus:
            for g in s.gpus:
                lines.append(
                    f"{'':<14} GPU{g.index} {g.name[:22]:<22} util {g.util_pct if g.util_pct is not None else '?'}% "
                    f"SM {fmt_pct(g.sm_clock_fraction)} of max  mem {fmt_bytes(g.mem_used)}/{fmt_bytes(g.mem_total)}  "
                    f"{g.temp_c if g.temp_c is not None else '?'}°C"
                )
        else:
            lines.append(f"{'':<14} no GPU: {s.gpu_unavailable_reason or 'none found'}")
        for d in s.disks:
            lines.append(
                f"{'':<14} {d.mount:<18} bytes {fmt_pct(d.bytes_fraction):>4} of {fmt_bytes(d.bytes_total):<6} "
                f"inodes {fmt_pct(d.inodes_fraction):>4} of {fmt_count(d.inodes_total)}"
            )
        for a in r.alerts:
            lines.append(f"{'':<14} [{a.severity}] {a.message} ({a.gotcha})")
    return "\n".join(lines)


def cmd_tui(args: argparse.Namespace) -> int:
    """Open the TUI on the fleet file."""
    from rgt_tui.app import run_app

    return run_app(load_fleet_arg(args), theme=args.theme)


def cmd_demo(args: argparse.Namespace) -> int:
    """Start N loopback boxes, open the TUI on them, stop them on exit."""
    from rgt_tui.demo.run import run_demo

    if args.boxes < 1:
        print("rgt-tui demo: --boxes must be at least 1", file=sys.stderr)
        return EXIT_BAD_INPUT
    return run_demo(args.boxes, theme=args.theme)


def _with_fleet(
    command: Callable[[argparse.Namespace, Fleet], int],
) -> Callable[[argparse.Namespace], int]:
    """Adapt a `cmd(args, fleet)` from cli_queue to `cmd(args)`, loading the fleet file."""
    return lambda args: command(args, load_fleet_arg(args))


COMMANDS = {
    "status": cmd_status,
    "demo": cmd_demo,
    "queue": _with_fleet(cmd_queue),
    "launch": _with_fleet(cmd_launch),
    "diagnose": _with_fleet(cmd_diagnose),
    "logs": cmd_logs,
    "teardown": _with_fleet(cmd_teardown),
    "pull": _with_fleet(cmd_pull),
    "verify": _with_fleet(cmd_verify),
    None: cmd_tui,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `rgt-tui` console script."""
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except ConfigError as exc:
        print(f"rgt-tui: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
