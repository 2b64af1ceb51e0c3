"""The `pull` and `verify` sub-commands (registered by cli.py through ``add_pull_parsers``).

`rgt-tui pull HOST` copies the host's results into ``<results_dir>/HOST/`` with a manifest,
resume, retries and hash checks, drawing progress bars on a terminal and plain lines
otherwise. `rgt-tui verify HOST [--json]` checks the pulled copy and writes the record the
teardown gate reads. Exit codes follow cli.py: 0 everything pulled / verified, 1 the
command ran and found problems, 2 bad input (unknown host, fleet file).

Both command functions take ``(args, fleet=None)``: cli.py may pass the loaded fleet, or
leave it to them to load ``--hosts`` / ``$RGT_HOSTS`` / ``./hosts.toml``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from rgt_tui.cli_args import add_hosts_arg as shared_hosts_arg
from rgt_tui.cli_args import host_or_report, load_fleet_arg
from rgt_tui.domain.config import ConfigError, Fleet
from rgt_tui.domain.units import fmt_bytes, fmt_duration
from rgt_tui.transport import TransportError, open_transport

EXIT_OK, EXIT_PROBLEMS, EXIT_BAD_INPUT = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command stopped by Ctrl-C


def add_pull_parsers(
    subparsers: Any, add_hosts_arg: Callable[[argparse.ArgumentParser], None] | None = None
) -> None:
    """Register `pull` and `verify` on the top-level sub-parsers."""
    add_hosts = add_hosts_arg or shared_hosts_arg
    pull = subparsers.add_parser(
        "pull", help="pull HOST's results: manifest on the box, resumable hash-checked copies"
    )
    add_hosts(pull)
    pull.add_argument("host", metavar="HOST")
    pull.add_argument(
        "--jobs", type=int, default=4, metavar="N", help="large files in flight (default 4)"
    )
    pull.add_argument(
        "--stall-timeout",
        type=float,
        default=30.0,
        metavar="S",
        help="seconds without data before reconnecting (default 30)",
    )
    verify = subparsers.add_parser(
        "verify", help="verify HOST's pulled copy: hashes, loads, leftovers, roster"
    )
    add_hosts(verify)
    verify.add_argument("host", metavar="HOST")
    verify.add_argument("--json", action="store_true", help="print the verification record")
    verify.add_argument("--offline", action="store_true", help="do not re-scan the box for changes")
    verify.add_argument("--all", action="store_true", help="list every file, not only problems")


def cmd_pull(args: argparse.Namespace, fleet: Fleet | None = None) -> int:
    """Pull one host's results; exit 1 unless every file is here with a matching hash."""
    from rgt_tui.services.pull import PullError, PullOptions, pull_host
    from rgt_tui.services.records import host_results_dir, records_dir

    fleet = fleet or load_fleet_arg(args)
    host = host_or_report(fleet, args.host)
    if host is None:
        return EXIT_BAD_INPUT
    if args.jobs < 1:
        print("rgt-tui pull: --jobs must be at least 1", file=sys.stderr)
        return EXIT_BAD_INPUT
    options = PullOptions(concurrency=args.jobs, stall_timeout_s=args.stall_timeout)
    printer = ProgressPrinter(sys.stderr, tty=sys.stderr.isatty())

    async def run() -> Any:
        async with open_transport(host) as transport:
            return await pull_host(
                host, fleet.results_dir, transport, options=options, on_progress=printer
            )

    try:
        result = asyncio.run(run())
    except PullError as exc:
        printer.close()
        print(f"rgt-tui pull {host.name}: {exc.message}", file=sys.stderr)
        if exc.fix:
            print(f"  fix: {exc.fix}", file=sys.stderr)
        return EXIT_PROBLEMS
    except TransportError as exc:
        printer.close()
        print(f"rgt-tui pull {host.name}: {exc}", file=sys.stderr)
        return EXIT_PROBLEMS
    except KeyboardInterrupt:  # asyncio.run cancelled the pull first: its parts are on disk
        printer.close()
        parts = records_dir(host_results_dir(fleet.results_dir, host)) / "parts"
        print(
            f"rgt-tui pull {host.name}: interrupted; what arrived is kept in {parts}/ "
            "and nothing unchecked was marked pulled — re-run the same pull to resume",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    printer.close()
    print(format_pull_result(result))
    return EXIT_OK if result.ok else EXIT_PROBLEMS


def cmd_verify(args: argparse.Namespace, fleet: Fleet | None = None) -> int:
    """Verify one host's pulled copy; exit 0 only when everything verified."""
    from rgt_tui.services.verify import verify_host
    from rgt_tui.services.verify_report import format_report, report_to_json

    fleet = fleet or load_fleet_arg(args)
    host = host_or_report(fleet, args.host)
    if host is None:
        return EXIT_BAD_INPUT

    async def run() -> Any:
        # --offline checks only the local copy, so it never reaches the box.
        opened = contextlib.nullcontext() if args.offline else open_transport(host)
        async with opened as transport:
            return await verify_host(
                host, fleet.results_dir, transport=transport, python=fleet.verify_python
            )

    report = asyncio.run(run())
    if args.json:
        print(json.dumps(report_to_json(report), indent=2, ensure_ascii=False))
    else:
        print(format_report(report, verbose=args.all))
    return EXIT_OK if report.ok else EXIT_PROBLEMS


class ProgressPrinter:
    """The pull's progress callback for a terminal: bars on a tty, plain lines otherwise.

    On a tty it redraws a block (a total bar, then one bar per file in flight) in place at
    most every ``REDRAW_S``; elsewhere (a log, CI) it prints a line per phase and a total
    every ``LINE_EVERY_S`` seconds, so logs stay short.
    """

    REDRAW_S = 0.1
    LINE_EVERY_S = 5.0
    MAX_FILES = 6

    def __init__(self, stream: TextIO, *, tty: bool, clock: Callable[[], float] | None = None):
        import time

        self.stream = stream
        self.tty = tty
        self.clock = clock or time.monotonic
        self._drawn = 0  # lines of the block on screen
        self._last = -1e9
        self._phase = ""

    def __call__(self, p: Any) -> None:
        now = self.clock()
        phase_changed = p.phase != self._phase
        self._phase = p.phase
        if self.tty:
            if phase_changed or now - self._last >= self.REDRAW_S:
                self._last = now
                self._draw(p)
        elif phase_changed or now - self._last >= self.LINE_EVERY_S:
            self._last = now
            self.stream.write(f"{p.host}: {p.phase:<9} {_totals(p)}\n")
            self.stream.flush()

    def _draw(self, p: Any) -> None:
        import shutil

        width = max(40, shutil.get_terminal_size((100, 20)).columns - 1)
        lines = [f"{p.host} {p.phase:<9} {_bar(p.fraction, 20)} {_totals(p)}"[:width]]
        for f in p.active[: self.MAX_FILES]:
            frac = f.done / f.size if f.size else 1.0
            eta = fmt_duration(f.eta_s) if f.eta_s is not None else "?"
            tail = f" {f.state} {fmt_bytes(f.done)}/{fmt_bytes(f.size)} {fmt_bytes(f.rate)}/s eta {eta}"
            name = f.path if len(f.path) <= 40 else "…" + f.path[-39:]
            lines.append(f"  {_bar(frac, 12)} {name}{tail} {f.note}"[:width])
        if len(p.active) > self.MAX_FILES:
            lines.append(f"  … and {len(p.active) - self.MAX_FILES} more files in flight")
        up = f"\x1b[{self._drawn}F" if self._drawn else ""
        self.stream.write(up + "".join(f"\x1b[2K{line}\n" for line in lines) + "\x1b[J")
        self.stream.flush()
        self._drawn = len(lines)

    def close(self) -> None:
        """Leave the last drawn block on screen and move below it."""
        self._drawn = 0


def _bar(fraction: float, width: int) -> str:
    filled = int(max(0.0, min(1.0, fraction)) * width)
    return "[" + "#" * filled + "-" * (width - filled) + "]"


def _totals(p: Any) -> str:
    if p.phase in ("connecting", "manifest", "planning"):
        return p.message  # no totals before the manifest is in
    eta = fmt_duration(p.eta_s) if p.eta_s is not None else "?"
    text = (
        f"{p.files_done}/{p.files_total} files  {fmt_bytes(p.bytes_done)}/{fmt_bytes(p.bytes_total)}"
        f"  {fmt_bytes(p.rate)}/s  eta {eta}"
    )
    if p.files_failed:
        text += f"  {p.files_failed} FAILED"
    return text + (f"  {p.message}" if p.message else "")


def format_pull_result(result: Any) -> str:
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
    if result.ok:
        lines.append(
            f"every file of the manifest ({len(m.entries)}) is here with a matching SHA-256; "
            f"next: rgt-tui verify {result.host}"
        )
    else:
        lines.append("NOT COMPLETE: fix the above and re-run the same pull (it resumes)")
    return "\n".join(lines)


PULL_COMMANDS = {"pull": cmd_pull, "verify": cmd_verify}


def main(argv: Sequence[str] | None = None, stream: TextIO | None = None) -> int:
    """Run `pull` / `verify` on their own (``python -m rgt_tui.cli_pull pull HOST``)."""
    parser = argparse.ArgumentParser(prog="rgt-tui")
    shared_hosts_arg(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    add_pull_parsers(sub)
    args = parser.parse_args(argv)
    try:
        return PULL_COMMANDS[args.command](args)
    except ConfigError as exc:
        print(f"rgt-tui: {exc}", file=stream or sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
