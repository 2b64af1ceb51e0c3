"""Pull, verify, sync, preflight and teardown jobs: one at a time per host, for the TUI.

``HostJobs`` is the state of one host's jobs (a frozen snapshot); ``JobRunner`` runs the
services (``pull_host``, ``verify_host``, ``sync_code``, ``preflight``, ``check_gate``,
``confirm_and_tear_down``) as
workers of its host (the App: anything with ``run_worker`` and ``notify``), group
``jobs:<host>``, and hands the new state to ``on_change`` after every step. It knows no
widget and imports no Textual: the App turns each state into a message for the screens.
Nothing here tears anything down unless the typed name matches the host's name exactly
and the gate, re-scanned after the name was typed, holds. Without a teardown command
nothing is recorded until the user types the name a second time, after reading what to
destroy by hand.

Over 450 lines on purpose: the one-job-per-host rule (``request``'s busy check, the
shared ``HostLocks``) and the gate's order (check, type, re-scan, tear down, record) are
only visibly kept when every job that can hold a host reads in one place; each job's work
is a service call of a few lines.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any

from rgt_tui.controllers.controller_host import ControllerHost
from rgt_tui.controllers.notices import record
from rgt_tui.controllers.ready_jobs import preflight_job, sync_job
from rgt_tui.controllers.workers import run_work
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.services.connections import SHARED_PULL_CONCURRENCY, FleetConnections
from rgt_tui.services.journal import Journal, journal_for
from rgt_tui.services.pull.progress import PullProgress
from rgt_tui.services.recorded_results import RecordedResults, read_recorded
from rgt_tui.services.records import fleet_host_dir
from rgt_tui.services.records_watch import RecordsWatch
from rgt_tui.services.runtime.locks import HostLocks

if TYPE_CHECKING:
    from rgt_tui.domain.box_identity import BoxIdentity
    from rgt_tui.domain.queue_state import QueueView
    from rgt_tui.services.code_sync import SyncResult
    from rgt_tui.services.connect import Transport
    from rgt_tui.services.journal import BoxHistory
    from rgt_tui.services.preflight import PreflightReport
    from rgt_tui.services.pull.types import PullResult
    from rgt_tui.services.teardown import GateReport, TeardownOutcome
    from rgt_tui.services.verify.types import VerificationReport
    from rgt_tui.services.watch.drivers.periodic_pull import PullScheduler
    from rgt_tui.services.watch.events import WatchEvent


# A refused request, in the notice: what did not start, and how to start it again (the
# keys of screens.job_keys.JOB_BINDINGS and the Teardown tab's typed names).
_REFUSED = {
    "pull": ("pull", "press p"),
    "verify": ("verification", "press v"),
    "sync": ("sync", "press y"),
    "preflight": ("preflight", "press P"),
    "gate": ("teardown check", "press t"),
    "acknowledge-missing": ("acknowledgement", "acknowledge it again"),
    "acknowledge-running": ("acknowledgement", "acknowledge it again"),
    "acknowledge-unfinished": ("acknowledgement", "acknowledge it again"),
    "teardown": ("teardown", "type the name again"),
    "manual-teardown": ("record of the teardown", "type the name again"),
}
# What holds the host, in the notice (``HostJobs.running``, or a HostLocks holder).
_RUNNING = {"verify": "verification", "gate": "teardown check", "acknowledge": "acknowledgement"}


def _wrong_name(arg: str, host: str) -> str:
    """The start of a refusal of a name typed that is not the host's."""
    return f"'{arg}' is not '{host}': nothing was "


def _names_wrong(refusal: str | None, host: str) -> bool:
    """Whether ``refusal`` is one of a name typed that is not ``host``'s."""
    return refusal is not None and f" is not '{host}': nothing was " in refusal


