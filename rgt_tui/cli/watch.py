"""`rgt-tui watch [--metrics ADDR:PORT] [--once] [--install]`: the fleet watched headless.

Foreground until Ctrl-C or SIGTERM (connections closed, the watch memory is saved as
each event is derived). One line per event on stdout — its title, never a notification
URL or a secret; notes and problems on stderr. Notifications go through
``services.watch.sinks.notify.Notifier`` to each host's ``notify`` targets; ``--metrics`` serves
``services.watch.sinks.metrics.FleetMetrics`` for Prometheus. ``--once``: one pass (cron, tests).
``--install``: writes a systemd user unit (or prints the launchd plist / ``nohup`` line
where systemd is absent) and says how to start it; it starts nothing itself.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any

from rgt_tui.cli.args import positive_seconds
from rgt_tui.cli.exit_codes import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK, EXIT_PROBLEMS
from rgt_tui.cli.runner import Call
from rgt_tui.domain.config import Fleet
from rgt_tui.domain.text import printable
from rgt_tui.domain.units import fmt_duration, plural
from rgt_tui.heap import settle_heap
from rgt_tui.paths import config_dir, journal_dir, state_dir
from rgt_tui.services.watch.events import WatchEvent
from rgt_tui.services.watch.sinks import Sink

ONCE_TIMEOUT_S = 30.0  # --once: each host's first sample
BODY_CHARS = 600  # a line of the journal, not the box's whole log line
NOTIFY_GRACE_S = 10.0  # at exit, sends under way get this long; the rest resume next start


def add_watch_arguments(parser: argparse.ArgumentParser) -> None:
    """``--metrics``, ``--once``, ``--timeout`` and ``--install``."""
    parser.add_argument(
        "--metrics",
        metavar="ADDR:PORT",
        help="serve Prometheus metrics there (127.0.0.1:9101; :9101 for every address)",
    )
    parser.add_argument(
        "--once", action="store_true", help="one pass over the fleet, then exit (cron, tests)"
    )
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        metavar="S",
        help="--once: seconds to wait for each host's first sample (default 30)",
    )
    parser.add_argument(
        "--install",
        action="store_true",
        help="write a systemd user unit (or print the launchd / nohup line) that runs this "
        "watch; starts nothing",
    )


class PrintSink(Sink):
    """One stdout line per event: the time, the kind, the severity, the title, then what
    the notification says (never a secret: rgt-tui's words and the box's alert text, never
    a target URL). The box's words are made printable: one line, no escape reaches the
    terminal or the journal.

    When the reader of stdout goes away (``watch | grep -m1 queue_done``), ``reader_gone``
    is set and the watch ends as SIGPIPE would end a tool (141), instead of watching on
    with a "failed" note per event."""

    def __init__(self, clock: Any = time.time) -> None:
        self.clock = clock
        self.reader_gone = asyncio.Event()

    def on_event(self, event: WatchEvent) -> None:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.clock()))
        # The body too (hour s31 CLI #4): "box1: disk.inodes /" alone sent the reader of
        # a journal to the notification for the figure and the fix.
        body = " ".join(event.body.split("\n")).strip()
        said = printable(event.title, None) + (f" — {printable(body, BODY_CHARS)}" if body else "")
        try:
            print(f"{stamp} {event.kind:<10} [{event.severity}] {said}", flush=True)
        except BrokenPipeError:
            self.reader_gone.set()


def run_watch(call: Call) -> int:
    """Watch the fleet (see the module docstring)."""
    # Options that would be ignored are refused, not dropped (hour s31 CLI #11): a
    # `--timeout 5` on a long-running watch bounded nothing, and metrics served for one
    # pass are never scraped.
    if call.args.timeout is not None and not call.args.once:
        return call.fail(
            "--timeout bounds the wait of --once only",
            fix="add --once, or leave --timeout out",
            code=EXIT_BAD_INPUT,
        )
    if call.args.once and call.args.metrics:
        return call.fail(
            "--metrics serves a watch that keeps running; --once ends after one pass",
            fix="leave one of them out",
            code=EXIT_BAD_INPUT,
        )
    fleet = call.fleet
    if call.args.install:
        return install(call, fleet)
    listen: tuple[str, int] | None = None
    if call.args.metrics:
        from rgt_tui.services.watch.sinks.metrics import parse_listen_address

        try:
            listen = parse_listen_address(call.args.metrics)
        except ValueError as exc:
            return call.fail(str(exc), code=EXIT_BAD_INPUT)
    return asyncio.run(_watch(call, fleet, listen))


async def _watch(call: Call, fleet: Fleet, listen: tuple[str, int] | None) -> int:
    from rgt_tui.services.watch.drivers.periodic_pull import watch_alive_for
    from rgt_tui.services.watch.sinks.notify import Notifier
    from rgt_tui.services.watch.store import sent_log_path
    from rgt_tui.services.watch.watcher import Watcher, watched_hosts

    def note(line: str) -> None:
        call.err.print(f"rgt-tui watch: {line}")

    hosts, skipped = watched_hosts(fleet)
    for line in skipped:
        note(line)
    if not call.args.once and not fleet.is_default:
        other = watch_alive_for(journal_dir(fleet.path))
        if other is not None:  # two started unwarned (s36 watch hour)
            note(
                f"another rgt-tui watch runs on this fleet (its periodic pulls said so "
                f"{fmt_duration(other)} ago): the two share the sent log, each host's "
                "pull cadence and each event, which only the watch that sees it first "
                "prints and counts in its metrics; each checks autostop and "
                "serves its own metrics; stop one unless you meant two"
            )
    notifier = Notifier(fleet, sent_log_path(journal_dir(fleet.path)), report=note)
    printer = PrintSink()
    sinks: list[Sink] = [printer, notifier]
    server = None
    if listen is not None:
        from rgt_tui.services.watch.sinks.metrics import FleetMetrics

        metrics = FleetMetrics(fleet)
        try:
            server = await metrics.serve(*listen)
        except OSError as exc:
            return call.fail(
                f"--metrics {call.args.metrics}: cannot listen ({exc.strerror or exc})",
                fix="pick a free port, or an address of this machine",
            )
        sinks.append(metrics)
    watcher = Watcher(
        fleet, sinks=sinks, hosts=hosts, report=note, left_out=tuple(call.left_out.items())
    )
    where = fleet.path or "this machine"
    # Only targets that can be sent to: a host whose one URL is mistyped was counted as
    # told, beside the line that says it cannot be used (s60's note).
    targets = sum(1 for h in hosts if notifier.reaches(h.name))
    unreached = sum(1 for h in hosts if h.watch.notify and not notifier.reaches(h.name))
    note(
        f"{'one pass over' if call.args.once else 'watching'} {plural(len(hosts), 'host')} "
        f"of {where}; {targets} with notification targets"
        + (f" ({unreached} more whose targets cannot be used, above)" if unreached else "")
        # The server's own URL: the port it got (":0" asks for any) and an IPv6 address
        # in brackets (h582 #6: "http://0.0.0.0:0/metrics", "http://::1:9101/metrics").
        + (f"; metrics at {server.url}" if server is not None else "")
        + ("" if call.args.once else "; Ctrl-C stops")
    )
    try:
        if call.args.once:
            events = await watcher.once(timeout=call.args.timeout or ONCE_TIMEOUT_S)
            if printer.reader_gone.is_set():
                raise BrokenPipeError  # main: ends quietly, 141
            note(plural(len(events), "event"))
        else:
            # A long run that holds the fleet, as the TUI does: the same collector settings
            # (heap.py; 500 hosts, two runs each under load: 27.3 / 29.7 % of a core
            # against 29.7 / 33.7 % without, docs/benchmarks.md).
            settle_heap()
            await _until_stopped(watcher, printer.reader_gone)
            if printer.reader_gone.is_set():
                raise BrokenPipeError  # main: ends quietly, 141
    finally:
        await notifier.aclose(NOTIFY_GRACE_S)  # each problem was said as it came
        if server is not None:
            server.close()
    if call.args.once and notifier.failures:
        # cron reads the exit status: a pass whose news did not reach its targets failed
        # (a user's hour saw exit 0 after Apprise refused the URL).
        note("not every notification was delivered (above): exit 1")
        return EXIT_PROBLEMS
    if call.args.once and notifier.unusable:  # none missed yet: the next event would
        note(
            f"{plural(len(notifier.unusable), 'notify target')} cannot be used (above), "
            "though no notification was missed in this pass: exit 1"
        )
        return EXIT_PROBLEMS
    if call.args.once and call.left_out:  # a pass that did not look at every entry
        note(f"{plural(len(call.left_out), 'entry', 'entries')} of the fleet file left out "
             "(above): exit 1")  # fmt: skip
        return EXIT_PROBLEMS
    return EXIT_OK


def _unit_text(path: Path) -> str | None:
    """A unit file's text; None when there is none ("" when it cannot be read: it is
    there, and differs)."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError):
        return ""


