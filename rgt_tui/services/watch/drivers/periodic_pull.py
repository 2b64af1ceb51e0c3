"""Periodic pulls: results (and the box's logs) leave a box on a cadence, verified.

``PullScheduler.run`` pulls each host whose cadence is due (the host's ``pull_every``,
else its profile's default: ``Profile.pull_every``) through the same resumable pull as
``p`` and ``rgt-tui pull`` (``services.pull.pull_host``), then verifies the copy
(``services.verify.run.verify_host``), so the teardown gate and autostop read fresh records.
``rgt-tui watch`` runs it headless; the TUI runs it while open.

Quiet when nothing is wrong: a host's periodic pulls start only when it has pull folders
(``pull``, or a ``durable_dir``/``workdir`` default that is no whole home: the config's
``pull_refused`` says when it is) and once it has produced results (``has_results``: the
queue view the runtime's poll already read shows a cell that ended, or one running for a
whole cadence; or an earlier pull brought files here; or, with no queue to read, the host
asks for its own ``pull_every``). Until then nothing runs and nothing is told:
``held_back`` says why, per host. Before this, every start on a spot box told two failures
before anything was launched.

One cadence per host, whoever pulls: a host due here whose last pull on disk (its
manifest record, written by any process: the TUI, ``watch``, ``rgt-tui pull``) is younger
than its cadence is skipped until that pull is a cadence old, and ``on_skip`` says so (the
TUI and ``watch`` open together pulled one host twice a cadence, each on its own clock).

Never two pulls of one host at once: a claim on the runtime's one ``HostLocks`` per host,
shared with whatever else runs jobs on hosts in the same process (the TUI's ``JobRunner``,
the autostop: never a pull while its check and stop run), and the
pull's own lock file across processes (``PullBusy``: skipped, tried again soon). Never
while the host's teardown is in progress: the in-process claim (a teardown job holds the
host) and the journal (``teardown_underway``): a typed confirmation whose re-scan has not
ended or opened the gate, the command not yet recorded. A torn-down box is not pulled.

Outcomes become ``WatchEvent``s for the notifier: ``pull`` when files arrived (counts,
bytes, how they verified) and ``pull_failed`` once per run of failures (the reason and
the fix; the key is the time the failures began). Every pull shares the process's one
bandwidth budget (``pull.budget.shared_budget``: ``[fleet] pull_rate_mbit``).

Over 450 lines on purpose: the reasons a due pull does not start (held back, one cadence
per host, a claim, a teardown) are the scheduler's one decision, read together; the
failures' memory is ``pull_failing``; which pulls are news, ``pull_news``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import socket
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.errors import HostKeyError, TransportError
from rgt_tui.domain.gate_events import ConfirmationTyped, Rescanned
from rgt_tui.domain.queue_state import (
    DONE,
    FAILED,
    INTERRUPTED,
    KILLED,
    RETRY,
    RUNNING,
    SLURM_ENDED,
    QueueView,
)
from rgt_tui.domain.text import printable
from rgt_tui.domain.units import fmt_bytes, fmt_duration, plural
from rgt_tui.profiles import profile
from rgt_tui.services.connections import SHARED_PULL_CONCURRENCY, FleetConnections
from rgt_tui.services.journal import HostJournal, Journal, JournalError, journal_for
from rgt_tui.services.pull import (
    PullBusy,
    PullError,
    PullOptions,
    PullProgress,
    PullResult,
    pull_host,
)
from rgt_tui.services.pull.budget import shared_budget
from rgt_tui.services.pull.plan import PulledRecord
from rgt_tui.services.records import host_results_dir, manifest_path
from rgt_tui.services.result_code import running_line
from rgt_tui.services.runtime.locks import HostLocks
from rgt_tui.services.runtime.stopped import StoppedHosts, stopped_line
from rgt_tui.services.teardown import TEARDOWN_TIMEOUT_S, confirmed_at
from rgt_tui.services.teardown.by_hand import voided_by
from rgt_tui.services.verify.ranks import verify_on_connections
from rgt_tui.services.verify.report import problem_count
from rgt_tui.services.verify.run import news_problems
from rgt_tui.services.verify.types import VerificationReport
from rgt_tui.services.watch.drivers.pull_failing import (
    forget_failing,
    keep_failing,
    told_failure,
)
from rgt_tui.services.watch.drivers.pull_news import PullNews, unheard
from rgt_tui.services.watch.events import WatchEvent
from rgt_tui.services.watch.store import watch_dir
from rgt_tui.timeouts import within
from rgt_tui.transport import Transport

log = logging.getLogger(__name__)

POLL_S = 30.0  # the longest the loop sleeps: a fleet file's new cadence is seen this soon
# watch's periodic pulls renew this file in the fleet's watch folder each loop (POLL_S at
# most); the TUI's leave the hosts to them while it is younger than ALIVE_S.
ALIVE_FILE = "periodic-pulls.alive"
ALIVE_S = 3 * POLL_S
WATCH_PULLS = (
    "rgt-tui watch runs the periodic pulls (what they bring goes to its notify targets); "
    "p pulls now"
)
RETRY_S = 300.0  # after a failure: again in this long (or the cadence, when shorter)
BUSY_RETRY_S = 60.0  # another pull or a teardown held the host: look again this soon
LISTED = 10  # the files a notice names one by one; the rest are counted
# A typed confirmation this old no longer holds pulls back, whatever the journal says
# (the teardown command's own limit, plus the re-scan before it).
TEARDOWN_WINDOW_S = TEARDOWN_TIMEOUT_S + 300.0
PERIODIC = "periodic pull"  # the job name a periodic pull claims a host under
# A cell in one of these has ended an attempt: whatever it wrote is there to pull.
ENDED = (DONE, FAILED, INTERRUPTED, KILLED, RETRY, *SLURM_ENDED)
NO_RESULTS = "no results yet: no cell has ended (or run a whole cadence) and nothing was pulled"


def watch_alive_for(journal_dir: Path) -> float | None:
    """Seconds since a `watch` on the fleet of ``journal_dir`` last said its periodic
    pulls run (``ALIVE_FILE``); None when none has within ``ALIVE_S``, or its process here
    is gone (blocking: a stat and a read of 200 bytes)."""
    path = watch_dir(journal_dir) / ALIVE_FILE
    try:
        age = time.time() - os.stat(path).st_mtime
        with path.open("rb") as f:
            said = f.read(200).decode("ascii", "replace")
    except OSError:
        return None
    if age >= ALIVE_S or _ended_here(said):
        return None
    return max(age, 0.0)


def _ended_here(said: str) -> bool:
    """The alive file was written by a watch on this machine (``PID HOSTNAME``) whose
    process is gone: killed or crashed within ``ALIVE_S``, a watch restarted at once
    (systemd's Restart=on-failure) warned of "another watch" that was itself (h582 #7).
    Another machine's (a shared journal folder) or an older file: by its age alone."""
    pid, _, host = said.strip().partition(" ")
    if host != socket.gethostname() or not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # another user's process: alive
        return False
    return False


def pull_every(host: HostConfig) -> float | None:
    """Seconds between ``host``'s periodic pulls: its own ``pull_every``, else its
    profile's default; None: never."""
    if host.watch.pull_every_s is not None:
        return host.watch.pull_every_s
    return profile(host.profile).pull_every


def no_pull_folders(host: HostConfig) -> str | None:
    """Why ``host`` has no folders a pull may take (None: it has): no ``pull`` and a
    default that is a whole home (``pull_refused``, with its file:line and fix)."""
    if host.pull_refused is not None:
        return host.pull_refused
    if not host.pull:
        return f"host {host.name!r} names no pull folders"
    return None


def results_shown(view: QueueView | None, every: float) -> bool:
    """Whether a queue view shows results to pull: a cell that ended an attempt (done,
    failed, killed, interrupted, a Slurm end), or one that has run a whole cadence (a long
    cell's checkpoints are what a spot box loses)."""
    if view is None:
        return False
    for cell in view.cells:
        if cell.status in ENDED or cell.ended_at is not None:
            return True
        if cell.status == RUNNING and cell.started_at and view.now - cell.started_at >= every:
            return True
    return False


def _pulled_words(new: int, changed: int) -> str:
    """``2 new result files pulled`` / ``1 changed result file pulled (earlier copy
    kept)``: a file the box rewrote is no new result, and its earlier copy takes room."""
    parts = [plural(new, "new result file")] if new or not changed else []
    if changed:
        parts.append(plural(changed, "changed result file"))
    kept = (
        "" if not changed else " (earlier copy kept)" if changed == 1 else " (earlier copies kept)"
    )
    return " and ".join(parts) + " pulled" + kept


def teardown_underway(
    jh: HostJournal, now: float, voided: Callable[[float], str] = lambda opened: ""
) -> str | None:
    """Why the journal says no pull may start now (a teardown in progress, or the box
    already torn down); None: nothing in the way. ``voided(opened)``: what since the
    confirmation that opened the gate voids it ("" when nothing: ``changed_since``); a
    voided one tears nothing down, so pulls go on (s35 resume hour #1: a launch after
    the typed name stopped the periodic pulls for 15 minutes, and a preempted cell then
    had no verified checkpoint to resume from)."""
    if jh.torn_down_at is not None:
        return "the box is torn down"
    typed = [(t, e) for t, e in jh.events if isinstance(e, ConfirmationTyped)]
    typed = [(t, e) for t, e in typed if e.text == jh.host]
    if not typed:
        return None
    at, confirmation = typed[-1]
    if now - at > TEARDOWN_WINDOW_S or any(r.at >= at for r in jh.teardowns):
        return None  # long ago, or its outcome is recorded
    rescanned = any(
        isinstance(e, Rescanned) and e.attempt == confirmation.attempt for _, e in jh.events
    )
    if not rescanned:
        return "a teardown was confirmed and its re-scan of the box is running"
    opened = confirmed_at(jh)
    if opened is not None and opened >= at and not voided(opened):
        return "a teardown is running (the gate opened for it)"
    return None  # the gate refused that confirmation, or it no longer holds


def pull_problems(
    host: str, shortfalls: Iterable[str], failed: Iterable[tuple[str, str]]
) -> list[str]:
    """What a pull's notice lists as gone wrong: its shortfalls, then the files not pulled
    with why, at most ``LISTED`` of each and the rest counted. Bounded: a box whose
    thousands of files never match their hashes made a notice, a sent-log line and a
    memory of megabytes (a review's hostile box, s38 #6)."""
    files = [f"{printable(p, 200)}: {printable(why, 300)}" for p, why in failed]
    short = list(shortfalls)
    problems = short[:LISTED] + files[:LISTED]
    if len(short) > LISTED:
        problems.insert(LISTED, f"and {len(short) - LISTED} more shortfalls")
    if len(files) > LISTED:
        problems.append(
            f"and {len(files) - LISTED} more files not pulled (rgt-tui pull {host} names each)"
        )
    return problems


class PullScheduler:
    """Pulls and verifies each host on its cadence; see the module docstring."""

    def __init__(
        self,
        fleet: Fleet,
        connections: FleetConnections,
        *,
        emit: Callable[[WatchEvent], None],
        clock: Callable[[], float] = time.time,
        locks: HostLocks,
        journal: Callable[[], Journal] | None = None,
        on_progress: Callable[[str, PullProgress | None], None] | None = None,
        poll_s: float = POLL_S,
        options: PullOptions | None = None,
        queue_view: Callable[[str], QueueView | None] = lambda host: None,
        stopped: Callable[[str], float | None] | None = None,
        on_skip: Callable[[str, str, str], None] = lambda host, title, why: None,
        defer_to_watch: bool = False,
        on_outcome: Callable[[str, bool, float], None] = lambda host, ok, at: None,
        on_kept: Callable[[WatchEvent], None] = lambda event: None,
    ) -> None:
        self.fleet = fleet
        # The TUI's: while a `watch` runs its periodic pulls on this fleet, it pulls (its
        # news goes to the notify targets); the TUI's pull won each race, and what it
        # brought never reached a phone (hour s23a #3). watch's: it says it runs.
        self.defer_to_watch = defer_to_watch
        self.connections = connections
        self.emit = emit
        self.clock = clock
        self.locks = locks  # the runtime's one: shared with the jobs and the autostop
        self.journal = journal or (lambda: journal_for(self.fleet))
        self.on_progress = on_progress  # (host, progress); None progress: the pull ended
        self.poll_s = poll_s
        self.options = options or PullOptions(concurrency=SHARED_PULL_CONCURRENCY)
        # The queue view the runtime's poll last read (no SSH of its own: the poll's).
        self.queue_view = queue_view
        # When watch's autostop stopped a host that has not answered since (None: it
        # was not): such a box is not pulled (the runtime's ``stops``, else its own).
        self.stopped = stopped or StoppedHosts(self.journal).stopped_at
        # (host, title, why): a due pull skipped, as pulled lately by another (a line of
        # the console under watch, a notice in the TUI).
        self.on_skip = on_skip
        # (host, came through, when): each pull's end, but a box that does not answer's
        # (watch's metrics: rgt_pull_failing, rgt_pull_last_success_timestamp_seconds).
        self.on_outcome = on_outcome
        # A failure told before this process started, the same one again now: not told
        # again, only listed (the TUI's n list starts empty, and the pane's line of it
        # points there: h575 #5).
        self.on_kept = on_kept
        self._kept_listed: set[str] = set()
        # host -> the manifest's mtime after this scheduler's own last pull: a newer one
        # is another's pull (a failed pull of ours is retried on our schedule, not skipped).
        self._own: dict[str, float | None] = {}
        # host -> why its periodic pulls have not started (no pull folders, no results).
        self.held_back: dict[str, str] = {}
        self._has_results: set[str] = set()  # results once seen stay seen
        self.due: dict[str, float] = {}  # host -> when its next pull may start (clock)
        self._every: dict[str, float] = {}  # host -> the cadence its due time was set by
        self.last: dict[str, str] = {}  # host -> what its last periodic pull did, in words
        self._running: dict[str, asyncio.Task[None]] = {}
        self._failing_since: dict[str, float] = {}
        self._failure: dict[str, tuple[float, str]] = {}  # host -> (when, why) of the last
        self._told: dict[str, str] = {}  # host -> the failure last told, in this run of them
        self._news: dict[str, PullNews] = {}  # host -> what its last pull notice told
        self._wake: asyncio.Event | None = None

    def wake(self) -> None:
        """Look at the cadences now (the fleet file changed; a test moved the clock)."""
        if self._wake is not None:
            self._wake.set()

    def running(self, host: str) -> bool:
        """Whether a periodic pull of ``host`` is in flight."""
        return host in self._running

    async def run(self) -> None:
        """Forever: start each due host's pull (they run side by side, one per host),
        then sleep until the next is due, ``poll_s`` at most, or ``wake``."""
        self._wake = asyncio.Event()
        try:
            while True:
                if not self.defer_to_watch:
                    await asyncio.to_thread(self._say_alive)
                self.start_due()
                self._wake.clear()
                with contextlib.suppress(asyncio.TimeoutError):
                    await within(self._wake.wait(), self._sleep_s())
        finally:
            if not self.defer_to_watch:
                with contextlib.suppress(OSError):
                    os.unlink(self._alive_path())
            tasks = list(self._running.values())
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def _alive_path(self) -> Path:
        return watch_dir(self.journal().directory) / ALIVE_FILE

    def _say_alive(self) -> None:
        """watch's periodic pulls run: the file's mtime, renewed each loop (blocking)."""
        if self.fleet.is_default:
            return
        with contextlib.suppress(OSError):
            path = self._alive_path()
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{os.getpid()} {socket.gethostname()}\n")  # _ended_here reads it

    def watch_pulls(self) -> bool:
        """A `watch` runs its periodic pulls on this fleet now (blocking: ``watch_alive_for``)."""
        if self.fleet.is_default:
            return False
        return watch_alive_for(self.journal().directory) is not None

    def start_due(self) -> list[str]:
        """Start the pull of every host that is due and not pulling; returns their names."""
        now = self.clock()
        started = []
        deferred = self.defer_to_watch and self.watch_pulls()
        for host in self.fleet.hosts:
            every = pull_every(host)
            if every is None or host.name in self._running:
                continue
            why = no_pull_folders(host) or (None if self.has_results(host, every) else NO_RESULTS)
            if why is None and deferred:
                why = WATCH_PULLS
            stopped_at = self.stopped(host.name)
            if stopped_at is not None:
                # Everything was pulled and verified before the stop: nothing to fetch,
                # and a box that is off is no failure (its last failure is forgotten).
                why = f"{stopped_line(stopped_at)}: not pulled until it answers again"
                self._failing_since.pop(host.name, None)
                self._failure.pop(host.name, None)
            if why is not None:
                self.held_back[host.name] = why
                continue
            self.held_back.pop(host.name, None)
            due = self.due.get(host.name)
            if due is None:
                due = self.due[host.name] = self._first_due(host, every, now)
            before = self._every.get(host.name)
            if before is not None and every < before:
                # A shorter cadence from the fleet file counts from the last pull, not
                # from the slot the old one set (a user's hour, s42: "1m" for a spot box
                # waited out the rest of 30 minutes). A longer one counts after the next.
                due = self.due[host.name] = min(due, due - before + every)
            self._every[host.name] = every
            if now >= due and self._skipped(host, every, now):
                continue
            if now >= due:
                task = asyncio.ensure_future(self._cycle(host, every))
                self._running[host.name] = task
                task.add_done_callback(lambda _t, name=host.name: self._ended(name))
                started.append(host.name)
        return started

    def has_results(self, host: HostConfig, every: float) -> bool:
        """Whether ``host`` has produced results worth a periodic pull (see the module
        docstring); once true it stays true."""
        if host.name in self._has_results:
            return True
        found = (
            results_shown(self.queue_view(host.name), every)
            or bool(PulledRecord.load(host_results_dir(self.fleet.results_dir, host)).files)
            or (not host.queue and host.watch.pull_every_s is not None)
        )
        if found:
            self._has_results.add(host.name)
        return found

    def failure(self, host: str) -> tuple[float, str] | None:
        """(when, why) of ``host``'s last periodic pull when it failed; None when it did
        not (or none ran): a pane shows it as one line."""
        return self._failure.get(host)

    def _ended(self, host: str) -> None:
        self._running.pop(host, None)
        self.wake()  # its next due time is set: the loop's sleep may need to be shorter

    def _sleep_s(self) -> float:
        """Until the next host is due; a host held back (stopped, no results yet, another
        watch pulls) waits for the next look, ``poll_s``: its due time, long past, made
        every sleep 0 and the loop spin at 60% of a core while a box was stopped (h582 #1)."""
        now = self.clock()
        waiting = [
            d - now
            for h, d in self.due.items()
            if h not in self._running and h not in self.held_back
        ]
        return max(0.0, min([self.poll_s, *waiting]))

    def pulled_at(self, host: HostConfig) -> float | None:
        """When ``host`` was last pulled by anyone, as its records say: its manifest's
        mtime (saved once a pull has listed the box; a pull that failed before that
        leaves none). None: never (blocking: one stat)."""
        try:
            return manifest_path(host_results_dir(self.fleet.results_dir, host)).stat().st_mtime
        except OSError:
            return None

    def _first_due(self, host: HostConfig, every: float, now: float) -> float:
        """A restart does not pull again at once: the last pull's record (its manifest,
        written by any process) says when it was."""
        last = self.pulled_at(host)
        if last is None:
            return now
        return min(now + every, last + every)

    def _skipped(self, host: HostConfig, every: float, now: float) -> bool:
        """Whether ``host``, due here, was pulled by another less than a cadence ago: then
        its next pull is due a cadence after that one, and ``on_skip`` says so."""
        last = self.pulled_at(host)
        if last is None or last == self._own.get(host.name) or now - last >= every:
            return False
        due = self.due[host.name] = last + every
        if self._torn_down(host.name):
            # No pull of it will run here (``_blocked`` refuses it): "skipped ... the
            # next here at" named one that never comes (s44 note).
            self.last[host.name] = "not pulled: the box is torn down"
            return True
        title = f"{host.name}: periodic pull skipped"
        why = (
            f"the last pull was {fmt_duration(now - last)} ago (by rgt-tui watch, a TUI or "
            f"rgt-tui pull: what it brought was told there); the next here in "
            f"{fmt_duration(due - now)}, at {time.strftime('%H:%M:%S', time.localtime(due))}"
        )
        self.last[host.name] = f"{title}: {why}"
        self.on_skip(host.name, title, why)
        return True

    def _torn_down(self, host: str) -> bool:
        """Whether the journal records ``host`` torn down (blocking: one small read, at
        most once a cadence; unreadable: not, the pull's own check says why)."""
        try:
            return self.journal().load(host).torn_down_at is not None
        except JournalError:
            return False

    async def _cycle(self, host: HostConfig, every: float) -> None:
        try:
            delay = await self.pull_once(host)
        except Exception:  # never lets one host's surprise stop the schedule
            log.exception("periodic pull of %s", host.name)
            delay = RETRY_S
        self.due[host.name] = self.clock() + min(every, delay if delay is not None else every)

    async def pull_once(self, host: HostConfig) -> float | None:
        """One periodic pull and verify of ``host``, events emitted. Returns how soon to
        look again when it could not run or failed (None: at the cadence)."""
        blocked = await self._blocked(host)
        if blocked is not None:
            self.last[host.name] = f"not pulled: {blocked}"
            return BUSY_RETRY_S
        held = self.locks.claim(host.name, PERIODIC)
        if held is not None:
            self.last[host.name] = f"not pulled: the {held} of {host.name} is running"
            return BUSY_RETRY_S
        try:
            return await self._pull_and_verify(host)
        finally:
            self.locks.release(host.name, PERIODIC)
            if self.on_progress is not None:
                self.on_progress(host.name, None)

    async def _blocked(self, host: HostConfig) -> str | None:
        try:
            jh = await asyncio.to_thread(self.journal().load, host.name)
        except JournalError as exc:  # reported by the gate; a pull changes nothing there
            log.warning("%s: journal unreadable (%s); pulling all the same", host.name, exc)
            return None
        groups = self.fleet.groups_of(host.name)
        voided = voided_by(jh, host, self.journal().directory, groups, self.fleet.results_dir)
        # The journal's clock, not the schedule's; ``voided`` reads files: in the thread.
        return await asyncio.to_thread(teardown_underway, jh, time.time(), voided)

    async def _pull_and_verify(self, host: HostConfig) -> float | None:
        transport = self.connections.transport(host.name)  # shared: never closed here
        budget = shared_budget(self.fleet.watch.pull_rate_mbit)
        options = self.options if budget is None else replace(self.options, budget=budget)
        progress = None
        if self.on_progress is not None:
            progress = lambda p: self.on_progress(host.name, p)  # noqa: E731
        try:
            result = await self._own_pull(host, transport, options, progress)
            report = await self._verify(host, transport)
        except PullBusy as exc:  # another process is pulling it: that pull counts
            self.last[host.name] = f"not pulled: {exc.message}"
            return BUSY_RETRY_S
        except (PullError, TransportError) as exc:
            if self._not_answering(host, exc):
                # The box does not answer: its pane's connection line and the connection
                # alert say so (GEN8; on a spot box, the preemption it is named as). A
                # failed pull told beside them was noise, with a fix that was no news
                # (hour s21a #9); the pull is tried again as after any failure.
                self.last[host.name] = f"not pulled: {host.name} does not answer ({exc})"
                return RETRY_S
            if isinstance(exc, PullError):
                return await self._failed(
                    host, exc.message, exc.fix or "re-run `rgt-tui pull HOST`"
                )
            return await self._failed(host, str(exc), "check the box is up (rgt-tui status)")
        except OSError as exc:
            return await self._failed(host, str(exc), "check the box is up (rgt-tui status)")
        problems = pull_problems(host.name, result.shortfalls, result.failed)
        if not result.pulled and problems:
            # Nothing came and something was asked for in vain (a missing folder, an
            # empty one): a failed pull, told as one (once per run), not as news.
            return await self._failed(host, problems[0], "check the host's pull folders on the box")
        self._failing_since.pop(host.name, None)
        self._failure.pop(host.name, None)
        await asyncio.to_thread(forget_failing, self.journal().directory, host.name)
        self.on_outcome(host.name, True, self.clock())
        counts: dict[str, int] = {}
        for check in report.checks:
            counts[check.status] = counts.get(check.status, 0) + 1
        files = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
        # The verdict first, the files' counts after, as `rgt-tui verify` says them:
        # "verify: 8 verified" headed a notice whose bullets said three files had changed
        # on the box since (a user's hour), and read as an all-clear.
        verdict = "VERIFIED" if report.ok else f"NOT VERIFIED: {problem_count(report)}"
        logs = result.box_logs
        came = (
            f"{plural(len(result.pulled), 'file')} ({fmt_bytes(result.bytes_received)}) pulled, "
            f"{len(result.skipped)} already here; verify: {verdict} "
            f"(files: {files or 'none checked'})"
        )
        running = running_line(result.code)
        if running:
            # A pull while a cell ran: what the CLI and the Pulls tab say (RUNNING …),
            # or the notice's NOT VERIFIED read as damage, not as a cell still writing
            # (s43 spot hour #6).
            came += f"; RUNNING: {running}"
        if logs is not None:
            came += f"; box logs: {logs.listed} in {logs.folder}"
            if logs.note:
                came += f" ({logs.note})"
        changed = sum(1 for f in result.pulled if f.replaced)
        copies = result.set_aside[0] if result.set_aside is not None else 0
        # A checkpoint rewritten each epoch keeps one earlier copy per pull, for good: the
        # pull's own KEPT words with each pull, or the disk fills unseen (hour s34 CLI #1).
        came += "".join(f"; {text}" for label, text in result.notices if label == "KEPT")
        self.last[host.name] = came
        if not result.pulled and result.ok:
            return None  # nothing new: nothing to tell anyone
        problems += news_problems(report)[:5]
        # The verdict compared is news_problems' (what the notice lists): problem_count
        # counts the running queue's changes since the manifest, which differ each pull.
        shown = "VERIFIED" if report.ok else "NOT VERIFIED"
        news = PullNews(len(result.pulled) - changed, shown, tuple(problems), copies)
        told = self._news.get(host.name)
        quiet = unheard(news, told)
        if quiet is not None:  # a checkpoint rewritten again, nothing else: pull_news
            self.last[host.name] = f"{came} ({quiet})"
            if told is not None and copies < told.copies:
                # Copies deleted (as the KEPT words ask): growth counts from what is kept
                # now, or 64 told and 1 left waited for 128 (review s37).
                self._news[host.name] = replace(told, copies=copies)
            return None
        self._news[host.name] = news
        severity = "info" if result.ok else "warning"
        self.emit(
            WatchEvent(
                kind="pull",
                host=host.name,
                key=f"pull:{host.name}:{result.manifest.taken_at:.0f}",
                title=f"{host.name}: {_pulled_words(len(result.pulled) - changed, changed)}",
                body=came + "".join(f"\n• {p}" for p in problems),
                severity=severity,
            )
        )
        return None

    async def _own_pull(
        self,
        host: HostConfig,
        transport: Transport,
        options: PullOptions,
        progress: Callable[[PullProgress], None] | None,
    ) -> PullResult:
        """``pull_host``, and the manifest it left noted as this scheduler's own (a
        ``PullBusy`` is another's pull: nothing noted)."""
        try:
            result = await pull_host(
                host,
                self.fleet.results_dir,
                transport,
                options=options,
                on_progress=progress,
                wait=self.connections.waiter(host.name),
            )
        except PullBusy:
            raise
        except BaseException:
            self._own[host.name] = self.pulled_at(host)  # one stat
            raise
        self._own[host.name] = self.pulled_at(host)
        return result

    async def _verify(self, host: HostConfig, transport: Transport) -> VerificationReport:
        """``host``'s pulled copy verified and recorded; a group's with ``pull_ranks =
        "all"`` over all its folders, one roster, as `verify GROUP` and the TUI's v do
        (review h534 #3: one writer's record contradicted another's)."""

        def transport_of(box: str) -> Transport | None:
            if box == host.name:
                return transport
            try:
                return self.connections.transport(box)
            except KeyError:  # a box the connections do not hold: no re-scan
                return None

        report, *ranks = await verify_on_connections(host, self.fleet, transport_of)
        failed = next((r for r in ranks if not r.ok), None)
        if failed is not None:  # the group's news says a rank's folder failed too
            first = f"{failed.host}: {failed.problems[0]}"
            report = replace(report, problems=(*report.problems, first))
        return report

    def _not_answering(self, host: HostConfig, exc: Exception) -> bool:
        """Whether ``exc`` is the box not answering (its connection down now), not a
        failure of the pull itself; a host key refused is told, whatever the connection."""
        cause = exc if isinstance(exc, TransportError) else exc.__cause__
        return (
            isinstance(cause, TransportError)
            and not isinstance(cause, HostKeyError)
            and not self.connections.is_connected(host.name)
        )

    async def _failed(self, host: HostConfig, why: str, fix: str) -> float:
        """Note a failed pull; told once per run of failures and again only when it fails
        for another reason (the console and the notification alike; the same failure
        each minute is not news), with the interval it is really tried again at."""
        journal = self.journal().directory
        kept = None
        if host.name not in self._failing_since:
            self._told.pop(host.name, None)
            # Told before a restart of this process (a small file, off the event loop).
            kept = await asyncio.to_thread(told_failure, journal, host.name)
            if kept is not None:
                self._failing_since[host.name], self._told[host.name] = kept
        since = self._failing_since.setdefault(host.name, self.clock())
        self.last[host.name] = f"pull failed: {why}"
        self.on_outcome(host.name, False, self.clock())
        # The next pull that comes through is told whatever it brings: the last word the
        # user had was this failure (review s37).
        self._news.pop(host.name, None)
        self._failure[host.name] = (self.clock(), why)
        new = _shape(self._told.get(host.name, "")) != _shape(why)
        if new or kept is not None:
            # The run's first told failure is keyed by its start (the same key after a
            # restart: the sent log holds it); another reason since, by its own time.
            told_at = since if host.name not in self._told or not new else self.clock()
            self._told[host.name] = why
            every = pull_every(host)
            again = min(every, RETRY_S) if every is not None else RETRY_S
            interval = f"{again / 60:g} min" if again >= 60 else f"{again:g} s"
            event = WatchEvent(
                kind="pull_failed",
                host=host.name,
                key=f"pull_failed:{host.name}:{told_at:.0f}",  # one per failure told
                title=f"{host.name}: periodic pull failed",
                # Sentences each, the fix last (it may end in a command, which a full stop
                # would break): the console joins the lines ("…on the box It is tried
                # again": h602 #6).
                body=f"{_sentence(why)}\nIt is tried again every {interval}; what arrived "
                f"is kept and the next pull resumes it.\nfix: {fix}",
                severity="warning",
            )
            if new:
                self.emit(event)
            elif event.key not in self._kept_listed:  # once a process (review h576 #5)
                self._kept_listed.add(event.key)
                self.on_kept(event)
        # Kept with an fsync: off the event loop, which serves the TUI and the scrapes.
        await asyncio.to_thread(keep_failing, journal, host.name, since, self._told[host.name])
        return RETRY_S


# Sizes and counts; not an exit status ("ssh exited 255" is another failure than 1).
_FIGURE = re.compile(r"(?<![\d.,])(?<!exit )(?<!exited )(?<!status )\d[\d.,]*\s?[KMGTPE]?i?B?")


def _shape(why: str) -> str:
    """A failure's words without its figures: the same full disk, its sizes changing as the
    box's files grow, is one failure, not one a minute all night (an overnight hour, s39
    watch #1; the autostop's gate line is compared the same way). A disk found full
    before the pull and one that filled while it wrote are one failure too (h532 #6:
    each host told both, a minute apart)."""
    if why.startswith(_DISK_FULL):
        return "the local disk is full"
    return _FIGURE.sub("#", why)


# How ``NotEnoughSpace`` and ``LocalDiskFull`` (services.pull.types) begin their words.
_DISK_FULL = ("not enough local space in ", "local disk full while writing ")


def _sentence(text: str) -> str:
    """``text`` ending as a sentence does (a line of a notification the console joins)."""
    text = text.rstrip()
    return text if text.endswith((".", "!", "?")) else text + "."
