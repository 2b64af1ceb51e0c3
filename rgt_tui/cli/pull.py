"""`rgt-tui pull HOST`, `rgt-tui pull --all` and `rgt-tui verify HOST` (rows of table.py).

`pull` copies the host's results into ``<results_dir>/HOST/`` with a manifest, resume,
retries and hash checks, drawing progress on a terminal and plain lines otherwise.
`pull --all` pulls every host side by side in one event loop, one connection each, every
copy awaiting the one bandwidth budget (``--bwlimit`` or ``[fleet] pull_rate_mbit``), with
one progress view (``FleetPullView``) and one summary ending in the measured total rate.
`verify` checks the pulled copy and writes the record the teardown gate reads. Exit codes
(exit_codes.py): 0 everything pulled / verified, 1 the command ran and found
problems, 2 bad input, 130 a pull stopped by Ctrl-C (what arrived is kept).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import time
from collections.abc import Awaitable, Iterable
from typing import TYPE_CHECKING, TypeVar

from rgt_tui.agent.secret_paths import skipped_by_rule
from rgt_tui.cli.exit_codes import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK, EXIT_PROBLEMS
from rgt_tui.cli.pull_progress import FleetPullView, PullProgressView
from rgt_tui.cli.runner import Call, interrupted_saying
from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.config_watch import MIN_PULL_RATE_MBIT
from rgt_tui.domain.egress import egress_usd, fmt_usd, moved_line
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.units import fmt_bytes, fmt_took, local_time
from rgt_tui.services.connect import Transport, host_connection
from rgt_tui.services.pull.copy_words import large_files_lines

if TYPE_CHECKING:  # the services load lazily, so `rgt-tui status` does not pay for them
    from rgt_tui.services.pull import PullOptions, PullResult
    from rgt_tui.services.pull.types import TarStream
    from rgt_tui.services.verify.types import VerificationReport

T = TypeVar("T")


def add_pull_arguments(parser: argparse.ArgumentParser) -> None:
    """``--all``, ``--bwlimit``, ``--jobs`` and ``--stall-timeout``."""
    parser.add_argument(
        "--all",
        action="store_true",
        help="pull every host at once (one connection each) under one bandwidth budget",
    )
    parser.add_argument(
        "--bwlimit",
        type=float,
        metavar="MBIT",
        help="megabits per second for every pull of this command together "
        "(default: [fleet] pull_rate_mbit; none: unlimited)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        help="large files in flight (default: as many as the link's round trip needs, "
        "at most 4: one on a near box, 4 across an ocean)",
    )
    parser.add_argument(
        "--stall-timeout",
        type=float,
        default=30.0,
        metavar="S",
        help="seconds without data: the box's scan is stopped, the copy reconnects (default 30)",
    )
    parser.add_argument(
        "--compress",
        choices=("auto", "on", "off"),
        default="auto",
        help="compress the small files' tar stream on the box: auto (default) when it pays "
        "(text-heavy files over a link slower than the codec), on, off",
    )
    parser.add_argument(
        "--bulk",
        choices=("auto", "ssh", "sftp"),
        default="auto",
        help="how large files (64 MiB and up) come: auto (default) through OpenSSH's ssh "
        "from a box in the same datacenter (round trip up to 3 ms), where this machine's "
        "CPU binds, SFTP lanes from farther, where the link does; ssh: through ssh "
        "whatever the round trip (a fast link farther away); sftp: always SFTP. ssh is "
        "used only where ssh_config keeps rgt-tui's host-key check",
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


def run_pull(call: Call) -> int:
    """Pull one host's results (HOST) or every host's at once (``--all``); exit 1 unless
    every pull root was listed, the box listed a file, and every file is here with a
    matching hash (on every host, for ``--all``)."""
    from rgt_tui.services.pull import PullOptions
    from rgt_tui.services.pull.budget import shared_budget

    args = call.args
    if args.jobs is not None and args.jobs < 1:
        return call.fail("--jobs must be at least 1", code=EXIT_BAD_INPUT)
    if not args.stall_timeout > 0:  # also NaN
        return call.fail("--stall-timeout must be more than 0 seconds", code=EXIT_BAD_INPUT)
    if args.bwlimit is not None and not (
        MIN_PULL_RATE_MBIT <= args.bwlimit < math.inf  # also NaN
    ):
        return call.fail(
            f"--bwlimit must be at least {MIN_PULL_RATE_MBIT} Mbit/s and finite "
            f"(got {args.bwlimit:g}); leave it out for no limit",
            code=EXIT_BAD_INPUT,
        )
    if args.all and call.host_config is not None:
        return call.fail(
            f"name one HOST or --all, not both ({call.host_config.name} and --all)",
            code=EXIT_BAD_INPUT,
        )
    if not args.all and call.host_config is None:
        return call.fail("name one HOST, or --all for every host", code=EXIT_BAD_INPUT)
    mbit = args.bwlimit if args.bwlimit is not None else call.fleet.watch.pull_rate_mbit
    options = PullOptions(
        concurrency=args.jobs or PullOptions.concurrency,
        adapt_width=args.jobs is None,  # N given: that many, whatever the link
        stall_timeout_s=args.stall_timeout,
        budget=shared_budget(mbit),
        compress=args.compress,
        bulk=args.bulk,
    )
    if args.all:
        return asyncio.run(pull_all(call, options))
    return call.on_host(lambda transport: _pull_one(call, transport, options))


async def _pull_one(call: Call, transport: Transport, options: PullOptions) -> int:
    from rgt_tui.services.pull import PullError, pull_host
    from rgt_tui.services.pull.ranks import rank_pull_hosts

    host = call.host
    try:
        with PullProgressView(call.err) as progress:
            result = await pull_host(
                host, call.fleet.results_dir, transport, options=options, on_progress=progress
            )
    except PullError as exc:
        return call.fail(f"{host.name}: {exc.message}", fix=exc.fix)
    print(format_pull_result(result))
    ok = result.ok
    for rank in rank_pull_hosts(host):  # a group with pull_ranks = "all" (issue 41)
        _, got = await _one(call, rank, options, None)
        if isinstance(got, tuple):
            call.fail(f"{rank.name}: {got[0]}", fix=got[1])
            ok = False
            continue
        # A rank's folder is verified with its group's (`verify pair.rank1` names no
        # host: hour s18b #12).
        print(format_pull_result(got, verify_as=host.name))
        ok = ok and got.ok
    return EXIT_OK if ok else EXIT_PROBLEMS


def pull_interrupted(call: Call) -> int:
    """Ctrl-C: the pull was cancelled first, so its parts are on disk; say where."""
    from rgt_tui.services.records import host_results_dir, records_dir

    if call.args.all:
        call.fail(
            f"interrupted; what arrived is kept in each host's folder under "
            f"{call.fleet.results_dir}/ (.rgt/parts/) and nothing unchecked was marked "
            "pulled — re-run the same pull to resume"
        )
        return EXIT_INTERRUPTED
    parts = records_dir(host_results_dir(call.fleet.results_dir, call.host)) / "parts"
    call.fail(
        f"{call.host.name}: interrupted; what arrived is kept in {parts}/ "
        "and nothing unchecked was marked pulled — re-run the same pull to resume"
    )
    return EXIT_INTERRUPTED


# Ctrl-C: a verification is recorded only whole, at its end.
verify_interrupted = interrupted_saying(
    lambda name: (
        "nothing was recorded (an earlier verification, if any, stands as it was) "
        f"— re-run rgt-tui verify {name}"
    )
)


async def run_verify(call: Call, transport: Transport) -> int:
    """Verify one host's pulled copy; exit 0 only when everything verified."""
    from rgt_tui.services.pull.ranks import rank_pull_hosts
    from rgt_tui.services.verify.report import format_report, report_to_json
    from rgt_tui.services.verify.run import verify_host

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
    # A group with pull_ranks = "all": each further rank's folder is verified as well,
    # each re-scanned over its own box's connection (issue 41).
    ranks = [await _verify_rank(call, rank) for rank in rank_pull_hosts(call.host)]
    if call.args.json:
        data = report_to_json(report)
        if ranks:
            data["ranks"] = [report_to_json(r) for r in ranks]
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        for one in (report, *ranks):
            print(format_report(one, verbose=call.args.all))
    return EXIT_OK if all(r.ok for r in (report, *ranks)) else EXIT_PROBLEMS


