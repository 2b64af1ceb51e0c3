"""`rgt-tui pull HOST` and `rgt-tui verify HOST` (rows of table.py).

`pull` copies the host's results into ``<results_dir>/HOST/`` with a manifest, resume,
retries and hash checks, drawing progress on a terminal and plain lines otherwise.
`verify` checks the pulled copy and writes the record the teardown gate reads. Exit codes
(exit_codes.py): 0 everything pulled / verified, 1 the command ran and found
problems, 2 bad input, 130 a pull stopped by Ctrl-C (what arrived is kept).
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from rgt_tui.cli.exit_codes import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK, EXIT_PROBLEMS
from rgt_tui.cli.pull_progress import PullProgressView
from rgt_tui.cli.runner import Call
from rgt_tui.domain.units import fmt_bytes, fmt_duration
from rgt_tui.services.connect import Transport

if TYPE_CHECKING:  # the services load lazily, so `rgt-tui status` does not pay for them
    from rgt_tui.services.pull import PullResult


def add_pull_arguments(parser: argparse.ArgumentParser) -> None:
    """``--jobs`` and ``--stall-timeout``."""
    parser.add_argument(
        "--jobs", type=int, default=4, metavar="N", help="large files in flight (default 4)"
    )
    parser.add_argument(
        "--stall-timeout",
        type=float,
        default=30.0,
        metavar="S",
        help="seconds without data: the box's scan is stopped, the copy reconnects (default 30)",
    )


def add_verify_arguments(parser: argparse.ArgumentParser) -> None:
    """``--json``, ``--offline``, ``--all`` and ``--stall-timeout``."""
    from rgt_tui.services.manifest import SCAN_STALL_TIMEOUT_S

    parser.add_argument("--json", action="store_true", help="print the verification record")
    parser.add_argument("--offline", action="store_true", help="do not re-scan the box for changes")
    parser.add_argument("--all", action="store_true", help="list every file, not only problems")
    parser.add_argument(
        "--stall-timeout",
        type=float,
        default=SCAN_STALL_TIMEOUT_S,
        metavar="S",
        help=f"seconds the box's re-scan may print nothing (default {SCAN_STALL_TIMEOUT_S:g})",
    )


async def run_pull(call: Call, transport: Transport) -> int:
    """Pull one host's results; exit 1 unless every pull root was listed, the box listed
    a file, and every file is here with a matching hash."""
    from rgt_tui.services.pull import PullError, PullOptions, pull_host

    if call.args.jobs < 1:
        return call.fail("--jobs must be at least 1", code=EXIT_BAD_INPUT)
    if not call.args.stall_timeout > 0:  # also NaN
        return call.fail("--stall-timeout must be more than 0 seconds", code=EXIT_BAD_INPUT)
    options = PullOptions(concurrency=call.args.jobs, stall_timeout_s=call.args.stall_timeout)
    host = call.host
    try:
        with PullProgressView(call.err) as progress:
            result = await pull_host(
                host, call.fleet.results_dir, transport, options=options, on_progress=progress
            )
    except PullError as exc:
        return call.fail(f"{host.name}: {exc.message}", fix=exc.fix)
    print(format_pull_result(result))
    return EXIT_OK if result.ok else EXIT_PROBLEMS


def pull_interrupted(call: Call) -> int:
    """Ctrl-C: the pull was cancelled first, so its parts are on disk; say where."""
    from rgt_tui.services.records import host_results_dir, records_dir

    parts = records_dir(host_results_dir(call.fleet.results_dir, call.host)) / "parts"
    call.fail(
        f"{call.host.name}: interrupted; what arrived is kept in {parts}/ "
        "and nothing unchecked was marked pulled — re-run the same pull to resume"
    )
    return EXIT_INTERRUPTED


async def run_verify(call: Call, transport: Transport) -> int:
    """Verify one host's pulled copy; exit 0 only when everything verified."""
    from rgt_tui.services.verify import verify_host
    from rgt_tui.services.verify_report import format_report, report_to_json

    if not call.args.stall_timeout > 0:  # also NaN
        return call.fail("--stall-timeout must be more than 0 seconds", code=EXIT_BAD_INPUT)
    report = await verify_host(
        call.host,
        call.fleet.results_dir,
        # --offline checks only the local copy: the transport, never connected, goes unused.
        transport=None if call.args.offline else transport,
        python=call.fleet.verify_python,
        stall_timeout_s=call.args.stall_timeout,
    )
    if call.args.json:
        print(json.dumps(report_to_json(report), indent=2, ensure_ascii=False))
    else:
        print(format_report(report, verbose=call.args.all))
    return EXIT_OK if report.ok else EXIT_PROBLEMS


def format_pull_result(result: PullResult) -> str:
    """The summary printed after a pull: counts, then every failure, conflict and refusal."""
    m = result.manifest
    resumed = sum(1 for f in result.pulled if f.resumed_from)
    lines = [
        f"{result.host}: {len(result.pulled)} pulled ({resumed} resumed), "
        f"{len(result.skipped)} already here, {len(result.failed)} failed — "
        f"{fmt_bytes(result.bytes_received)} in {fmt_duration(result.elapsed_s)} into {result.dest}",
    ]
    if result.copy_s > 0 and result.bytes_received:
        rate = result.bytes_received / result.copy_s / 1e6
        lines[0] += f" (copy stage: {rate:.1f} MB/s over {result.copy_s:.2f} s)"
    lines += [f"  FAILED    {path}: {why}" for path, why in result.failed]
    lines += [f"  CONFLICT  {path}: {why}" for path, why in result.conflicts]
    lines += [f"  REFUSED   {m.display(r.root, r.path)}: {r.reason}" for r in m.refused]
    if result.code is not None:  # the code that made the results (U42)
        from rgt_tui.services.result_code import result_code_lines

        lines += [f"  {line}" for line in result_code_lines(result.code)]
    if result.ok:
        lines.append(
            f"every file of the manifest ({len(m.entries)}) is here with a matching SHA-256; "
            f"next: rgt-tui verify {result.host}"
        )
    else:
        lines += [f"  MISSING   {why}" for why in result.shortfalls]
        lines.append("NOT COMPLETE: fix the above and re-run the same pull (it resumes)")
    return "\n".join(lines)
