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
import sys
import time
from collections.abc import Awaitable, Iterable
from typing import TYPE_CHECKING, TypeVar

from rgt_tui.cli.event_loop import run_async
from rgt_tui.cli.exit_codes import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK, EXIT_PROBLEMS
from rgt_tui.cli.pull_progress import FleetPullView, PullProgressView
from rgt_tui.cli.pull_text import empty_only, format_fleet_summary, format_pull_result
from rgt_tui.cli.runner import Call, interrupted_saying
from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.config_watch import MIN_PULL_RATE_MBIT
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.units import local_time
from rgt_tui.services.connect import Transport, host_connection

if TYPE_CHECKING:  # the services load lazily, so `rgt-tui status` does not pay for them
    from rgt_tui.services.pull import PullError, PullOptions, PullResult
    from rgt_tui.services.verify.types import VerificationReport

T = TypeVar("T")


# ``--bwlimit none``: no limit, even where the fleet file sets ``pull_rate_mbit`` (leaving
# the option out means the fleet's rate, so "none" needs a value of its own).
NO_LIMIT = "none"


def _mbit_or_none(text: str) -> float | str:
    if text.strip().lower() == NO_LIMIT:
        return NO_LIMIT
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of Mbit/s or none") from None


MAX_JOBS = 32  # more would only queue at the box's sshd (its MaxSessions is 10 by default)