@dataclass(frozen=True)
class HostJobs:
    """What the UI knows about one host's pull, verification and teardown."""

    host: str
    running: str = ""  # the job in flight: one of JOBS, or ''
    progress: PullProgress | None = None
    pull_result: PullResult | None = None  # of the last pull
    pull_error: tuple[str, str] | None = None  # (message, fix)
    verify_report: VerificationReport | None = None  # of the last verify
    verify_error: str | None = None
    sync_progress: tuple[int, int, str] | None = None  # (bytes done, bytes in all, path)
    sync_result: SyncResult | None = None  # of the last sync
    sync_error: tuple[str, str] | None = None  # (message, fix)
    sync_error_at: float | None = None  # when it failed: an old failure must not read as now
    preflight: PreflightReport | None = None  # of the last preflight
    preflight_error: tuple[str, str] | None = None  # (message, fix)
    preflight_error_at: float | None = None
    gate: GateReport | None = None  # of the last check
    # When that check came back (this machine's clock): a checklist of ✓ lines read as
    # now, on a tab opened an hour later (hour s30 #3).
    gate_at: float | None = None
    # What this process did since that check, which it does not see ("a pull ended at
    # 14:05"): the checklist says it is older than that (a user's hour read an old check
    # as current). None once checked again.
    gate_outdated: str | None = None
    gate_error: str | None = None
    teardown: TeardownOutcome | None = None  # of the last confirmed teardown
    refusal: str | None = None  # why the typed confirmation did nothing
    # Why a check since a confirmation by hand voided it (a file the box wrote since):
    # kept until the gate holds again or a name is typed again, not cleared by the next
    # job's start as a refusal is. The records watch re-checks by itself after a pull
    # elsewhere, and its check (or the user's Ctrl+R) would otherwise erase the only
    # word that the confirmation is gone (CI s55: the test lost the race under load).
    voided: str | None = None
    ack_refusal: str | None = None  # why an acknowledgement was refused (unknown cell)
    torn_down_at: float | None = None  # the current box's teardown, from the journal
    box: BoxIdentity | None = None  # the journal's box under this name
    history: tuple[BoxHistory, ...] = ()  # earlier boxes under this name (shown as history)
    # The fingerprint of a refused host key that is not the journal's box's: another box
    # answers under the name (it cannot say its id until its key is checked).
    refused_key: str | None = None
    # When the box recorded as torn down was heard answering again (an attempt at start
    # long after the record, or r): it may still bill (GEN1), so it is watched, live, with
    # an alert, until it stops answering (box_watch).
    still_answers_at: float | None = None
    # (when, why) of the last periodic pull, when it failed: one line in the host's pane.
    periodic_failure: tuple[float, str] | None = None
    # The last pull and verification as their records say, whoever ran them (the command
    # line too): shown where this process ran none since (issue 43.10f).
    recorded: RecordedResults | None = None

    @property
    def shown_torn_down_at(self) -> float | None:
        """The teardown the UI shows (greyed out, cost stopped): none while a box with
        another host key than the torn-down box's answers, live but refused, or while the
        torn-down box itself still answers (watched, live: it may still bill)."""
        if self.refused_key is not None or self.still_answers_at is not None:
            return None
        return self.torn_down_at

    @property
    def awaiting_manual(self) -> bool:
        """No teardown command ran: the user was shown what to destroy by hand, and the
        teardown is recorded only once they type the name again to say it is done."""
        t = self.teardown
        return (
            t is not None
            and not t.ran
            and not t.recorded
            and not t.cluster  # a cluster: nothing to destroy, nothing to type again
            and self.torn_down_at is None
        )