def watch_interrupted(call: Call) -> int:
    """Ctrl-C: what a stop mid-work left (it exited 130 without a word, mid-pull: an
    overnight hour, s39 watch #7), then 130."""
    call.fail(
        "interrupted; a periodic pull it cut short, if any, keeps what arrived (each "
        f"host's results folder under {call.fleet.results_dir}/, .rgt/parts/) and the next "
        "pull resumes it; nothing unchecked was marked pulled"
    )
    return EXIT_INTERRUPTED


async def _until_stopped(watcher: Any, reader_gone: asyncio.Event) -> None:
    """Run ``watcher`` until SIGTERM, the reader of stdout goes (``reader_gone``) or
    Ctrl-C (the runner's 130)."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    # No signal handlers on this platform (NotImplementedError) or off the main thread
    # (RuntimeError): SIGTERM then ends the process the default way, Ctrl-C still works.
    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGTERM, stop.set)
    running = asyncio.ensure_future(watcher.run())
    stopping = asyncio.ensure_future(stop.wait())
    gone = asyncio.ensure_future(reader_gone.wait())
    try:
        await asyncio.wait({running, stopping, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        autostop = getattr(watcher, "autostop", None)
        left = autostop.stops_running() if autostop is not None else []
        for task in (running, stopping, gone):
            task.cancel()
        await asyncio.gather(running, stopping, gone, return_exceptions=True)
        for line in left:
            print(f"watch: {line}", file=sys.stderr, flush=True)
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGTERM)
    if running.done() and not running.cancelled() and running.exception() is not None:
        raise running.exception()  # type: ignore[misc]


def install(call: Call, fleet: Fleet) -> int:
    """Write the systemd user unit (or print the launchd / nohup way) and say how to start
    it; an existing different unit is left alone."""
    from rgt_tui.services.watch.install import (
        LAUNCHD_LABEL,
        UNIT_NAME,
        WatchCommand,
        fleet_unit_name,
        launchd_plist,
        nohup_line,
        systemd_enable_lines,
        systemd_unit,
        unit_fleet,
    )

    if fleet.path is None:
        return call.fail(
            "no fleet file: watch --install runs the watch of one fleet file",
            fix="name it: rgt-tui watch --hosts PATH --install",
            code=EXIT_BAD_INPUT,
        )
    extra = ("--metrics", call.args.metrics) if call.args.metrics else ()
    command = WatchCommand(sys.executable, Path(fleet.path).resolve(), extra)
    log = state_dir() / "watch.log"
    if sys.platform == "darwin":
        agent = f"~/Library/LaunchAgents/{LAUNCHD_LABEL}.plist"
        print(f"# launchd (no systemd here): save this as {agent}")
        print(launchd_plist(command, log))
        print(f"# then, to run it now and at every login: launchctl load -w {agent}")
        return EXIT_OK
    if shutil.which("systemctl") is None:
        print("# no systemd here: run this to keep watch running after you log out")
        print(nohup_line(command, log))
        return EXIT_OK
    unit_dir = config_dir().parent / "systemd" / "user"
    text = systemd_unit(command, config_dir() / "watch.env")
    path = unit_dir / UNIT_NAME
    existing = _unit_text(path)
    watched = unit_fleet(existing) if existing is not None else None
    if watched is not None and watched != str(command.fleet):
        # Another fleet's watch has the first name: this one gets a unit of its own,
        # never the advice to remove that one (hour s34 CLI #10: following it unwatched
        # the other project and dropped its autostop).
        print(f"{path.name} watches {watched}: this fleet gets a unit of its own")
        path = unit_dir / fleet_unit_name(command.fleet)
        existing = _unit_text(path)
    if existing is not None:
        if existing != text:
            whose = unit_fleet(existing)
            what = (
                "it watches the same file with other options"
                if whose == str(command.fleet)
                else f"it watches {whose or 'something else'}"
            )
            return call.fail(
                f"{path} exists and differs from the unit for {command.fleet} ({what}); "
                "left as it is",
                fix=f"look at it, then remove it (rm {path}) and run --install again",
                code=EXIT_PROBLEMS,
            )
        print(f"{path}: already installed (unchanged)")
    else:
        unit_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    print("nothing was started; to run it now and at every login:")
    for line in systemd_enable_lines(path.name):
        print(f"  {line}")
    print(f"secrets for ${{VAR}} in notify URLs: KEY=value lines in {config_dir() / 'watch.env'}")
    return EXIT_OK
