"""`rgt-tui status [HOST]`: one telemetry sample from every host (or HOST), as a table or JSON."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json

from rgt_tui.cli.exit_codes import EXIT_ALERTS, EXIT_OK, EXIT_PROBLEMS
from rgt_tui.cli.runner import Call
from rgt_tui.domain.units import fmt_bytes, fmt_count, fmt_duration, fmt_pct


def add_status_arguments(parser: argparse.ArgumentParser) -> None:
    """``--json`` and ``--timeout``."""
    parser.add_argument(
        "--json", action="store_true", help="print a JSON list, one object per host"
    )
    parser.add_argument(
        "--timeout", type=positive_seconds, default=30.0, help="seconds per host (default 30)"
    )


def positive_seconds(text: str) -> float:
    """A ``--timeout`` above zero: 0 would time every host out at once ("overloaded?")."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text}")
    return value


def run_status(call: Call) -> int:
    """Sample every host (or the one named) at once; exit 1 when any is unreachable, else
    3 when any has a warning or critical alert (cron and scripts can tell), else 0.

    Not a connecting row: ``collect_status`` opens one connection per host itself, so an
    unreachable host is a line of the report, never a failure of the others.
    """
    from rgt_tui.services.box.status import collect_status, report_to_json
    from rgt_tui.services.telemetry import default_last_seen

    fleet = call.fleet
    if call.host_config is not None:
        fleet = dataclasses.replace(fleet, hosts=(call.host_config,))
    reports = asyncio.run(
        collect_status(fleet, timeout=call.args.timeout, last_seen=default_last_seen(fleet))
    )
    if call.args.json:
        print(json.dumps([report_to_json(r) for r in reports], indent=2))
    else:
        print(format_status_table(reports))
    return status_exit_code(reports)


ALERTING = ("warning", "critical")  # an info alert is a note, not a reason to page


def status_exit_code(reports: list) -> int:
    """1: a host unreachable; 3: all reachable, a warning or critical alert present; 0."""
    if not all(r.reachable for r in reports):
        return EXIT_PROBLEMS
    if any(a.severity in ALERTING for r in reports for a in r.alerts):
        return EXIT_ALERTS
    return EXIT_OK


def format_status_table(reports: list) -> str:
    """A plain-text fleet summary: one block per host, alerts under it."""
    lines: list[str] = []
    for r in reports:
        if not r.reachable:
            lines.append(f"{r.host.name:<14} UNREACHABLE  {r.error}")
            if r.fix:
                lines.append(f"{'':<14} fix: {r.fix}")
            lines += _alert_lines(r.alerts)  # a release clock runs while it is unreachable
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
        lines += _alert_lines(r.alerts)
    return "\n".join(lines)


def _alert_lines(alerts: tuple) -> list[str]:
    return [f"{'':<14} [{a.severity}] {a.message} ({a.gotcha})" for a in alerts]