class JobRunner:
    """Runs one host's jobs in the App's workers and keeps their ``HostJobs`` state."""

    def __init__(
        self,
        app: ControllerHost,
        fleet: Fleet,
        connections: FleetConnections,
        *,
        locks: HostLocks,
        on_change: Callable[[HostJobs], None] = lambda state: None,
        journal: Callable[[], Journal] | None = None,
        clock: Callable[[], float] = time.time,
        watching: Callable[[str, str], bool] = lambda host, tab: False,
        answering: Callable[[str], bool] = lambda host: False,
        fleet_mistake: Callable[[], str] = lambda: "",
    ) -> None:
        self.app = app
        # The fleet file's mistake while it is not applied: a teardown then would run the
        # last good file's command, not the one the user saved (h491 #1).
        self.fleet_mistake = fleet_mistake
        # Whether this process's telemetry of ``host`` is connected now: a box that
        # answers is not destroyed, whatever is typed (hour s45a #2).
        self.answering = answering
        self.on_change = on_change
        # Whether the user has ``host``'s ``tab`` on screen: a pull or verify they started
        # and walked away from is told when it ends (a toast, listed under n); one they
        # watch end needs no word beside the tab that shows it.
        self.watching = watching
        self.fleet = fleet
        self.connections = connections
        # The fleet's own journal (paths.journal_dir), read at call time: the fleet file
        # can change (a host added to a fleet that had none) and tests set the state dir.
        self.journal = journal or (lambda: journal_for(self.fleet))
        self.clock = clock
        self.states: dict[str, HostJobs] = {h.name: HostJobs(h.name) for h in fleet.hosts}
        self.watch = RecordsWatch(self.journal, lambda: self.fleet)
        # The runtime's one HostLocks: one job per host in this process, the periodic
        # pulls and the autostop included.
        self.locks = locks
        self._periodic: set[str] = set()  # hosts whose running pull is a periodic one
        self.scheduler: PullScheduler | None = None  # the periodic pulls, once made
        self._recorded_read: set[str] = set()  # hosts whose records were read once

    def state(self, host: str) -> HostJobs:
        """The host's current state."""
        return self.states.setdefault(host, HostJobs(host))

    def busy(self) -> list[HostJobs]:
        """Hosts whose pull or teardown is in flight (quitting would stop it). Not a sync:
        it stages the files aside and switches them in at its end, so one cut off leaves
        the box's tree as it was, and y starts it again. Not a periodic pull either: the
        user did not ask for it, its parts are kept, and the next start picks it up —
        it must never stand between the user and quitting."""
        return [
            s
            for s in self.states.values()
            if s.running == "teardown" or (s.running == "pull" and s.host not in self._periodic)
        ]

    def _set(self, host: str, **changes: Any) -> HostJobs:
        old = self.state(host)
        if changes.get("torn_down_at", old.torn_down_at) != old.torn_down_at:
            # Another teardown (or none): an answer heard after the old one says nothing.
            changes.setdefault("still_answers_at", None)
            # Nor "do not destroy the box now" once it is recorded gone (review h564 #4).
            changes.setdefault("voided", None)
        new = replace(old, **changes)
        self.states[host] = new
        self.on_change(new)
        return new

    def learned(self, host: str, **changes: Any) -> HostJobs:
        """Take what the journal says about ``host`` outside a job (its box, learnt from
        telemetry) and post the new state."""
        return self._set(host, **changes)

    def queue_started(self, host: str, at: float) -> None:
        """A run of ``host``'s queue started (a launch, a retry) after its gate was checked:
        the checklist, and a cluster's "gate opened", say what was, not what is (a Slurm
        hour: the gate still read open while a retried cell ran)."""
        state = self.state(host)
        if state.gate is not None and not state.gate_outdated:
            when = time.strftime("%H:%M", time.localtime(at))
            self._set(host, gate_outdated=f"its queue ran again from {when}")

    # -- entry points ------------------------------------------------------------------

    def request(
        self, host_name: str, job_name: str, arg: str = "", *, by_user: bool = True
    ) -> None:
        """Start job ``job_name`` on ``host_name`` (``arg``: a cell name, the typed host
        name); refused, and said so, while another runs. A job the user started clears
        the words of their last refused key; one the records watch starts by itself
        (``by_user=False``) keeps them, or "'bx1' is not 'box1'" vanishes a second after
        it was said, when a pull in another window ends (h561 #3)."""
        host = self.fleet.host(host_name)
        if job_name == "teardown" and arg != host.name:
            # A wrong name does nothing at all: no journal entry, no command.
            self._set(
                host.name,
                refusal=_wrong_name(arg, host.name) + "torn down",
            )
            return
        if job_name == "teardown" and (mistake := self.fleet_mistake()):
            # The command the file now says (a new instance id, say) is not the one that
            # would run: the last good file's would destroy the box it named. As the
            # command line's `teardown` refuses a file with a mistake.
            self._set(
                host.name,
                refusal=f"the fleet file is not applied ({mistake}): a teardown runs the "
                "file's command, and the one in force is the last good file's — nothing was "
                "torn down; type the name again once the file is applied (a mistake: fix it)",
            )
            return
        if job_name == "manual-teardown":
            if not self.state(host.name).awaiting_manual:
                self._set(host.name, refusal="confirm the teardown first: nothing was recorded")
                return
            if arg != host.name:
                self._set(
                    host.name,
                    refusal=_wrong_name(arg, host.name) + "recorded; "
                    "the box is still billed as running",
                )
                return
        busy = self.state(host.name).running or self.locks.holder(host.name)
        if busy:
            # The refused job named first: refusals of two different keys must not read
            # alike, or their notices merge and one key seems to have done nothing.
            what, again = _REFUSED.get(job_name, (job_name, "try again"))
            self.app.notify(
                f"{what} not started: {host.name}'s {_RUNNING.get(busy, busy)} is still "
                f"running; {again} when it ends",
                title=host.name,
                severity="warning",
            )
            return

        def transport() -> Transport:  # shared: a job never closes it
            return self.connections.transport(host.name)

        jobs: dict[str, Callable[[], Coroutine[Any, Any, None]]] = {
            "pull": lambda: self._pull(host),
            "verify": lambda: self._verify(host),
            "sync": lambda: sync_job(self.fleet, host, transport(), partial(self._set, host.name)),
            "preflight": lambda: preflight_job(
                self.fleet, host, transport(), partial(self._set, host.name)
            ),
            "gate": lambda: self._gate(host),
            "acknowledge-missing": lambda: self._acknowledge(host, missing=arg),
            "acknowledge-running": lambda: self._acknowledge(host, running=arg),
            "acknowledge-unfinished": lambda: self._acknowledge(host, unfinished=arg),
            "teardown": lambda: self._tear_down(host, arg),
            "manual-teardown": lambda: self._record_manual(host, arg),
        }
        job = jobs[job_name]
        running = "teardown" if job_name == "manual-teardown" else job_name.split("-")[0]
        self.locks.claim(host.name, running)  # free: checked above, on this one loop
        state = self.state(host.name)
        # The words of a refused name stay through a check the records watch starts by
        # itself: the name typed is still wrong, whatever the check finds. Any other
        # refusal ("locked: …") is about the gate, which that check reads afresh (review
        # h574 #1: "locked" stayed under a ready checklist).
        typed = not by_user and _names_wrong(state.refusal, host.name)
        self._set(
            host.name,
            running=running,
            refusal=state.refusal if typed else None,
            ack_refusal=None if by_user else state.ack_refusal,
        )
        run_work(
            self.app,
            self._guarded(host.name, job(), writes_records=running in ("pull", "verify")),
            f"{job_name}:{host.name}",
            group=f"jobs:{host.name}",
            description=f"{job_name} of {host.name}",
        )

    def load_journals(self) -> None:
        """Read each host's teardown record (a box torn down earlier stays torn down)."""
        run_work(self.app, self._load_journals(), "journals", group="jobs:journals")

    # -- the jobs ----------------------------------------------------------------------

    async def _guarded(
        self, host: str, job: Coroutine[Any, Any, None], *, writes_records: bool = False
    ) -> None:
        try:
            await job
        except Exception as exc:  # the edge: whatever went wrong is shown, not raised
            self.app.notify(f"{host}: {exc}", title=host, severity="error", timeout=15)
        finally:
            if writes_records:
                # What this pull or verify wrote is no news from another process (a few
                # stat calls). Other jobs write none: a pull elsewhere meanwhile counts.
                self.watch.settle(host)
                with contextlib.suppress(Exception):  # only a baseline for the next change
                    recorded = await asyncio.to_thread(self._read_recorded, host)
                    self._set(host, recorded=recorded)
                    self._recorded_read.add(host)  # read: its first look is taken
            running = self.state(host).running
            self.locks.release(host, running)
            changes: dict[str, Any] = {"running": ""}
            if writes_records and self.state(host).gate is not None:
                # Re-checking here would re-hash the whole local copy: the line says it.
                at = time.strftime("%H:%M", time.localtime(self.clock()))
                changes["gate_outdated"] = f"a {running} ended at {at}"
            self._set(host, **changes)

    async def _load_journals(self, hosts: list[str] | None = None) -> None:
        """Take each host's box, earlier boxes and teardown from its journal; post a
        host's state only when the journal says something else than it."""
        journal = self.journal()
        for host in hosts if hosts is not None else [h.name for h in self.fleet.hosts]:
            try:
                jh = await asyncio.to_thread(journal.load, host)
            except Exception as exc:  # a damaged journal: reported, gate stays locked
                self.app.notify(f"{host}: {exc}", title=host, severity="error")
                continue
            state = self.state(host)
            found = (jh.torn_down_at, jh.box, tuple(jh.history))
            if found == (state.torn_down_at, state.box, state.history):
                continue
            changes: dict[str, Any] = {"torn_down_at": jh.torn_down_at, "box": jh.box}
            changes["history"] = found[2]
            if state.box is not None and not state.box.same_box(jh.box):
                # Another box was found there (by another process): nothing shown about
                # the old one applies to it (as BoxWatch does for one seen here). A manual
                # teardown awaiting its second typed name is kept: that name is then
                # refused naming the other box (record_manual_teardown checks the box),
                # rather than the flow vanishing under the user's typing.
                changes.update(gate=None, gate_error=None, refusal=None, voided=None)
                if not state.awaiting_manual:
                    changes["teardown"] = None
            self._set(host, **changes)

    async def take_outside_changes(self) -> None:
        """Take what another process (`rgt-tui teardown`, `pull`, `verify`) recorded
        since the last look (``RecordsWatch``): a changed journal is read again (a box
        recorded torn down there is shown torn down, and its telemetry stops); after a
        pull or verify elsewhere, a checklist on show is checked again.

        Only a pull's or a verify's records start a check, never journal events: a
        check writes the journal, so two TUIs re-checking on each other's checks would
        re-scan their boxes forever.
        """
        hosts = [h.name for h in self.fleet.hosts]
        busy = {h for h in hosts if self.state(h).running}
        changes = await asyncio.to_thread(self.watch.changed, hosts, busy)
        await self._load_journals([c.host for c in changes if c.journal])
        for change in changes:
            if self.state(change.host).running:
                # A job of this process started, or is ending, while the watch looked:
                # its end takes the records as its baseline. Read now, this process's own
                # records would pass for another's and clear the result just shown.
                continue
            if change.records or change.host not in self._recorded_read:
                await self._take_recorded(change.host)
            state = self.state(change.host)
            shown = state.gate is not None and state.torn_down_at is None
            if change.records and shown and not state.running:
                self.request(change.host, "gate", by_user=False)

    def _read_recorded(self, host: str) -> RecordedResults:
        return read_recorded(fleet_host_dir(self.fleet, host))

    async def _take_recorded(self, host: str) -> None:
        """Read the host's pull and verify records again (first look, or another process
        changed them); a part that changed replaces what this process showed of its own
        pull or verify, now older than the records."""
        self._recorded_read.add(host)
        try:
            new = await asyncio.to_thread(self._read_recorded, host)
        except OSError as exc:  # unreadable folder: said in the tab, never a good outcome
            new = RecordedResults(problem=f"{fleet_host_dir(self.fleet, host)}: {exc}")
        old = self.state(host).recorded or RecordedResults()
        changes: dict[str, Any] = {"recorded": new}
        if new.pull != old.pull:
            changes.update(pull_result=None, pull_error=None, progress=None)
        if new.verify != old.verify:
            changes.update(verify_report=None, verify_error=None)
        if new != old or self.state(host).recorded is None:
            self._set(host, **changes)

    def fleet_changed(self, fleet: Fleet) -> None:
        """The fleet file changed: the jobs and the periodic pulls run the new one (a
        host added with ``pull_every`` was never pulled on its cadence, and a changed
        queue was verified against the old one's cells: hour s23b #3)."""
        self.fleet = fleet
        if self.scheduler is not None:
            self.scheduler.fleet = fleet
            self.scheduler.wake()

    def periodic_pulls(
        self, queue_view: Callable[[str], QueueView | None] = lambda host: None
    ) -> PullScheduler:
        """The periodic pulls of the open TUI (``periodic_pull``): they hold a host by the
        same ``locks`` as ``p`` and a teardown, and show as the host's pull while they run.
        ``queue_view``: the queue polls' latest view (a host's results start its pulls).
        Their news is no toast (the user did not just ask): a notices-list entry (a pull
        skipped as another pulled the host lately too), and a failure one line in the
        host's pane until a pull succeeds."""
        from rgt_tui.services.watch.drivers.periodic_pull import PullScheduler

        def progress(host: str, p: PullProgress | None) -> None:
            if p is None:  # ended: the pane keeps the last figures, the job slot frees
                self._periodic.discard(host)
                self._set(host, running="", periodic_failure=scheduler.failure(host))
            else:
                self._periodic.add(host)
                self._set(host, running="pull", progress=p)

        def told(event: WatchEvent) -> None:
            severity = "information" if event.severity == "info" else "warning"
            record(self.app, event.host, event.title, event.body, severity)

        def skipped(host: str, title: str, why: str) -> None:
            # Pulled lately by another (watch, the command line): its news went there.
            record(self.app, host, title, why)

        scheduler = self.scheduler = PullScheduler(
            self.fleet,
            self.connections,
            emit=told,
            locks=self.locks,
            journal=self.journal,
            on_progress=progress,
            queue_view=queue_view,
            on_skip=skipped,
            defer_to_watch=True,
            on_kept=told,  # listed again: this TUI's list starts empty
        )
        return scheduler

    async def _pull(self, host: HostConfig) -> None:
        from rgt_tui.domain.errors import TransportError
        from rgt_tui.services.pull import PullError, PullOptions, pull_host
        from rgt_tui.services.pull.budget import shared_budget
        from rgt_tui.services.runtime.preemption import with_unreachable_fix

        self._set(host.name, progress=None, pull_result=None, pull_error=None)
        try:
            result = await pull_host(
                host,
                self.fleet.results_dir,
                self.connections.transport(host.name),  # shared: the pull never closes it
                options=PullOptions(
                    concurrency=SHARED_PULL_CONCURRENCY,
                    budget=shared_budget(self.fleet.watch.pull_rate_mbit),  # one for all pulls
                ),
                on_progress=lambda p: self._set(host.name, progress=p),
                wait=self.connections.waiter(host.name),  # r cuts a retry's wait short
            )
        except PullError as exc:
            if self._gone_as_recorded(host, exc.__cause__):
                return
            fix = exc.fix
            if isinstance(exc.__cause__, TransportError):  # never reached: stopped by watch?
                cause = exc.__cause__
                fix = (await asyncio.to_thread(with_unreachable_fix, self.fleet, host, cause)).fix
            self._set(host.name, pull_error=(exc.message, fix or ""))
            # A config mistake's own fix, not "p tries again" (p would fail the same way).
            again = fix or "p tries again"
            self._told_away(host.name, "pull failed", f"{exc.message} — {again}", "error")
            return
        except (TransportError, OSError) as exc:
            if self._gone_as_recorded(host, exc):
                return
            if isinstance(exc, TransportError):  # stopped by watch, preempted: said so
                exc = await asyncio.to_thread(with_unreachable_fix, self.fleet, host, exc)
            self._set(host.name, pull_error=(str(exc), "check the connection and press p again"))
            self._told_away(host.name, "pull failed", f"{exc} — p tries again", "error")
            return
        self._set(host.name, pull_result=result, periodic_failure=None)
        counts = (
            f"{len(result.pulled)} pulled, {len(result.skipped)} already here, "
            f"{len(result.failed)} failed"
        )
        if result.ok:
            self._told_away(host.name, "pull complete", f"{counts} — v verifies it")
        else:
            why = next(iter([*result.shortfalls, *(f"{p}: {w}" for p, w in result.failed)]), "")
            self._told_away(
                host.name,
                "pull NOT complete",
                f"{counts}{'; ' + why if why else ''} — its Pulls tab says all; p resumes",
                "error",
            )

    def _gone_as_recorded(self, host: HostConfig, exc: BaseException | None) -> bool:
        """Said, and True, when ``host`` is recorded as torn down and its box did not
        answer just now (``NoAnswer``): a destroyed box's refused port turned the Pulls
        tab red over a settled teardown (h471 #5). Asked of the box first, never assumed:
        one that answers is pulled (review h473 #1)."""
        from rgt_tui.domain.errors import NoAnswer
        from rgt_tui.services.journal import gone_as_recorded

        torn = self.state(host.name).torn_down_at
        if torn is None or not isinstance(exc, NoAnswer):
            return False
        self.app.notify(
            f"nothing pulled: {gone_as_recorded(host.name, torn)}; its copy here stays as "
            "pulled: v checks it here",
            title=host.name,
            severity="warning",
        )
        return True

    async def _verify(self, host: HostConfig) -> None:
        from rgt_tui.services.verify.ranks import verify_on_connections

        self._set(host.name, verify_report=None, verify_error=None)
        # A box recorded as torn down is not re-scanned: nothing changes on it, and the
        # re-scan's failure made the copy here NOT VERIFIED (h462 #3).
        gone = self.state(host.name).torn_down_at is not None
        try:
            # A group with pull_ranks = "all": every folder, one roster, each re-scanned
            # over its box's own connection, as `verify GROUP` does (review h534 #3: v
            # rewrote the record the command line had settled).
            report, *ranks = await verify_on_connections(
                host, self.fleet, lambda box: None if gone else self._transport_of(box)
            )
        except Exception as exc:
            self._set(host.name, verify_error=str(exc))
            self._told_away(host.name, "verify failed", str(exc), "error")
            return
        self._set(host.name, verify_report=report)
        failed = next((r for r in (report, *ranks) if not r.ok), None)
        if failed is None:
            self._told_away(host.name, "VERIFIED", "every file checked, roster complete")
            return
        from rgt_tui.services.verify.report import problems_and_first

        first = failed.problems[0] if failed.problems else ""
        if failed is not report:  # a rank's folder: named
            first = f"{failed.host}: {first}"
        self._told_away(host.name, "NOT VERIFIED", problems_and_first(failed, first), "error")

    def _transport_of(self, box: str) -> Any:
        """``box``'s shared transport; None for a box the connections do not hold."""
        try:
            return self.connections.transport(box)
        except KeyError:
            return None

    def _told_away(
        self, host: str, title: str, text: str, severity: str = "information", tab: str = "pulls"
    ) -> None:
        """A job the user started ended while its tab (``tab``) is not on screen: a toast
        (and so a notice under n), or a job walked away from ends unseen."""
        if not self.watching(host, tab):
            self.app.notify(text, title=f"{host}: {title}", severity=severity, timeout=10)

    async def _check(self, host: HostConfig) -> Any:
        from rgt_tui.services.teardown import check_gate

        transport = self.connections.transport(host.name)
        report = await check_gate(self.fleet, host, transport, self.journal())
        self._set_report(host.name, report)
        if report.ready_but_confirmation:
            self._set(host.name, voided=None)  # "once the checklist holds again": it does
        elif self.state(host.name).awaiting_manual:
            await self._back_to_confirmation(host)
        return report

    async def _back_to_confirmation(self, host: HostConfig) -> None:
        """A check since the confirmation found the gate locked, for what voids it (a
        file not pulled, a cell started): the tab no longer says to destroy the box and
        type its name again (s44 spot hour #2), but why, and to confirm again. A check
        whose box did not answer (it may be gone) voids nothing: the record stays open."""
        from rgt_tui.services.teardown.by_hand import void_since_confirmation

        groups = self.fleet.groups_of(host.name)
        try:
            said = await asyncio.to_thread(
                void_since_confirmation, self.journal(), host, groups, self.fleet.results_dir
            )
        except Exception:  # an unreadable journal: the record refuses with why, later
            return
        if said:
            self._set(
                host.name,
                teardown=None,
                voided=f"{said}: do not destroy the box now — what it wrote since is not "
                "safe here. Once the checklist holds again, type its name to confirm again",
            )

    def _set_report(self, host: str, report: GateReport) -> None:
        """A gate report: the checklist, and the journal's box, history and teardown. A
        cluster's "gate opened" goes once a check finds the gate shut again (its queue
        ran again since): the checklist says why."""
        shown = self.state(host).teardown
        if shown is not None and shown.cluster and not report.ready_but_confirmation:
            self._set(host, teardown=None)
        self._set(
            host,
            gate=report,
            gate_at=self.clock(),
            gate_error=None,
            gate_outdated=None,
            torn_down_at=report.torn_down_at,
            box=report.box,
            history=tuple(report.history),
        )

    async def _gate(self, host: HostConfig) -> None:
        try:
            await self._check(host)
        except Exception as exc:
            self._set(host.name, gate_error=str(exc))

    async def _acknowledge(
        self, host: HostConfig, *, missing: str = "", running: str = "", unfinished: str = ""
    ) -> None:
        from rgt_tui.services.teardown import (
            BoxMismatch,
            NotRunningError,
            NotUnfinishedError,
            StillToRun,
            UnknownCellError,
            acknowledge,
            queue_cells,
        )

        cells = await asyncio.to_thread(queue_cells, host)
        try:
            # For the box the user is looking at: refused if the journal holds another now.
            await asyncio.to_thread(
                acknowledge,
                self.journal(),
                host.name,
                missing=(missing,) if missing else (),
                running=(running,) if running else (),
                unfinished=(unfinished,) if unfinished else (),
                cells=cells,
                box=self.state(host.name).box,
            )
        except BoxMismatch as exc:
            self._set(host.name, ack_refusal=str(exc))
            await self._gate(host)  # the checklist of the box there now
            return
        except (NotUnfinishedError, NotRunningError, StillToRun) as exc:  # not one to accept
            self._set(host.name, ack_refusal=str(exc))
            return
        except UnknownCellError as exc:
            known = ", ".join(exc.known_cells) or "none: the queue has no cells"
            self._set(
                host.name,
                ack_refusal=f"no cell named '{exc.name}' in {host.name}'s queue: nothing was "
                f"acknowledged. Its cells: {known}",
            )
            return
        # Said, not only counted: a press that changed no line of the checklist read as
        # nothing done, and the acceptance counted later unseen (hour s25b #1).
        kind, cell = next((k, c) for k, c in (("missing", missing), ("running", running),
                          ("unfinished", unfinished)) if c)  # fmt: skip
        self.app.notify(
            f"{cell} accepted as {kind} for this box, recorded in the journal: the checklist "
            "counts it from now on",
            title=host.name,
            timeout=10,
        )
        await self._gate(host)

    async def _tear_down(self, host: HostConfig, typed: str) -> None:
        from rgt_tui.services.teardown import GateLocked, confirm_and_tear_down

        self._set(host.name, teardown=None, voided=None)  # confirmed again: it says for itself
        journal = self.journal()
        try:
            # The box is re-scanned now, after the name was typed, and only then torn down.
            transport = self.connections.transport(host.name)
            outcome = await confirm_and_tear_down(
                self.fleet, host, journal, typed, transport, clock=self.clock
            )
        except GateLocked as exc:
            self._set(host.name, refusal=f"locked: {exc}: nothing was torn down")
            if exc.report is not None:  # the checklist as it stood at the confirmation
                self._set_report(host.name, exc.report)
            # Escape right after Enter left the tab: the refusal was seen only on coming
            # back (hour s23b #8).
            self._told_away(
                host.name, "teardown refused", f"{exc}: nothing was torn down — its Teardown "
                "tab says why", "error", tab="teardown",
            )  # fmt: skip
            return
        if outcome.report is not None:
            self._set_report(host.name, outcome.report)
        jh = await asyncio.to_thread(journal.load, host.name)
        self._set(host.name, teardown=outcome, torn_down_at=jh.torn_down_at)
        if not outcome.ran:
            said = ("teardown: nothing ran", "destroy the box by hand as its Teardown tab says")
        elif outcome.ok:
            said = ("torn down", "the teardown command exited 0: recorded as torn down")
        else:
            said = ("teardown FAILED", f"the command exited {outcome.exit_status}: see its "
                    "Teardown tab; the box may still bill")  # fmt: skip
        self._told_away(
            host.name, said[0], said[1], "information" if outcome.ok else "warning", tab="teardown"
        )

    async def _record_manual(self, host: HostConfig, typed: str) -> None:
        from rgt_tui.services.teardown import (
            ConfirmationVoid,
            box_still_answers,
            record_destroyed,
        )

        if self.answering(host.name):
            # Recorded while its pane showed it answering, a file written on it since was
            # named nowhere (hour s45a #2): not destroyed yet, so nothing to record.
            self._set(
                host.name,
                refusal=f"{host.name} still answers (its telemetry is connected): it is not "
                "destroyed yet — destroy it as the instructions say, then type its name again "
                "once it no longer answers (its pane: reconnecting, or lost); nothing was "
                "recorded",
            )
            return
        # The box the confirmation was about, not whichever the journal holds by now.
        outcome = self.state(host.name).teardown
        report = outcome.report if outcome is not None else None
        box = report.box if report is not None else None

        async def answers(current: BoxIdentity) -> str | None:
            # The telemetry's "not connected" is no proof either: a key file missing here
            # stops it as well (h462 #1): one connection asks, as the command line's does.
            return await box_still_answers(host, current)

        try:
            jh = await record_destroyed(
                self.fleet, host, self.journal(), typed, box, clock=self.clock, answers=answers
            )
        except ConfirmationVoid as exc:
            # Back to the confirmation: retyping the name for the record was refused
            # again and again, the tab stuck on "record it destroyed" (review s24 #2).
            words = str(exc).split("; nothing was recorded")[0]  # the CLI's way on cut
            self._set(
                host.name,
                teardown=None,
                refusal=f"{words}; nothing was recorded: Ctrl+R checks the box as it is "
                "now, then type its name to confirm again",
            )
            return
        except ValueError as exc:  # another box (BoxMismatch), a pull running, …
            self._set(host.name, refusal=f"{exc}; the box is still billed as running")
            return
        self._set(host.name, torn_down_at=jh.torn_down_at)
