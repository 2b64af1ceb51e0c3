"""`rgt-tui logs HOST [CELL] [--follow] [--tail N]`: print or follow a queue or cell log.

Without CELL it prints the queue runner's log (every cell's output plus runner lines);
with CELL, that cell's own log, where crash lines are marked ``!!`` (red on a terminal).
The queue log is never marked: it concatenates cells, so a crash there would be pinned
on whichever cell came after it.

Exit codes as in cli.py: 0 printed (or followed until Ctrl-C), 1 unreachable or no log
yet, 2 unknown host or bad arguments. Registered in cli.py through ``add_logs_parser``;
until then ``python -m rgt_tui.cli_logs ...`` runs it on its own.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
from collections.abc import Sequence
from typing import TextIO

from rgt_tui.cli_args import add_hosts_arg, load_fleet_arg
from rgt_tui.domain.config import ConfigError, HostConfig
from rgt_tui.domain.logscan import CRITICAL, LogChunk, LogLine, classify_line
from rgt_tui.services.logs import (
    LogFollower,
    cell_log_path,
    iter_log,
    queue_log_path,
    reconnect_with_backoff,
)
from rgt_tui.transport import Transport, TransportError, open_transport

EXIT_OK, EXIT_PROBLEMS, EXIT_BAD_INPUT = 0, 1, 2

_RED, _BOLD_RED, _DIM, _RESET, _CLEAR = "\x1b[31m", "\x1b[1;31m", "\x1b[2m", "\x1b[0m", "\r\x1b[K"


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def add_logs_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``logs`` sub-command to ``rgt-tui``'s sub-parsers; returns its parser."""
    parser = subparsers.add_parser(
        "logs",
        help="print or follow a host's queue log, or one cell's log",
        description="Print a host's queue log (no CELL) or one cell's own log; "
        "--follow keeps printing new lines until Ctrl-C, across drops and log rotation.",
    )
    add_hosts_arg(parser)
    parser.add_argument("host", help="host name from the fleet file")
    parser.add_argument("cell", nargs="?", help="cell name (its config's file stem)")
    parser.add_argument(
        "-f", "--follow", action="store_true", help="keep printing new lines until Ctrl-C"
    )
    parser.add_argument(
        "-n", "--tail", type=_count, metavar="N", help="start with the last N lines only"
    )
    parser.add_argument(
        "--poll", type=float, default=0.5, metavar="S", help="seconds between checks (0.5)"
    )
    return parser


