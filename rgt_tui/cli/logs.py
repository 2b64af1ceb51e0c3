"""`rgt-tui logs HOST [CELL] [--follow] [--tail N] [--rank K]`: print or follow a queue or
cell log.

Without CELL it prints the queue runner's log (every cell's output plus runner lines);
with CELL, that cell's own log, where crash lines are marked ``!!`` (red on a terminal).
The queue log is never marked: it concatenates cells, so a crash there would be pinned
on whichever cell came after it.

A log is the box's text: every escape in it is dropped (``terminal_text.terminal_safe``:
OSC clipboard writes, hyperlinks and titles, cursor moves, clears, bells, C1 controls)
but its SGR colours, which are kept on a terminal only. ``--raw`` prints the lines as the
box wrote them, escapes and all, past the CLI's fence (for a pipe into ``less -R``).

A group (issue 41) is read on rank 0's box; ``--rank K`` reads rank K's box instead (each
rank writes its own logs on its own box, under the same names).

Exit codes (exit_codes.py): 0 printed, or followed until Ctrl-C; 1 unreachable or no
log yet; 2 unknown host, bad arguments, or a CELL that has no log and is not in the
host's queue file.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import time
from collections.abc import Sequence

from rich.console import Console
from rich.control import Control, ControlType
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

from rgt_tui.cli.args import positive_seconds
from rgt_tui.cli.exit_codes import EXIT_BAD_INPUT, EXIT_OK
from rgt_tui.cli.fence import Vetted, unfenced
from rgt_tui.cli.runner import Call, console
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.logscan import CRITICAL, LogChunk, LogLine, classify_line
from rgt_tui.domain.queue_state import PENDING, RETRY, RUNNING, SKIPPED, queue_is
from rgt_tui.domain.terminal_text import terminal_safe
from rgt_tui.services.connect import Transport, host_connection
from rgt_tui.services.logs import (
    LogFollower,
    cell_log_path,
    iter_log,
    queue_log_path,
    reconnect_with_backoff,
)
from rgt_tui.services.logs.cursor import unreadable_why
from rgt_tui.services.logs.paths import QUEUE_DIR

CRASH = Style(color="red")
CRITICAL_CRASH = Style(color="red", bold=True)
PARTIAL = Style(dim=True)


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def add_logs_arguments(parser: argparse.ArgumentParser) -> None:
    """CELL, ``--follow``, ``--tail`` and ``--poll``."""
    parser.add_argument(
        "cell", nargs="?", metavar="CELL", help="cell name (its config's file stem)"
    )
    parser.add_argument(
        "-f", "--follow", action="store_true", help="keep printing new lines until Ctrl-C"
    )
    parser.add_argument(
        "-n", "--tail", type=_count, metavar="N", help="start with the last N lines only"
    )
    parser.add_argument(
        "--poll",
        type=positive_seconds,
        default=0.5,
        metavar="S",
        help="seconds between checks (0.5; at least 0.05)",
    )
    parser.add_argument(
        "--rank",
        type=_count,
        metavar="K",
        help="a group's rank K: read the log on that rank's box (default: rank 0's)",
    )
    parser.add_argument(
        "--raw",
        action="store_true",
        help="print the log's escape sequences as the box wrote them (for a pipe or a file; "
        "UNSAFE on a terminal: the box's text could then drive it). Without it, only the "
        "log's colours are kept, and only on a terminal",
    )


def logs_interrupted(call: Call) -> int:
    """Ctrl-C is how --follow ends: not a failure."""
    return EXIT_OK


async def run_logs(call: Call, transport: Transport) -> int:
    """Print (or follow) the log; returns the exit code."""
    args, host = call.args, call.host
    try:
        path = cell_log_path(args.cell) if args.cell else queue_log_path()
    except ValueError as exc:
        return call.fail(str(exc), code=EXIT_BAD_INPUT)
    rank = args.rank
    if rank is None or rank == 0:
        return await _print_log(call, transport, path, host.name)
    group = host.group
    if group is None:
        return call.fail(
            f"{host.name} is not a group: --rank picks a box of a [[groups]] entry",
            fix=f"run `rgt-tui logs {host.name}` without --rank",
            code=EXIT_BAD_INPUT,
        )
    if rank >= group.nnodes:
        return call.fail(
            f"{host.name} has ranks 0 to {group.nnodes - 1} ({', '.join(group.hosts)}): "
            f"no rank {rank}",
            code=EXIT_BAD_INPUT,
        )
    async with host_connection(group.members[rank]) as box:
        return await _print_log(call, box, path, f"{host.name} rank {rank} ({group.hosts[rank]})")


async def _print_log(call: Call, transport: Transport, path: str, where: str) -> int:
    """Print (or follow) the log at ``path`` on ``transport``'s box (``where``: how the
    messages name it)."""
    args, host = call.args, call.host
    highlight = bool(args.cell)
    printer = LogPrinter(console(), call.err, raw=args.raw)
    try:
        await transport.connect()
        last: LogChunk | None = None
        try:
            async for chunk in iter_log(transport, path, tail_lines=args.tail, highlight=highlight):
                printer.lines(chunk.lines)
                last = chunk
        except FileNotFoundError:
            if args.cell and (unknown := await _not_a_cell(call.fleet, host, args.cell)):
                return call.fail(unknown, code=EXIT_BAD_INPUT)
            if host.is_login_node and not args.cell:
                # A login node runs no queue runner: each task writes its cell's own log
                # (s35 Slurm hour #5: "the queue has not been launched" after launches).
                return call.fail(
                    f"{where} is a Slurm login node: its queue has no queue log, each cell "
                    "has its own",
                    fix=f"rgt-tui logs {host.name} CELL (-f follows it; rgt-tui queue show "
                    f"{host.name} lists the cells)",
                )
            said = await _missing(transport, where, host, path, args.cell)
            if not (args.follow and said.endswith(NOT_STARTED)):
                return call.fail(said + await _pulled_copy(call, args.cell))
        except BrokenPipeError:
            raise  # the reader of stdout went away (`| head -1`): the quiet exit 141
        except OSError as exc:  # permission denied, a directory, ...
            return call.fail(f"{where}: cannot read {path}: {unreadable_why(exc, transport.host)}")
        if last is None:
            # -f on a cell still to run waits for it, as tail -F would (s37 dev-loop #15:
            # it stopped at once, and the user ran it again and again). Outside the handler
            # above: a log that appears unreadable is said, not a traceback (review s38).
            printer.notice(f"-- {where}: cell {args.cell!r} has not started yet; waiting for "
                           "its log (Ctrl-C stops)")  # fmt: skip
            if ended := await _wait_for_log(transport, host, path, args.cell, args.poll):
                return call.fail(f"{where}: {ended}")
            try:
                async for chunk in iter_log(
                    transport, path, tail_lines=args.tail, highlight=highlight
                ):
                    printer.lines(chunk.lines)
                    last = chunk
            except BrokenPipeError:
                raise  # the reader of stdout went away: the quiet exit 141
            except OSError as exc:  # a directory, no permission, gone again
                return call.fail(
                    f"{where}: cannot read {path}: {unreadable_why(exc, transport.host)}"
                )
        assert last is not None
        if not args.follow:
            if last.partial:  # the file's last line has no newline yet: show it anyway
                text = last.partial
                printer.lines((LogLine(text, classify_line(text) if highlight else None),))
            return EXIT_OK
        try:
            await _follow(transport, path, last, args, highlight, printer)
        except BrokenPipeError:
            raise  # the reader of stdout went away (`| head -1`): the quiet exit 141
        except OSError as exc:  # replaced by a directory, made unreadable (h552 #2)
            return call.fail(
                f"{where}: cannot read {path} any more: {unreadable_why(exc, transport.host)}",
                fix=f"once it is a readable file again, follow it again (rgt-tui logs -f "
                f"{host.name}{' ' + args.cell if args.cell else ''})",
            )
        return EXIT_OK
    finally:
        printer.clear_partial()


async def _follow(
    transport: Transport,
    path: str,
    start: LogChunk,
    args: argparse.Namespace,
    highlight: bool,
    printer: LogPrinter,
) -> None:
    def retrying(attempt: int, delay: float, exc: TransportError) -> None:
        printer.notice(f"-- {transport.host}: {exc.message}; retry {attempt} in {delay:.1f} s")

    follower = LogFollower(
        transport,
        path,
        resume=start.position,
        poll=args.poll,
        highlight=highlight,
        reconnect=reconnect_with_backoff(transport, on_attempt=retrying),
    )
    printer.partial(start.partial)
    status = "following"
    try:
        async for chunk in follower:
            if chunk.status != status:
                printer.notice(_status_line(transport.host, path, chunk))
                status = chunk.status
            if chunk.gap:
                printer.notice("-- lines may be missing: the log was replaced meanwhile")
            if chunk.rotated:
                printer.notice("-- log rotated or truncated: reading the new file")
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


async def _not_a_cell(fleet: Fleet, host: HostConfig, cell: str) -> str:
    """Why ``cell`` is no cell of ``host``'s queue file; '' when it is one, or when there is
    no queue file to tell by (then the missing log says what it can). A cell moved to
    another host, or in another host's file, is named there with its command (h612 #6:
    "no cell named" for a cell whose line read ``#moved-to box3``)."""
    from rgt_tui.services.queue.check import read_queue_file

    def read() -> tuple[tuple[str, ...], str, str] | None:
        if host.queue is None or not host.queue.is_file():
            return None
        parsed = read_queue_file(host.queue, host=host.name, default_epochs=host.epochs).parsed
        names = tuple(c.name for c in parsed.cells)
        moved = next((c.moved_to for c in parsed.moved if c.name == cell), "")
        elsewhere = ""
        for other in fleet.hosts:
            if other.name == host.name or other.queue is None or not other.queue.is_file():
                continue
            theirs = read_queue_file(other.queue, host=other.name, default_epochs=other.epochs)
            if any(c.name == cell for c in theirs.parsed.cells):
                elsewhere = other.name
                break
        return names, moved, elsewhere

    found = await asyncio.to_thread(read)
    if found is None or cell in found[0]:
        return ""
    cells, moved, elsewhere = found
    if moved or elsewhere:
        to = moved or elsewhere
        how = "was moved to" if moved else "is not its: it is in the queue of"
        return f"{host.name}: cell {cell!r} {how} {to}: rgt-tui logs {to} {shlex.quote(cell)}"
    return (
        f"{host.name}: no cell named {cell!r} in its queue ({host.queue}): no log to show. "
        f"Its cells: {', '.join(cells) or 'none'}"
    )