async def _verify_rank(call: Call, rank: HostConfig) -> VerificationReport:
    """A group rank's pulled folder (``pair.rank1``), re-scanned over that box's own
    connection (none with --offline; an unreachable box: the report says no re-scan)."""
    from rgt_tui.services.verify.run import verify_host

    async with host_connection(rank) as transport:  # connects only for the re-scan
        return await verify_host(
            rank,
            call.fleet.results_dir,
            transport=None if call.args.offline else transport,
            python=call.fleet.verify_python,
            stall_timeout_s=call.args.stall_timeout,
        )


def format_pull_result(result: PullResult, verify_as: str | None = None) -> str:
    """The summary printed after a pull: counts, then every failure, conflict and refusal."""
    m = result.manifest
    resumed = sum(1 for f in result.pulled if f.resumed_from)
    lines = [
        f"{result.host}: {len(result.pulled)} pulled ({resumed} resumed), "
        f"{len(result.skipped)} already here, {len(result.failed)} failed — "
        f"{fmt_bytes(result.bytes_received)} in {fmt_took(result.elapsed_s)} into {result.dest}",
    ]
    if result.copy_s > 0 and result.bytes_received:
        rate = result.bytes_received / result.copy_s / 1e6
        lines[0] += f" (copy stage: {rate:.1f} MB/s over {result.copy_s:.2f} s)"
    if result.stages:  # where the time went (issue 44); the manifest overlaps the copy
        spans = [f"{name} {s:.2f} s" for name, s in result.stages if name != "manifest"]
        whole = [f"; box hashes whole at {s:.2f} s" for n, s in result.stages if n == "manifest"]
        lines.append(f"  stages: {', '.join(spans)}{''.join(whole)}")
    lines += [f"  {line}" for line in large_files_lines(result)]
    if result.egress is not None and result.to_move:  # U14: what the plan moved, its cost
        lines.append(f"  {moved_line(result.to_move, result.egress)}")
    lines += [f"  small files: {text}" for text in tar_streams_text(result.tar_streams)]
    lines += [f"  {label:<9} {text}" for label, text in result.notices]
    lines += [f"  FAILED    {path}: {why}" for path, why in result.failed]
    lines += [f"  CONFLICT  {path}: {why}" for path, why in result.conflicts]
    lines += [  # skipped by rule (a secret, rgt-tui's records): on purpose, not a shortfall
        f"  {'SKIPPED' if skipped_by_rule(r.reason) else 'REFUSED':<9} "
        f"{m.display(r.root, r.path)}: {r.reason}"
        for r in m.refused
    ]
    logs = result.box_logs
    if logs is not None:  # the box's queue and cell logs, kept beside the results (U20)
        got = f"{logs.pulled} new or grown" if logs.pulled else "none new"
        if logs.listed or not logs.note:  # else the note says why there are none: once
            lines.append(f"  box logs: {logs.listed} files ({got}) in {logs.folder}")
        lines += [f"  box logs: {why}" for why in filter(None, [logs.note])]
        lines += [f"  box logs: FAILED {path}: {why}" for path, why in logs.failed]
    if result.code is not None:  # the code that made the results (U42)
        from rgt_tui.services.result_code import result_code_lines

        lines += [f"  {line}" for line in result_code_lines(result.code)]
    if result.ok:
        from rgt_tui.services.result_code import running_line

        lines += [f"  RUNNING   {line}" for line in filter(None, [running_line(result.code)])]
        lines.append(
            f"every file of the manifest ({len(m.entries)}) is here with a matching SHA-256; "
            f"next: rgt-tui verify {verify_as or result.host}"
        )
    else:
        lines += [f"  MISSING   {why}" for why in result.shortfalls]
        # "It resumes" only where a copy stopped part-way; else there is nothing to resume.
        again = " (it resumes)" if result.failed else ""
        lines.append(f"NOT COMPLETE: fix the above and re-run the same pull{again}")
    return "\n".join(lines)