def cmd_logs(args: argparse.Namespace) -> int:
    """Run ``rgt-tui logs``; returns the exit code."""
    try:
        host = load_fleet_arg(args).host(args.host)
    except ConfigError as exc:
        print(f"rgt-tui: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyError as exc:
        print(f"rgt-tui logs: {exc.args[0]}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        path = cell_log_path(args.cell) if args.cell else queue_log_path()
    except ValueError as exc:
        print(f"rgt-tui logs: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        return asyncio.run(_logs(host, path, args, sys.stdout, sys.stderr))
    except KeyboardInterrupt:
        return EXIT_OK  # Ctrl-C is how --follow ends


async def _logs(
    host: HostConfig, path: str, args: argparse.Namespace, out: TextIO, err: TextIO
) -> int:
    highlight = bool(args.cell)
    printer = _Printer(out, tty=out.isatty())
    async with open_transport(host) as transport:
        try:
            await transport.connect()
            last: LogChunk | None = None
            try:
                async for chunk in iter_log(
                    transport, path, tail_lines=args.tail, highlight=highlight
                ):
                    printer.lines(chunk.lines)
                    last = chunk
            except FileNotFoundError:
                print(await _missing(transport, host.name, path, args.cell), file=err)
                return EXIT_PROBLEMS
            except OSError as exc:  # permission denied, a directory, ...
                print(f"rgt-tui logs: {host.name}: cannot read {path}: {exc.strerror}", file=err)
                return EXIT_PROBLEMS
            assert last is not None
            if not args.follow:
                if last.partial:  # the file's last line has no newline yet: show it anyway
                    text = last.partial
                    printer.lines((LogLine(text, classify_line(text) if highlight else None),))
                return EXIT_OK
            await _follow(transport, path, last, args, highlight, printer, err)
            return EXIT_OK
        except TransportError as exc:
            fix = f" — {exc.fix}" if exc.fix else ""
            print(f"rgt-tui logs: {host.name} unreachable: {exc.message}{fix}", file=err)
            return EXIT_PROBLEMS
        finally:
            printer.clear_partial()


async def _follow(
    transport: Transport,
    path: str,
    start: LogChunk,
    args: argparse.Namespace,
    highlight: bool,
    printer: _Printer,
    err: TextIO,
) -> None:
    def retrying(attempt: int, delay: float, exc: TransportError) -> None:
        printer.notice(f"-- {transport.host}: {exc.message}; retry {attempt} in {delay:.1f} s", err)

    follower = LogFollower(
        transport,
        path,
        resume=start.position,
        poll=args.poll,
        highlight=highlight,
        reconnect=reconnect_with_backoff(transport, on_retry=retrying),
    )
    printer.partial(start.partial)
    status = "following"
    try:
        async for chunk in follower:
            if chunk.status != status:
                printer.notice(_status_line(transport.host, path, chunk), err)
                status = chunk.status
            if chunk.gap:
                printer.notice("-- lines may be missing: the log was replaced meanwhile", err)
            if chunk.rotated:
                printer.notice("-- log rotated or truncated: reading the new file", err)
            printer.lines(chunk.lines)
            printer.partial(chunk.partial)
    finally:
        await follower.close()


def _status_line(host: str, path: str, chunk: LogChunk) -> str:
    if chunk.status == "reconnecting":
        return f"-- {host}: connection lost ({chunk.error}); reconnecting"
    if chunk.status == "waiting":
        return f"-- {host}: {path} is gone; waiting for it to come back"
    return f"-- {host}: following {path} again"


async def _missing(transport: Transport, host: str, path: str, cell: str | None) -> str:
    """Why there is no log: the queue never launched, or this cell has not started."""
    queue_log = queue_log_path()
    launched = cell is not None and await transport.stat(queue_log) is not None
    if not launched:
        return (
            f"rgt-tui logs: {host} has no {queue_log}: the queue has not been launched "
            f"on this host (rgt-tui launch {host})"
        )
    return (
        f"rgt-tui logs: {host} has no {path}: cell {cell!r} has not started yet "
        "(or is not in this host's queue)"
    )


class _Printer:
    """Writes log lines; marks crash lines; on a terminal, shows the live partial line."""

    def __init__(self, out: TextIO, *, tty: bool) -> None:
        self.out = out
        self.tty = tty
        self._partial_shown = False

    def lines(self, lines: Sequence[LogLine]) -> None:
        if not lines:
            return
        self.clear_partial()
        for line in lines:
            self.out.write(self._format(line) + "\n")
        self.out.flush()

    def _format(self, line: LogLine) -> str:
        if line.crash is None:
            return line.text
        text = f"!! {line.text}"
        if self.tty:
            colour = _BOLD_RED if line.crash.severity == CRITICAL else _RED
            return f"{colour}{text}{_RESET}"
        return text

    def partial(self, text: str) -> None:
        """A tqdm bar still being drawn: shown dim, replaced in place (terminals only)."""
        if not self.tty:
            return  # a pipe gets the line once it is complete
        self.clear_partial()
        # One screen row at most: "\r" + clear-line can only take back the last row.
        text = text[: max(1, shutil.get_terminal_size().columns - 1)]
        if text:
            self.out.write(f"{_DIM}{text}{_RESET}")
            self._partial_shown = True
        self.out.flush()

    def clear_partial(self) -> None:
        if self._partial_shown:
            self.out.write(_CLEAR)
            self._partial_shown = False

    def notice(self, text: str, err: TextIO) -> None:
        self.clear_partial()
        self.out.flush()
        print(text, file=err, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``logs`` on its own (``python -m rgt_tui.cli_logs HOST [CELL] ...``)."""
    parser = argparse.ArgumentParser(prog="rgt-tui")
    add_logs_parser(parser.add_subparsers(dest="command"))
    return cmd_logs(parser.parse_args(["logs", *(sys.argv[1:] if argv is None else argv)]))


if __name__ == "__main__":
    sys.exit(main())
