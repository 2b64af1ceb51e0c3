"""`rgt-tui preflight HOST [--json]` (a row of table.py): check the box before the meter
runs, in the environment its runs use (services.preflight), and print each check with
its fix. Exit 0 when every check passed or is acknowledged by the host's
``preflight_ack``; 1 when one is not, or when the host's queue file has a problem a
launch refuses (a config its code tree lacks, a format error: what ``queue check`` finds
for the host), which is named rather than called ready (ux-h #16) (exit_codes.py).
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from rgt_tui.cli.exit_codes import EXIT_OK, EXIT_PROBLEMS
from rgt_tui.cli.runner import Call
from rgt_tui.domain.units import plural
from rgt_tui.services.connect import Transport
from rgt_tui.services.queue.launch_preflight import preflight_acks

if TYPE_CHECKING:
    from rgt_tui.services.preflight import PreflightReport


def add_preflight_arguments(parser: argparse.ArgumentParser) -> None:
    """``--json``."""
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


async def run_preflight(call: Call, transport: Transport) -> int:
    """Run every check on the host's box; exit 1 when one failed unacknowledged."""
    from rgt_tui.services.preflight import preflight
    from rgt_tui.services.queue.launch_checks import refused_here

    host = call.host
    if host.group is not None:  # every box's preflight and the checks across them (issue 41)
        from rgt_tui.services.queue.group.preflight import group_preflight

        report = await group_preflight(call.fleet, host, transport)
    else:
        report = await preflight(call.fleet, host, transport)
    acks = preflight_acks(host)  # a group's: every box's own, unless it gives its own
    blocking = report.unacknowledged(acks)
    queue = await refused_here(call.fleet, host)  # the queue file's, the credentials'
    if call.args.json:
        data = report.to_json()
        data["acknowledged"] = [c.name for c in report.failed if c.name in acks]
        data["blocking"] = [c.name for c in blocking]
        data["queue_problems"] = queue
        # "ok" is every check passed unacknowledged; "ready" is what the exit code says
        # (h525 #9: "ok": false beside exit 0 read as not ready).
        data["ready"] = not blocking and not queue
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        print(format_report(report, acks, queue))
    return EXIT_PROBLEMS if blocking or queue else EXIT_OK


def format_report(
    report: PreflightReport, acks: tuple[str, ...], queue: list[str] | None = None
) -> str:
    """One line per check (``ok`` / ``acked`` / ``FAILED``, its name, what was seen), the
    fix under each failed one not acknowledged, the queue file's problems a launch
    refuses (``queue``), and a last line saying whether a launch may go ahead."""
    width = max((len(c.name) for c in report.checks), default=0)
    lines = [f"{report.host}: preflight" + (f" — {report.note}" if report.note else "")]
    for c in report.checks:
        mark = "ok" if c.ok else ("acked" if c.name in acks else "FAILED")
        mark = mark if c.ran else "-"
        lines.append(f"  {mark:<6}  {c.name:<{width}}  {c.detail}")
        # An acknowledged check's fix is moot (the gpu one says to set the very
        # preflight_ack that acknowledged it): the TUI shows none either.
        if mark == "FAILED" and c.fix:
            lines.append(f"  {'':<6}  {'':<{width}}  fix: {c.fix}")
    failed = [c.name for c in report.failed]
    acked = [n for n in failed if n in acks]
    blocking = [n for n in failed if n not in acks]
    if acked:
        lines.append(f"acknowledged by preflight_ack in the fleet file: {', '.join(acked)}")
    queue = queue or []
    if queue:
        lines.append(
            "the queue file and credentials (a launch refuses these; `rgt-tui queue check` "
            "lists the queue file's):"
        )
        lines += [f"  {problem}" for problem in queue]
    if blocking:
        # The queue file's problems are no check: no acknowledgement passes them, and
        # "until each is fixed or acknowledged" read as if one would (s36 acts hour #8).
        also = (
            f"; and the {plural(len(queue), 'problem')} of the queue file and credentials "
            "above, which only a fix passes"
            if queue
            else ""
        )
        lines.append(
            f"{plural(len(blocking), 'check')} failed: {', '.join(blocking)} — a launch is refused "
            "until each is fixed or acknowledged (--ack CHECK, or preflight_ack for the host)"
            + also
        )
    else:
        # A check not run passed nothing: "every check passed" stood above "- smoke not
        # run" (s38 spot hour #4).
        not_run = [c.name for c in report.checks if not c.ran]
        every = "every check that ran passed" if not_run else "every check passed"
        every += " or is acknowledged" if acked else ""
        lines_say = "as its line says" if len(not_run) == 1 else "as their lines say"
        every += f" (not run: {', '.join(not_run)}, {lines_say})" if not_run else ""
        if queue:
            lines.append(
                f"not ready: {every}, but a launch refuses the "
                f"{plural(len(queue), 'problem')} above"
            )
        else:
            lines.append(f"ready: {every}")
    return "\n".join(lines)