# -- pull --all: every host at once, one connection each, one budget ----------------------


async def pull_all(call: Call, options: PullOptions) -> int:
    """Pull every host of the fleet at once; print one summary; 0 when all are complete."""
    from rgt_tui.services.pull.ranks import rank_pull_hosts

    # A group with pull_ranks = "all": its further ranks too, each a pull of its own.
    hosts = [h for host in call.fleet.hosts for h in (host, *rank_pull_hosts(host))]
    if not hosts:
        return call.fail("the fleet file names no host", code=EXIT_BAD_INPUT)
    # A box recorded torn down is done with: --all leaves it (a user's hour saw it pulled
    # without a word, while `status` flags it); by name it is pulled anyway.
    from rgt_tui.services.box.torn_down import torn_down_hosts

    torn = torn_down_hosts(call.fleet, [h.name for h in hosts])
    for name, (at, _box) in torn.items():
        print(
            f"{name}: skipped: recorded as torn down at {local_time(at)} "
            f"(rgt-tui pull {name} pulls it anyway)"
        )
    hosts = [h for h in hosts if h.name not in torn]
    if not hosts:
        return EXIT_OK
    started = time.monotonic()
    with FleetPullView(call.err, [h.name for h in hosts]) as view:
        outcomes = await _every_host(_one(call, h, options, view) for h in hosts)
    elapsed = time.monotonic() - started
    groups = {r.name: host.name for host in call.fleet.hosts for r in rank_pull_hosts(host)}
    print(format_fleet_summary(outcomes, elapsed, options, groups))
    complete = all(not isinstance(o, tuple) and o.ok for _, o in outcomes)
    return EXIT_OK if complete else EXIT_PROBLEMS