async def _pulled_copy(call: Call, cell: str | None) -> str:
    """Where a pull brought the cell's log, when the box's current records no longer hold
    it (a --fresh launch moved them aside): said beside "not started" (hour s23c #10)."""
    if cell is None:
        return ""
    from rgt_tui.services.records import fleet_host_dir, pulled_cell_log

    copy = fleet_host_dir(call.fleet, call.host) / pulled_cell_log(cell)
    if not await asyncio.to_thread(copy.is_file):
        return ""
    return (
        f" in the box's current queue records (a --fresh launch moves earlier ones aside to "
        f"~/.rgt/queue.archived.<time>); the copy a pull brought is {copy}"
    )


async def _wait_for_log(
    transport: Transport, host: HostConfig, path: str, cell: str, poll: float
) -> str:
    """Wait until ``path`` exists (""), or until the queue will not start ``cell`` after
    all: stopped, finished, the cell moved or skipped (why, in words). The queue is read
    again every ``QUEUE_LOOK_S``: a wait on a queue that ended went on forever."""
    from rgt_tui.domain.queue_waiting import will_not_start
    from rgt_tui.domain.slurm_queue import CLUSTER_UNKNOWN
    from rgt_tui.services.box_ctl import QueueError
    from rgt_tui.services.queue.view import read_queue_view

    looked = time.monotonic()
    while await transport.stat(path) is None:
        await asyncio.sleep(poll)
        if time.monotonic() - looked < QUEUE_LOOK_S:
            continue
        looked = time.monotonic()
        try:
            view = await read_queue_view(host, transport)
        except (QueueError, TransportError):
            continue  # a read that failed says nothing of the cell: the next look tries
        if view.state == CLUSTER_UNKNOWN:
            continue  # squeue did not answer: nothing is known of the cell either
        if await transport.stat(path) is not None:
            break
        seen = next((c for c in view.cells if c.name == cell), None)
        if seen is None:
            # In the local file, never sent (h612 #6: read as no such cell).
            return (
                f"cell {cell!r} is not on the box yet and {queue_is(view.state)}: stopped "
                f"waiting — send it: rgt-tui launch {host.name} (rgt-tui queue append "
                f"{host.name} while a queue runs there)"
            )
        if seen.status not in (PENDING, RETRY, RUNNING, SKIPPED):  # it ran: its log is gone
            return f"cell {cell!r} is {seen.label} but its log is not there; stopped waiting"
        why = will_not_start(view).get(cell)
        if why is not None:
            return f"cell {cell!r} {why}: it will not start; stopped waiting"
    return ""


