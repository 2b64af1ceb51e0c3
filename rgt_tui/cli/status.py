"""`rgt-tui status [HOST]`: one telemetry sample from every host (or HOST), as a table or JSON.

A host the journal records as torn down is sampled too: its box still answering is the
forgotten-box cost leak (GEN1), said on its line and as a critical alert (exit 3); not
answering is what a torn-down box should do, and is no "unreachable" (exit 1). Nor is
a box ``watch``'s autostop stopped, until it answers again (``services.runtime.stopped``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from typing import TYPE_CHECKING

from rgt_tui.cli.args import positive_seconds
from rgt_tui.cli.event_loop import run_async
from rgt_tui.cli.exit_codes import EXIT_ALERTS, EXIT_OK, EXIT_PROBLEMS
from rgt_tui.cli.runner import Call
from rgt_tui.domain.config import Fleet
from rgt_tui.domain.units import fmt_bytes, fmt_count, fmt_duration, fmt_pct
from rgt_tui.services.box.torn_down import (
    Teardown,
    still_answers,
    torn_down_hosts,
    with_teardown,
)

if TYPE_CHECKING:
    from rgt_tui.services.box.status import HostReport


def add_status_arguments(parser: argparse.ArgumentParser) -> None:
    """``--json`` and ``--timeout``."""
    parser.add_argument(
        "--json", action="store_true", help="print a JSON list, one object per host"
    )
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        default=30.0,
        metavar="S",
        help="seconds per host (default 30)",
    )


def run_status(call: Call) -> int:
    """Sample every host (or the one named) at once; exit 1 when any is unreachable (or an
    entry of the fleet file was left out for its mistakes), else
    3 when any has a warning or critical alert (cron and scripts can tell), else 0.

    Not a connecting row: ``collect_status`` opens one connection per host itself, so an
    unreachable host is a line of the report, never a failure of the others.
    """
    from rgt_tui.services.box.status import collect_status, report_to_json
    from rgt_tui.services.telemetry import default_last_seen

    fleet = call.fleet
    if call.host_config is not None:
        fleet = dataclasses.replace(fleet, hosts=(call.host_config,))
    damaged: dict[str, str] = {}
    torn = torn_down_hosts(call.fleet, [h.name for h in fleet.hosts], damaged)
    reports = run_async(
        collect_status(
            fleet,
            timeout=call.args.timeout,
            last_seen=default_last_seen(fleet),
            torn_down_at={name: at for name, (at, _box) in torn.items()},
        )
    )
    stopped = stopped_hosts(call.fleet, [r for r in reports if not r.reachable])
    reports = [with_teardown(r, torn.get(r.host.name), time.time()) for r in reports]
    reports = [_quiet(r) if r.host.name in stopped else r for r in reports]
    reports = [_preemption_fix(call.fleet, r) for r in reports]
    if call.args.json:
        objects = [
            {
                **report_to_json(r),
                "torn_down_at": _at(torn.get(r.host.name)),
                "stopped_at": stopped.get(r.host.name),
            }
            for r in reports
        ]
        print(json.dumps(objects, indent=2))
    else:
        print(format_status_table(reports, torn, stopped))
    # A damaged journal loses what it held (a teardown, the spend's start) without a word
    # in the table: said, with its file and fix (s36 faults #8).
    if damaged:
        from rich.text import Text

        for name, why in damaged.items():
            call.err.print(Text(f"warning: {name}: {why}"))
    code = status_exit_code(reports, torn, stopped)
    # An entry left out for its mistakes was never asked: not "every host answered" (the
    # names and the mistakes are on stderr already; hour s31 CLI #1).
    return EXIT_PROBLEMS if call.left_out and call.host_config is None else code


def _preemption_fix(fleet: Fleet, report: HostReport) -> HostReport:
    """An unreachable box that may have been preempted: what to do about its cell first,
    before the transport's "check the port" (the TUI's pane drops that one once the
    preemption is named; s35 resume hour #8); and its lost connection's alert says the
    preemption the TUI or ``watch`` named, as their alert does, not "preempted?" beside a
    fix that named it (s43 spot hour #3). Reads files."""
    from rgt_tui.services.runtime.preemption import as_preempted_alerts, unreachable_fix

    if report.reachable:
        return report
    alerts = as_preempted_alerts(fleet, report.host.name, report.alerts)
    report = dataclasses.replace(report, alerts=alerts)
    fix = unreachable_fix(fleet, report.host)
    if fix is None or (report.fix and fix in report.fix):
        return report
    return dataclasses.replace(report, fix=f"{fix}; or {report.fix}" if report.fix else fix)


def stopped_hosts(fleet: Fleet, unreachable: list[HostReport]) -> dict[str, float]:
    """Each unreachable host that watch's autostop stopped (``services.runtime.stopped``):
    when. Not answering is what a stopped box does: neither unreachable nor alerting."""
    from rgt_tui.services.journal import journal_for
    from rgt_tui.services.runtime.stopped import StoppedHosts

    watch = StoppedHosts(journal_for(fleet))
    found = {r.host.name: watch.stopped_at(r.host.name) for r in unreachable}
    return {name: at for name, at in found.items() if at is not None}


def _quiet(report: HostReport) -> HostReport:
    """A stopped box's report: no error and no alerts (no GEN8, no release clock)."""
    return dataclasses.replace(report, alerts=(), error=None, fix=None)


def _at(teardown: Teardown | None) -> float | None:
    return teardown[0] if teardown is not None else None


ALERTING = ("warning", "critical")  # an info alert is a note, not a reason to page


def status_exit_code(
    reports: list, torn: dict[str, Teardown] | None = None, stopped: dict[str, float] | None = None
) -> int:
    """1: a host unreachable; 3: all reachable, a warning or critical alert present (a
    torn-down box that still answers among them); 0. A torn-down box that no longer
    answers is neither: it is gone, as it should be; nor is a box watch stopped."""
    gone = set(torn or {}) | set(stopped or {})
    if not all(r.reachable or r.host.name in gone for r in reports):
        return EXIT_PROBLEMS
    if any(a.severity in ALERTING for r in reports for a in r.alerts):
        return EXIT_ALERTS
    return EXIT_OK


def format_status_table(
    reports: list, torn: dict[str, Teardown] | None = None, stopped: dict[str, float] | None = None
) -> str:
    """A plain-text fleet summary: one block per host, alerts under it."""
    torn, stopped = torn or {}, stopped or {}
    lines: list[str] = []
    for r in reports:
        teardown = torn.get(r.host.name)
        if teardown is not None and not r.reachable:
            lines.append(f"{r.host.name:<14} torn down {_when(teardown[0])} · no longer answers")
            continue
        if r.host.name in stopped:
            lines.append(
                f"{r.host.name:<14} stopped by watch {_when(stopped[r.host.name])} · "
                "start it from the provider to use it again"
            )
            continue
        if not r.reachable:
            lines.append(f"{r.host.name:<14} UNREACHABLE  {r.error}")
            if r.fix:
                lines.append(f"{'':<14} fix: {r.fix}")
            if r.host.cost_per_hour is not None:  # a box that does not answer may still bill
                lines.append(f"{'':<14} {_cost_words(r)}")
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
        if still_answers(r, torn):
            # The forgotten-box leak (GEN1): its own line, before anything reads as fine.
            lines.append(f"{r.host.name:<14} TORN DOWN {_when(teardown[0])} BUT STILL ANSWERS")
        lines.append(
            f"{r.host.name:<14} up {fmt_duration(s.uptime_s):<7} cgroup mem {mem}  vCPU {cpu}  oom_kill {oom}"
        )
        if s.cell:  # "is my run going?": --json had it, the table did not (hour s17b #13a)
            lines.append(f"{'':<14} running: cell {s.cell}")
        if r.host.cost_per_hour is not None:
            lines.append(f"{'':<14} {_cost_words(r)}")
        if s.gpus:
            for g in s.gpus:
                lines.append(
                    f"{'':<14} GPU{g.index} {g.name[:22]:<22} util {g.util_pct if g.util_pct is not None else '?'}% "
                    f"SM {fmt_pct(g.sm_clock_fraction)} of max  mem {fmt_bytes(g.mem_used)}/{fmt_bytes(g.mem_total)}  "
                    f"{g.temp_c if g.temp_c is not None else '?'}°C"
                )
        elif r.host.is_login_node:  # by design: its cells' GPUs are the cluster's
            lines.append(f"{'':<14} no GPU on the login node: its cells' GPUs are the cluster's")
        else:
            lines.append(f"{'':<14} no GPU: {s.gpu_unavailable_reason or 'none found'}")
        for d in s.disks:
            lines.append(
                f"{'':<14} {d.mount:<18} bytes {fmt_pct(d.bytes_fraction):>4} of {fmt_bytes(d.bytes_total):<6} "
                f"inodes {fmt_pct(d.inodes_fraction):>4} of {fmt_count(d.inodes_total)}"
            )
        lines += _alert_lines(r.alerts)
    return "\n".join(lines)


def _cost_words(r: HostReport) -> str:
    """``$1.20/h · $14.40 so far`` (``since first seen`` without started_at), as a pane."""
    rate = f"${r.host.cost_per_hour:.2f}/h"
    if r.cost_so_far is None:
        return rate
    since = "since first seen" if r.counted_from_first_seen else "so far"
    return f"{rate} · ${r.cost_so_far:.2f} {since}"


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t))


def _alert_lines(alerts: tuple) -> list[str]:
    return [f"{'':<14} [{a.severity}] {a.message} ({a.gotcha})" for a in alerts]