async def _every_host(pulls: Iterable[Awaitable[T]]) -> list[T]:
    """Every host's pull at once; on Ctrl-C each is cancelled and *waited for*: each keeps
    its parts, saves its record and closes its connection before the command says it was
    interrupted (a bare gather returned at the first one cancelled, and the loop's end
    cut the others' clean-up short: tracebacks, and a file installed but not recorded)."""
    tasks = [asyncio.ensure_future(p) for p in pulls]
    try:
        await asyncio.wait(tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks)  # their clean-up, once (a second Ctrl-C still stops it)
        for task in tasks:  # retrieved: a host's own failure is not "never retrieved"
            if not task.cancelled():
                task.exception()
        raise
    return [task.result() for task in tasks]


async def _one(
    call: Call, host: HostConfig, options: PullOptions, view: FleetPullView | None
) -> tuple[str, PullResult | tuple[str, str]]:
    """One host's pull on a connection of its own: its result, or (what went wrong, fix).
    Without a ``view`` (a group's further rank after its own pull) no progress is drawn."""
    from rgt_tui.services.pull import PullError, pull_host

    try:
        async with host_connection(host) as transport:
            result = await pull_host(
                host,
                call.fleet.results_dir,
                transport,
                options=options,
                on_progress=view.on(host.name) if view else None,
            )
    except PullError as exc:
        if view:
            view.fail(host.name, exc.message)
        return host.name, (exc.message, exc.fix or "re-run the same pull (it resumes)")
    except TransportError as exc:
        if view:
            view.fail(host.name, exc.message)
        return host.name, (f"unreachable: {exc.message}", exc.fix or "check the box is up")
    return host.name, result


def format_fleet_summary(
    outcomes: list[tuple[str, PullResult | tuple[str, str]]],
    elapsed: float,
    options: PullOptions,
    groups: dict[str, str] | None = None,
) -> str:
    """Each host's summary (or why it failed), then the fleet's total and rate.
    ``groups``: a rank's pull name → its group's (which `verify` takes)."""
    lines: list[str] = []
    received = complete = 0
    results = []
    for host, outcome in outcomes:
        if isinstance(outcome, tuple):
            why, fix = outcome
            lines += [f"{host}: FAILED: {why}", f"  fix: {fix}"]
            continue
        lines.append(format_pull_result(outcome, (groups or {}).get(host)))
        received += outcome.bytes_received
        complete += outcome.ok
        results.append(outcome)
    rate = received * 8 / elapsed / 1e6 if elapsed > 0 else 0.0
    budget = f" (budget {options.budget.mbit:g} Mbit/s)" if options.budget is not None else ""
    lines += fleet_egress_lines(results)  # before the verdict, which ends the output
    lines.append(
        f"all hosts: {complete}/{len(outcomes)} complete — {fmt_bytes(received)} in "
        f"{fmt_took(elapsed)}, {rate:.1f} Mbit/s{budget}"  # "0s" beside a rate read as a slip
    )
    return "\n".join(lines)


def tar_streams_text(streams: tuple[TarStream, ...]) -> list[str]:
    """A line per codec and reason: a pull whose small files came in several streams (the
    early copy's, then the rest's) says so once, with their sums (issue ux-e 16)."""
    from rgt_tui.services.pull.types import TarStream

    groups: dict[tuple[str, str], list[TarStream]] = {}
    for t in streams:
        if t.wire:
            groups.setdefault((t.codec, t.reason), []).append(t)
    lines = []
    for (codec, reason), group in groups.items():
        text = tar_stream_text(
            TarStream(codec, sum(t.wire for t in group), sum(t.tar for t in group), reason)
        )
        lines.append(
            text
            if len(group) == 1
            else f"{len(group)} {text.replace('tar stream', 'tar streams', 1)}"
        )
    return lines


def tar_stream_text(t: TarStream) -> str:
    """One tar stream's codec and bytes on the wire (U15): ``zstd -1: 31M → 6.7M on the
    wire (the link (~21 MB/s by 200 ms round trip) is slower than zstd -1)``."""
    codec = "uncompressed" if t.codec == "none" else f"{t.codec} -1"
    return f"tar stream {codec}: {fmt_bytes(t.tar)} → {fmt_bytes(t.wire)} on the wire ({t.reason})"


def fleet_egress_lines(results: list[PullResult]) -> list[str]:
    """The fleet's total transferred and its egress cost, each host at its own price (U14);
    hosts with no known price are named, not counted as free."""
    moved = sum(r.to_move for r in results)
    if not moved:
        return []
    priced = [(r, egress_usd(r.to_move, r.egress)) for r in results if r.egress is not None]
    usd = sum(c for _, c in priced if c is not None)
    unknown = [r.host for r, c in priced if c is None and r.to_move]
    line = f"all hosts: {fmt_bytes(moved)} transferred"  # done, as each host's line says
    if usd > 0:
        line += f" · egress ≈ {fmt_usd(usd)}"
    if unknown:
        line += f" · egress price not set for {', '.join(unknown)} (egress_usd_per_gb)"
    return [line]