QUEUE_LOOK_S = 10.0  # how often a wait for a cell's log reads the queue again


async def _missing(
    transport: Transport, where: str, host: HostConfig, path: str, cell: str | None
) -> str:
    """Why there is no log: the queue never launched, or this cell has not started. A
    launch leaves the runner's log, or on a Slurm login node (no runner) its arrays'
    record: a pending Slurm cell read "the queue has not been launched" (s39 Slurm #5)."""
    proof = f"{QUEUE_DIR}/slurm.jobs" if host.is_login_node else queue_log_path()
    launched = cell is not None and await transport.stat(proof) is not None
    if not launched:
        return (
            f"{where} has no {proof}: the queue has not been launched "
            f"on this host (rgt-tui launch {host.name})"
        )
    return f"{where} has no {path}: cell {cell!r} {NOT_STARTED}"


NOT_STARTED = "has not started yet"


class LogPrinter:
    """Writes log lines through Rich: crash lines marked ``!!`` (red where the terminal
    has colour); on an interactive terminal, the line still being drawn (a tqdm bar)
    shown dim and replaced in place.

    Lines go out as raw segments, not Text: a log's tabs and bytes must reach a pipe
    exactly as the box wrote them (Text would expand tabs and drop carriage returns).
    Each line is filtered (``terminal_safe``: SGR kept on a terminal) and goes past the
    fence as ``Vetted``; with ``raw``, lines go to the stream beneath the fence untouched.
    """

    def __init__(self, out: Console, err: Console, *, raw: bool = False) -> None:
        self.out = out
        self.err = err
        self.raw = raw
        self._partial_shown = False

    def _shown(self, text: str) -> str:
        return text if self.raw else terminal_safe(text, keep_sgr=self.out.is_terminal)

    def lines(self, lines: Sequence[LogLine]) -> None:
        if not lines:
            return
        self.clear_partial()
        if self.raw:  # what the user asked for: the box's bytes (as decoded), unfenced
            stream = unfenced(self.out.file)
            stream.write("".join(line.text + "\n" for line in lines))
            stream.flush()
            return
        segments: list[Segment] = []
        for line in lines:
            text = self._shown(line.text)
            if line.crash is None:
                segments.append(Segment(text))
            else:
                style = CRITICAL_CRASH if line.crash.severity == CRITICAL else CRASH
                segments.append(Segment(f"!! {text}", style))
            segments.append(Segment.line())
        self.out.print(Vetted(segments, keep_sgr=self.out.is_terminal), end="")

    def partial(self, text: str) -> None:
        """A tqdm bar still being drawn: shown dim, replaced in place (terminals only)."""
        if not self.out.is_interactive or self.raw:
            return  # a pipe gets the line once it is complete
        self.clear_partial()
        # No escape at all (SGR neither): the row is cut by width, which escapes break.
        # Tabs as the terminal draws them: counted as one cell each, the row wrapped, and
        # clearing it left its first part on screen as a line the log never had (h552 #3).
        shown = Text(terminal_safe(text).expandtabs(8), style=PARTIAL, no_wrap=True)
        # One screen row at most: clearing the line can only take back the last row.
        shown.truncate(max(1, self.out.width - 1))
        if shown:
            self.out.print(shown, end="")
            self._partial_shown = True

    def clear_partial(self) -> None:
        if self._partial_shown:
            self.out.control(Control.move_to_column(0), Control((ControlType.ERASE_IN_LINE, 2)))
            self._partial_shown = False

    def notice(self, text: str) -> None:
        self.clear_partial()
        self.err.print(text)