def add_pull_arguments(parser: argparse.ArgumentParser) -> None:
    """``--all``, ``--bwlimit``, ``--jobs`` and ``--stall-timeout``."""
    parser.add_argument(
        "--all",
        action="store_true",
        help="pull every host at once (one connection each) under one bandwidth budget",
    )
    parser.add_argument(
        "--bwlimit",
        type=_mbit_or_none,
        metavar="MBIT",
        help="megabits per second for every pull of this command together, or none for no "
        "limit (default: [fleet] pull_rate_mbit)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        help="large files in flight, 1 to 32 (default: as many as the link's round trip "
        "needs, at most 4: one on a near box, 4 across an ocean)",
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
    if args.jobs is not None and not 1 <= args.jobs <= MAX_JOBS:
        # Each job opens its SFTP sessions up front: --jobs 100000 (a typo) sat 85 s at
        # its listing opening them, with nothing to copy (hour s45b #5).
        return call.fail(
            f"--jobs must be 1 to {MAX_JOBS} (got {args.jobs}): large files in flight at once",
            code=EXIT_BAD_INPUT,
        )
    if not args.stall_timeout > 0:  # also NaN
        return call.fail("--stall-timeout must be more than 0 seconds", code=EXIT_BAD_INPUT)
    if args.bwlimit not in (None, NO_LIMIT) and not (
        MIN_PULL_RATE_MBIT <= args.bwlimit < math.inf  # also NaN
    ):
        return call.fail(
            f"--bwlimit must be at least {MIN_PULL_RATE_MBIT} Mbit/s and finite "
            f"(got {args.bwlimit:g}); none for no limit",
            code=EXIT_BAD_INPUT,
        )
    if args.all and call.host_config is not None:
        return call.fail(
            f"name one HOST or --all, not both ({call.host_config.name} and --all)",
            code=EXIT_BAD_INPUT,
        )
    if not args.all and call.host_config is None:
        return call.fail("name one HOST, or --all for every host", code=EXIT_BAD_INPUT)
    mbit = call.fleet.watch.pull_rate_mbit if args.bwlimit is None else args.bwlimit
    if args.bwlimit == NO_LIMIT:
        mbit = None
    options = PullOptions(
        concurrency=args.jobs or PullOptions.concurrency,
        adapt_width=args.jobs is None,  # N given: that many, whatever the link
        stall_timeout_s=args.stall_timeout,
        budget=shared_budget(mbit),
        compress=args.compress,
        bulk=args.bulk,
    )
    if args.all:
        return run_async(pull_all(call, options))
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
        return call.fail(f"{host.name}: {_told(host, exc)}", fix=await _fix(call, host, exc))
    further = rank_pull_hosts(host)  # a group with pull_ranks = "all" (issue 41)
    if not further:
        print(format_pull_result(result))
        info = host.group
        if info is not None and info.pull_ranks == "0" and not result.manifest.entries:
            # torchrun's c10d rendezvous numbers the workers itself: the one a script saves
            # from may run on another box (h501 #2: "nothing was pulled", with no way on).
            print(
                f"  hint: the group's pull takes rank 0's box ({info.hosts[0]}) alone; "
                "torchrun's c10d rendezvous may run the worker that saves on another box "
                f'— set pull_ranks = "all" in group {host.name} to pull every box\'s folder'
            )
        return EXIT_OK if result.ok else EXIT_PROBLEMS
    results: list[PullResult] = [result]
    ok = True
    for rank in further:
        _, got = await _one(call, rank, options, None)
        if isinstance(got, tuple):
            call.fail(f"{rank.name}: {got[0]}", fix=got[1])
            ok = False
            continue
        results.append(got)
    # A rank may save nothing (the worker a script saves from ran elsewhere): its empty
    # folder is no shortfall once another folder of the group holds files (review h534
    # #4: "NOT COMPLETE" for a group whose every save landed on rank 0's box).
    held = any(r.manifest.entries for r in results)
    for got in results:
        empty = held and empty_only(got)
        # A rank's folder is verified with its group's (`verify pair.rank1` names no
        # host: hour s18b #12).
        print(format_pull_result(got, verify_as=host.name, empty_ok=empty))
        ok = ok and (got.ok or empty)
    return EXIT_OK if ok else EXIT_PROBLEMS


def _told(host: HostConfig, exc: PullError) -> str:
    """A failed pull's message, once prefixed with the host by the line that says it: the
    scan's own errors name it already ("box2: box2: manifest line is not JSON", h618 #6)."""
    return exc.message.removeprefix(f"{host.name}: ")


async def _fix(call: Call, host: HostConfig, exc: PullError) -> str | None:
    """A failed pull's fix; for a box never reached, what the rest of the product says of
    it (stopped by watch, preempted: not "check the port", hour s23a #6); for a scan whose
    output opened with text of the box's own, the text to remove ("re-run the pull" ran
    into it again: h618 #6)."""
    from rgt_tui.domain.gate_fixes import garbled_fix
    from rgt_tui.domain.teardown_gate import scan_garbled
    from rgt_tui.services.runtime.preemption import with_unreachable_fix

    if scan_garbled(exc.message):
        return garbled_fix(host.name, tui=False, then="pull again")
    if not isinstance(exc.__cause__, TransportError):
        return exc.fix
    told = await asyncio.to_thread(with_unreachable_fix, call.fleet, host, exc.__cause__)
    return told.fix or exc.fix


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
    from rgt_tui.services.verify.report import format_report, report_to_json

    if not call.args.stall_timeout > 0:  # also NaN
        return call.fail("--stall-timeout must be more than 0 seconds", code=EXIT_BAD_INPUT)
    offline = call.args.offline
    if not offline:
        from rgt_tui.services.journal import local_minute, recorded_torn_down_at

        torn = await asyncio.to_thread(recorded_torn_down_at, call.fleet, call.host.name)
        if torn is not None:
            # Nothing changes on a destroyed box: its re-scan could only fail, and made
            # the copy here NOT VERIFIED (h462 #3).
            offline = True
            print(
                f"{call.host.name} is recorded as torn down ({local_minute(torn)}): its "
                "pulled copy is checked here alone, with no re-scan of the box",
                file=sys.stderr,
            )
    from rgt_tui.services.verify.ranks import verify_group

    async def verify_one(host: HostConfig, write_record: bool) -> VerificationReport:
        if host is call.host:
            return await _verify_folder(call, host, transport, offline, write_record)
        # A group's further rank (``pair.rank1``): over that box's own connection.
        async with host_connection(host) as own:  # connects only for the re-scan
            return await _verify_folder(call, host, own, offline, write_record, call.host.name)

    # A group with pull_ranks = "all": each further rank's folder too, each re-scanned
    # over its own box's connection (issue 41), one roster over them all.
    report, *ranks = await verify_group(call.host, verify_one)
    if call.args.json:
        data = report_to_json(report)
        if ranks:
            data["ranks"] = [report_to_json(r) for r in ranks]
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        for one in (report, *ranks):
            print(format_report(one, verbose=call.args.all))
    return EXIT_OK if all(r.ok for r in (report, *ranks)) else EXIT_PROBLEMS


async def _verify_folder(
    call: Call,
    host: HostConfig,
    transport: Transport,
    offline: bool,
    write_record: bool,
    pulled_by: str | None = None,
) -> VerificationReport:
    """One folder's verify (--offline: the local copy alone, the transport never
    connected; an unreachable box: the report says no re-scan)."""
    from rgt_tui.services.verify.run import verify_host

    return await verify_host(
        host,
        call.fleet.results_dir,
        transport=None if offline else transport,
        python=call.fleet.verify_python,
        safe_globals=call.fleet.verify_safe_globals,
        stall_timeout_s=call.args.stall_timeout,
        pulled_by=pulled_by,
        write_record=write_record,
    )


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
            view.fail(host.name, _told(host, exc))
        fix = await _fix(call, host, exc)
        return host.name, (_told(host, exc), fix or "re-run the same pull (it resumes)")
    except TransportError as exc:
        if view:
            view.fail(host.name, exc.message)
        # Stopped by watch, preempted: said as the rest of the product says it.
        from rgt_tui.services.runtime.preemption import with_unreachable_fix

        exc = await asyncio.to_thread(with_unreachable_fix, call.fleet, host, exc)
        return host.name, (f"unreachable: {exc.message}", exc.fix or "check the box is up")
    return host.name, result
