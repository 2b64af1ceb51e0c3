"""The opt-in autostop of ``rgt-tui watch`` (issue 31): a host's reversible stop, run
only when, at that moment, every condition holds — SkyPilot's autostop with the Iron
Law in front.

A host opts in with ``stop`` (the provider's reversible stop command) and
``autostop_minutes``. ``AutoStop.on_host`` runs the stop only when:

1. the host may have a stop run at all (``domain.autostop.config_refusal``: the profile
   has a reversible stop, and the command is neither the teardown command nor holds a
   word of destroying);
2. the queue has finished (launched, its done record written, nothing running or pending);
3. the GPUs have idled ``autostop_minutes`` without a break (``IdleClock``, from the
   samples; kept in the journal folder, so a restart resumes it unless the gap was long);
4. no teardown of the box is under way or done (``teardown_underway``);
5. the teardown gate's own conditions hold now — ``check_gate`` re-scans the box and
   re-hashes the local copy, as it does before a teardown (everything but the typed name);
6. no stop ran yet for this queue: the claim is written (under the host's journal lock)
   before the command runs, keyed by the launch's timestamp, so a restart, a crash
   mid-command or a second ``watch`` never stops twice;
7. no other job holds the host in this process: the gate check and the stop hold the
   runtime's one ``HostLocks`` (as ``AUTOSTOP``), so a pull, a verify or a teardown of the
   host and its autostop never run together; a host held by one is looked at again on
   its next sample.

The command runs on this machine as the teardown command does (``teardown.command``:
its own process group, bounded in time, its output's tail kept), and one ``stopped``
event says what was stopped, why (the figures of each condition) and what still bills.
A condition that fails does nothing but keep its reason (``reasons``), said through
``report`` (``watch``'s console) each time the kind of reason changes; a refusal of the
configuration (``refusals``) is said when ``watch`` starts and when the file changes.
Nothing here destroys anything.

Over 450 lines on purpose: the conditions of one stop (config, idle clock, queue, gate,
claim, the command, what follows it) are one decision, read together; its words are in
``autostop_event``.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rgt_tui.domain import teardown_gate as g
from rgt_tui.domain.autostop import (
    NO_SAMPLE,
    UNKNOWN_GPUS,
    IdleClock,
    config_refusal,
    idle_refusal,
    queue_refusal,
)
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.gate_events import (
    MissingCellAcknowledged,
    RunningAcknowledged,
    UnfinishedAcknowledged,
)
from rgt_tui.domain.gate_fixes import fix
from rgt_tui.domain.queue_state import QueueView
from rgt_tui.domain.text import printable
from rgt_tui.domain.units import fmt_duration, local_time
from rgt_tui.profiles import load_profiles
from rgt_tui.profiles import profile as load_profile
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.journal import HostJournal, Journal, JournalError, journal_for
from rgt_tui.services.records import (
    atomic_write_json,
    fleet_host_dir,
    manifest_path,
    read_json,
    verification_path,
)
from rgt_tui.services.runtime.locks import HostLocks
from rgt_tui.services.runtime.stopped import (
    DOWN_AFTER_STOP_S,
    STOP_SETTLE_S,
    autostop_path,
    last_good_stop,
)
from rgt_tui.services.teardown.by_hand import confirmed_at, voided_by
from rgt_tui.services.teardown.command import LocalRun, run_teardown_command
from rgt_tui.services.teardown.confirm import TEARDOWN_TIMEOUT_S
from rgt_tui.services.teardown.gate import GateReport, check_gate
from rgt_tui.services.teardown.held_here import rank_folder
from rgt_tui.services.watch.drivers.autostop_event import (
    answers_after_stop_event,
    stop_outcome_unknown_event,
    stopped_event,
    waits_event,
)
from rgt_tui.services.watch.events import HostState, WatchEvent
from rgt_tui.transport.base import Transport

STOP_TIMEOUT_S = 300.0  # a provider's stop returns in seconds; this long means stuck
GATE_RECHECK_S = 300.0  # after the gate refused, the next re-scan of the box waits this long
IDLE_SAVE_EVERY_S = 60.0  # the idle clock's last sample is written at most this often
STATE_VERSION = 1
AUTOSTOP = "autostop"  # the job name the autostop holds a host under (HostLocks)


def teardown_underway(
    jh: HostJournal, now: float, voided: Callable[[float], str] = lambda opened: ""
) -> str | None:
    """Why the box's teardown forbids a stop now (None: no teardown of it is under way
    or done): it was torn down or a teardown of it was attempted; a typed confirmation
    opened its gate (the user destroys it, by command or by hand); or the name was typed
    less than a teardown's time ago and its re-scan is not recorded (it may be running).
    A confirmation whose re-scan is recorded and opened nothing (the gate refused it)
    forbids nothing: it held a box the gate was about to let stop for 11 minutes (s43
    spot hour #1), as periodic pulls already go on past one. Nor does one that no longer
    holds (``voided(opened)``: ``changed_since``, e.g. a launch since): it held a box idle
    for 20 minutes after its queue ran again (s44 spot hour #4)."""
    if jh.torn_down_at is not None:
        return f"the box was torn down at {local_time(jh.torn_down_at)}"
    box = jh.box.box_id if jh.box else None
    tried = [t for t in jh.teardowns if t.box_id == box]
    if tried:
        return f"a teardown of this box was attempted at {local_time(tried[-1].at)}"
    opened = confirmed_at(jh)
    if opened is not None and not voided(opened):
        return f"a typed confirmation opened the teardown gate at {local_time(opened)}"
    typed = [
        (t, e) for t, e in jh.events if isinstance(e, g.ConfirmationTyped) and e.text == jh.host
    ]
    if not typed:
        return None
    at, confirmation = typed[-1]
    refused = any(
        isinstance(e, g.Rescanned) and e.attempt == confirmation.attempt for _, e in jh.events
    )
    if not refused and now - at < TEARDOWN_TIMEOUT_S + 60:
        return f"a teardown was confirmed at {local_time(at)} and may be running"
    return None


# The journal's events that settle a gate line by name (``teardown --ack-…``, the TUI's
# Missing/Running/Unfinished: accept): counted in the records stamp.
ACKNOWLEDGEMENTS = (MissingCellAcknowledged, RunningAcknowledged, UnfinishedAcknowledged)


@dataclass
class _Host:
    """What autostop keeps per host: the idle clock and the launches already stopped."""

    idle: IdleClock
    stopped: set[int]
    saved_at: float = 0.0  # when the idle clock was last written
    stop_ended: float | None = None  # when the last stop ended with exit 0 (read once)
    # The box was seen not answering after that stop: it went down, and a box answering
    # later was started again, not a stop that stopped nothing (hour s23a #4).
    down_after_stop: bool = False
    down_since: float | None = None  # not answering since (after the stop), this process
    # When the last stop was claimed, if it has no outcome: told once its command's time
    # has passed (the watch that ran it ended meanwhile: stop_outcome_unknown).
    unsettled: float | None = None
    unsettled_told: bool = False  # stop_outcome_unknown was sent for ``unsettled``
    unsettled_launch: int | None = None  # the launch that unsettled stop was for
    error: str | None = None  # the state file is unreadable: no stop until it is fixed
    running_since: float | None = None  # this process runs the stop command since then
    # Launches whose stop ran and failed (exit ≠ 0, timed out, could not start), with
    # how: "already stopped" of them read as stopped, the box billing in full (s39 #3).
    failed: dict[int, str] = field(default_factory=dict)


_FIGURES = re.compile(r"\d+")


def _failed_how(status: object, timed_out: bool) -> str:
    """``exit 1`` / ``timed out`` / ``it could not start``: how a stop command failed."""
    if timed_out:
        return "timed out"
    return f"exit {status}" if isinstance(status, int) else "it could not start"


def _when(value: object) -> float:
    """A recorded time, or 0 for anything else (the state file is read as found)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _down_after_stop(kept: _Host, connection: str, now: float) -> None:
    """Whether the box went down after its stop, from one sample's connection."""
    if connection in ("connected", "connecting"):
        kept.down_since = None
    elif kept.down_since is None:
        kept.down_since = now
    elif now - kept.down_since >= DOWN_AFTER_STOP_S:
        kept.down_after_stop = True


GPU_SAY_EVERY_S = 60.0  # the GPUs' busy/idle reason: at most one line a minute


class AutoStop:
    """Runs each opted-in host's reversible stop once its queue is done, its results safe
    and its GPUs idle (see the module docstring). Driven by the Watcher's ``on_host``.

    ``locks``: the runtime's one ``HostLocks`` (its check and stop hold the host, and
    wait for a pull or teardown that holds it). ``journal``: the fleet's journal
    (default: its place under the state folder); the autostop state sits beside it,
    ``autostop/<host>.json``. ``on_host`` takes as long as
    the gate's re-scan and re-hash when it gets that far; a call for a host whose check
    is still going returns at once."""

    def __init__(
        self,
        fleet: Fleet,
        connections: FleetConnections,
        *,
        emit: Callable[[WatchEvent], None],
        locks: HostLocks,
        clock: Callable[[], float] = time.time,
        journal: Journal | None = None,
        recheck_s: float = GATE_RECHECK_S,
        timeout_s: float = STOP_TIMEOUT_S,
        report: Callable[[str], None] = lambda line: None,
        fleet_mistake: Callable[[], str] = lambda: "",
    ) -> None:
        self.fleet = fleet
        self.connections = connections
        # The fleet file's mistake while it is not applied ("" when none): the stop
        # command in force is then the last good file's, not the one saved (h491 #1).
        self.fleet_mistake = fleet_mistake
        self.journal = journal or journal_for(fleet)
        self.locks = locks  # the runtime's one: shared with the pulls and the TUI's jobs
        self._emit = emit
        self._waits_told: set[str] = set()  # the keys of the waits told (``_wait``)
        self._clock = clock
        self.recheck_s = recheck_s
        self.timeout_s = timeout_s
        # Why each host's stop has not run, as of its last sample (for display), and the
        # kind of reason last said through ``report`` (a line each time it changes).
        self.reasons: dict[str, str] = {}
        self.report = report
        self._said: dict[str, str] = {}
        self._gpu_said_at: dict[str, float] = {}  # when a GPU reason was last said
        # Hosts whose autostop can never run as configured, said once at start.
        self.refusals: dict[str, str] = refusals(fleet)
        self._hosts: dict[str, _Host] = {}
        self._busy: set[str] = set()
        # host → (launch ts, when the gate refused, its records' stamp then): re-scanned
        # after recheck_s, or sooner once a pull or verify changed those records.
        self._refused_at: dict[str, tuple[int, float, tuple[int, ...]]] = {}
        self._answered: set[tuple[str, float]] = set()  # (host, stop) told still answering

    def state_path(self, host: str) -> Path:
        """Where the host's autostop state is kept (beside its journal); the runtime reads
        a stop recorded there as the box being stopped (``services.runtime.stopped``)."""
        return autostop_path(self.journal.directory, host)

    async def on_host(self, host: HostConfig, state: HostState) -> None:
        """Decide for one sample of ``host``; run its stop when every condition holds."""
        minutes = host.watch.autostop_minutes
        if minutes is None:
            return
        refusal = _refusal(host)
        if refusal is not None:
            self.reasons[host.name] = refusal  # said at start and when the file changes
            return
        now = self._clock()
        kept = await self._host(host.name)
        if kept.error is not None:
            self.say(host.name, "state", kept.error)
            return
        if kept.stop_ended is not None:
            was_down = kept.down_after_stop
            _down_after_stop(kept, state.connection, now)
            if kept.down_after_stop and not was_down:
                # Kept in the state file: a watch restarted after the box came back told
                # "STILL ANSWERS … may still be billing" of a box the user started (h532 #3).
                await asyncio.to_thread(self._save_down, host.name, kept.stop_ended)
        if (
            kept.unsettled is not None
            and not kept.unsettled_told
            and now - kept.unsettled > self.timeout_s + STOP_SETTLE_S
        ):
            # Read again first: another watch that ran it may have recorded its outcome.
            kept = self._hosts[host.name] = await asyncio.to_thread(self._load, host.name)
        if (
            kept.unsettled is not None
            and not kept.unsettled_told
            and now - kept.unsettled > self.timeout_s + STOP_SETTLE_S
        ):
            # Past the command's time: no process will record its outcome (a watch running
            # it now would have); a restart before then tells it when the time has passed.
            answers = state.connection == "connected"
            self._emit(stop_outcome_unknown_event(host, kept.unsettled, answers=answers))
            kept.unsettled_told = True
        idle_why = idle_refusal(
            state.snapshot, state.connection, self.fleet.thresholds.idle_util_pct
        )
        # No sample now (a restart's first look, a reconnect) says nothing of the GPUs:
        # the clock is left as it was, and a gap past MAX_SAMPLE_GAP_S restarts it at the
        # next idle sample. Taken as "busy", it set every restart and every one-second
        # drop back to "idle 0s", and `watch --once` from cron never stopped a box
        # (hour s23a #2).
        unknown = idle_why is not None and idle_why.startswith((UNKNOWN_GPUS, NO_SAMPLE))
        if (not unknown and kept.idle.observe(idle_why is None, now)) or (
            idle_why is None and now - kept.saved_at >= IDLE_SAVE_EVERY_S
        ):
            kept.saved_at = now
            await asyncio.to_thread(self._save_idle, host.name, kept.idle)
        why = queue_refusal(state.queue)
        if why is not None or state.queue is None or state.queue.launch is None:
            self.say(host.name, "queue", why or "no queue")
            return
        launch = state.queue.launch.ts
        if launch in kept.stopped:
            self._answers_after_stop(host, kept, state, now)
            self.say(host.name, "stopped", self._stopped_words(kept, launch))
            return
        idle_for = kept.idle.idle_for(now)
        done = state.queue.launch.done
        if done is not None:
            # Idle from the queue's end at the earliest: a clock kept over a restart of
            # watch covered a queue that ran unwatched, and a box stopped 34 s after its
            # last cell read "GPUs under 5 % for 16m38s" (h535 #3). (The box's clock: a
            # box ahead of this one only delays the stop.)
            idle_for = min(idle_for, max(0.0, now - done.ts))
        if idle_why is not None or idle_for < minutes * 60:
            if idle_why is not None and idle_why.startswith((UNKNOWN_GPUS, NO_SAMPLE)):
                # Not the GPUs' busy/idle flip: a reason of its own, said when it changes
                # (as "busy", the first sample's "no sample" stood for the whole watch over
                # the reason that followed: hour s20c #4).
                self.say(host.name, "unknown", idle_why)
            elif idle_why is not None:
                self.say(host.name, "busy", f"GPUs not idle: {idle_why}")
            else:
                self.say(
                    host.name, "idle", f"GPUs idle {fmt_duration(idle_for)} of {minutes:g} min"
                )
            return
        refused = self._refused_at.get(host.name)
        if host.name in self._busy or (
            refused is not None
            and refused[0] == launch
            and now - refused[1] < self.recheck_s
            and refused[2] == await asyncio.to_thread(self._records_stamp, host)
        ):
            # A check is under way, or the gate refused a moment ago and nothing it reads
            # here changed since: no re-scan spam. A pull or verify that ended meanwhile
            # is looked at now, not 5 minutes on (s36 watch #8).
            return
        held = self.locks.claim(host.name, AUTOSTOP)
        if held is not None:
            # A pull, verify or teardown of the host is running: its outcome is what the
            # gate must see. Looked at again on the next sample, once it let go.
            self.say(host.name, "held", f"the {held} of {host.name} is running: not now")
            return
        self._busy.add(host.name)
        try:
            await self._check_and_stop(host, state.queue, kept, idle_for, now)
        finally:
            self._busy.discard(host.name)
            self.locks.release(host.name, AUTOSTOP)

    async def _check_and_stop(
        self, host: HostConfig, view: QueueView, kept: _Host, idle_for: float, now: float
    ) -> None:
        assert view.launch is not None
        launch = view.launch.ts
        try:
            jh = await asyncio.to_thread(self.journal.load, host.name)
        except JournalError as exc:
            self.say(host.name, "journal", f"the journal cannot be read: {exc}")
            return
        underway = await asyncio.to_thread(teardown_underway, jh, now, self._voided(host, jh))
        if underway is not None:
            self.say(host.name, "teardown", f"teardown: {underway}")
            return
        # Taken before the gate reads the records: a pull that lands during the check is
        # a change to look at again for (review s37).
        stamp = await asyncio.to_thread(self._records_stamp, host)
        report = await check_gate(
            self.fleet, host, self._transport(host.name), self.journal, clock=self._clock
        )
        if not report.ready_but_confirmation or report.torn_down_at is not None:
            failing = [
                f"{c.key} ({c.evidence})"
                for c in report.conditions
                if not c.ok and c.key != "confirmed"
            ]
            self._refused_at[host.name] = (launch, now, stamp)
            gate = "; ".join(failing[:3]) or "; ".join(report.problems[:2]) or "locked"
            # The first locked line's fix, and when the gate is looked at again: the line
            # alone left the user guessing why the box still billed (hour s20b #8).
            first = next((c for c in report.conditions if not c.ok and c.key != "confirmed"), None)
            said = fix(first, host.name, tui=False) if first is not None else ""
            again = (
                f"checked again at {local_time(now + self.recheck_s)[11:16]}, or once a "
                "pull or verify of it ends, a cell is accepted, or its queue file changes (a move)"
            )
            # A new line when what fails changes, not when only its figures do.
            self.say(
                host.name,
                "gate:" + re.sub(r"\d+", "#", gate),
                f"the teardown gate's conditions do not hold now: {gate}"
                + (f" — fix: {said}" if said else "")
                + f"; {again}",
            )
            return
        if report.hand_run:
            # A run started by hand (an evaluation, a notebook) idles its GPUs while it
            # loads or waits: stopping the box kills it. The gate's note, a wait here,
            # looked at again as a refused gate is (not a re-hash every sample).
            self._refused_at[host.name] = (launch, now, stamp)
            self._wait(
                host.name,
                launch,
                "a process outside the queue holds the GPUs",
                f"{report.hand_run} — autostop does not stop a box while it runs",
            )
            return
        if mistake := self.fleet_mistake():
            # A stop edited to a new instance id beside a typo would stop the id the
            # last good file named, maybe another box of the user's now at work. Looked
            # at again once the file is applied (``reload``), or as a refused gate is.
            self._refused_at[host.name] = (launch, now, stamp)
            self._wait(
                host.name,
                launch,
                "the fleet file is not applied",
                # Not the title's words again (h602 #6: "… not applied — the fleet file is
                # not applied (…)" on the console).
                f"the stop runs the fleet file's command, and the file has a mistake "
                f"({mistake}): the command in force is the last good file's — it waits "
                "until the file is applied",
            )
            return
        claim = await asyncio.to_thread(self._claim, host.name, launch, report, idle_for)
        if claim is not None:
            # Another watch's claim, maybe still running: the state is read again, so its
            # outcome (or its lack: stop_unknown) is followed here as for a stop of this
            # watch's own (h535 #2: "already stopped once" while the other watch's
            # command ran, and nothing once that watch died mid-command).
            self._hosts[host.name] = fresh = await asyncio.to_thread(self._load, host.name)
            if launch in fresh.stopped:
                self.say(host.name, "stopped", self._stopped_words(fresh, launch))
            else:
                self.say(host.name, "claim", claim)
            return
        kept.stopped.add(launch)
        assert host.watch.stop is not None  # config_refusal said so
        cwd = self.fleet.path.parent if self.fleet.path else None
        kept.running_since = self._clock()
        try:
            run = await run_teardown_command(host.watch.stop, cwd, self.timeout_s)
        except OSError as exc:  # the shell could not start (cwd gone, no sh): it did not run
            run = LocalRun(None, f"the stop command could not start: {exc}", False)
        finally:
            kept.running_since = None
        kept.stop_ended = await asyncio.to_thread(self._record_run, host.name, launch, run)
        if run.status != 0 or run.timed_out:
            kept.failed[launch] = _failed_how(run.status, run.timed_out)
        kept.down_after_stop, kept.down_since = False, None
        self.reasons[host.name] = f"stop ran at {local_time(self._clock())} (exit {run.status})"
        self._emit(
            stopped_event(host, report, view, idle_for, run, self.timeout_s, self.fleet.thresholds)
        )

    def _answers_after_stop(
        self, host: HostConfig, kept: _Host, state: HostState, now: float
    ) -> None:
        """The box answers (this is its sample) past ``STOP_SETTLE_S`` after a stop that
        exited 0: told once per stop (``answers_after_stop_event``). Not when it was seen
        down since: it stopped, and was started again."""
        if state.connection != "connected" or state.snapshot is None:
            return
        at = kept.stop_ended
        if at is None or state.snapshot.t < at + STOP_SETTLE_S or (host.name, at) in self._answered:
            return
        if kept.down_after_stop:
            self._answered.add((host.name, at))  # started again: its news is "back"
            return
        self._answered.add((host.name, at))
        self._emit(answers_after_stop_event(host, at, now))

    def _voided(self, host: HostConfig, jh: HostJournal) -> Callable[[float], str]:
        """``voided_by`` for ``host``'s journal (it reads files: call it in a thread)."""
        groups = self.fleet.groups_of(host.name)
        return voided_by(jh, host, self.journal.directory, groups, self.fleet.results_dir)

    def _records_stamp(self, host: HostConfig) -> tuple[int, ...]:
        """When the pull and verify records the gate reads last changed, and the host's
        queue file (a stat each): a cell moved off the host (its #moved-to line) is what
        the gate waited for, looked at now, not 5 minutes on (s43 spot hour #5); the
        files of the groups it is a rank of too (their cells run on it). The inode with
        the time: a move rewrites a file by rename, within one tick of a coarse clock.
        And how many acknowledgements the journal holds (not its time: every check writes
        it): `teardown --ack-unfinished`, as the refusal says to run, is looked at now
        (h472 #10). The records of each group's pull of this box's rank as well: the
        gate's group line waits for them (`pull GROUP` was looked at 5 minutes on;
        review h504 #6). Reads files: call it in a thread."""
        groups = self.fleet.groups_of(host.name)
        folders = [fleet_host_dir(self.fleet, host)] + [
            f for group in groups if (f := rank_folder(self.fleet.results_dir, group, host.name))
        ]
        stamps = []
        records = [p for f in folders for p in (manifest_path(f), verification_path(f))]
        queues = [h.queue for h in (host, *groups) if h.queue]
        for path in (*records, *queues):
            try:
                st = path.stat()
            except OSError:
                stamps += [0, 0]
            else:
                stamps += [st.st_mtime_ns, st.st_ino]
        try:
            events = self.journal.load(host.name).events
        except (JournalError, OSError, ValueError):
            events = []  # the check says the journal cannot be read
        stamps.append(sum(1 for _, e in events if isinstance(e, ACKNOWLEDGEMENTS)))
        return tuple(stamps)

    def _stopped_words(self, kept: _Host, launch: int) -> str:
        """Why no second stop runs for the queue of ``launch``: it was stopped, or a stop
        of it was started and has no outcome (its watch ended mid-command), which is no
        "already stopped" (hour s23c #4)."""
        queue = f"the queue launched at {local_time(launch)}"
        if kept.running_since is not None:  # ours, now: no "already stopped" yet (s36 #4)
            until = local_time(kept.running_since + self.timeout_s)[11:16]
            return (
                f"the stop of {queue} runs now (since "
                f"{local_time(kept.running_since)[11:16]}; its command's time ends at {until})"
            )
        if launch in kept.failed:
            return (
                f"the stop of {queue} FAILED ({kept.failed[launch]}): the box still bills in "
                "full — stop it in the provider's console; no second stop runs"
            )
        if kept.unsettled is None or kept.unsettled_launch != launch:
            # Another launch's stop with no outcome is not this one's (review s24 #6).
            return f"already stopped once for {queue}"
        started = local_time(kept.unsettled)[11:16]
        if kept.unsettled_told:
            return (
                f"a stop of {queue} started at {started} and has no recorded outcome (its "
                "watch ended mid-command): check the provider's console; no second stop runs"
            )
        until = local_time(kept.unsettled + self.timeout_s + STOP_SETTLE_S)[11:16]
        return (
            f"a stop of {queue} started at {started} and has no outcome yet (another watch "
            f"may be running it); if none is, that is told at {until}"
        )

    def stops_running(self) -> list[str]:
        """What a watch that ends now leaves behind: each stop command still running (it
        goes on in its own process group, its outcome unrecorded), in words (h532 #4: a
        SIGTERM mid-stop ended watch without a word, and the alarms that followed read
        as a stop gone wrong)."""
        return [
            f"{name}'s stop command (started {local_time(kept.running_since)[11:16]}) is "
            "still running: it goes on by itself, and its outcome is not recorded — check "
            f"{name} at the provider's console; a later watch tells it (stop_unknown) once "
            "its time has passed"
            for name, kept in sorted(self._hosts.items())
            if kept.running_since is not None
        ]

    def _wait(self, host: str, launch: int, title: str, why: str) -> None:
        """A wait only the user can end: said as any other, and told once per queue and
        cause (``waits_event``)."""
        self.say(host, title, why)
        event = waits_event(self.fleet.host(host), launch, why, title)
        if event.key not in self._waits_told:  # the notify sink's log keeps it past a restart
            self._waits_told.add(event.key)
            self._emit(event)

    def say(self, host: str, kind: str, why: str) -> None:
        """Keep why ``host``'s stop does not run now; say it (``report``) when it changed
        since last said. The GPUs' busy/idle wait at most once a minute (a replayed or
        bursty GPU flips every few seconds); any other reason when its words change,
        figures and the running cell's name aside (the queue's first "has not been read"
        stood for the whole watch once the queue was read: a user's hour)."""
        self.reasons[host] = why
        # Figures aside (a count, an age): a new line when what it waits for changes.
        plain = _FIGURES.sub("#", why.split(" (running: ")[0])
        said_as = kind if kind in ("busy", "idle") else f"{kind}: {plain}"
        if self._said.get(host) == said_as:
            return
        now = self._clock()
        if kind in ("busy", "idle"):
            # GPUs that flip between busy and idle (a replayed or bursty load) are said at
            # most once a minute; the first idle after a busy line is said, so the
            # standing line is not "not idle" while the idle minute counts (a user's hour).
            last = self._gpu_said_at.get(host)
            if (
                last is not None
                and now - last < GPU_SAY_EVERY_S
                and self._said.get(host)
                in (
                    "busy",
                    "idle",
                )
            ):
                return
            self._gpu_said_at[host] = now
        self._said[host] = said_as
        self.report(f"{host}: autostop waits: {why}")

    def reload(self, fleet: Fleet) -> dict[str, str]:
        """Take a changed fleet file; returns the refusals it brings (a host's new or
        changed one, by host), to be said once."""
        self.fleet = fleet
        self._refused_at.clear()  # what a refusal read may have changed with the file
        before, self.refusals = self.refusals, refusals(fleet)
        return {name: why for name, why in self.refusals.items() if before.get(name) != why}

    def _transport(self, name: str) -> Transport | None:
        try:
            return self.connections.transport(name)
        except KeyError:
            return None  # not in the connections: the gate records a failed re-scan

    # --- the state file (under the host's journal lock) ---------------------------------

    async def _host(self, name: str) -> _Host:
        kept = self._hosts.get(name)
        if kept is None:
            kept = self._hosts[name] = await asyncio.to_thread(self._load, name)
        return kept

    def _read(self, name: str) -> dict[str, Any]:
        path = self.state_path(name)
        data = read_json(path)
        if data is None:
            return {"version": STATE_VERSION, "host": name, "stops": []}
        if (
            not isinstance(data, dict)
            or data.get("host") != name
            or not isinstance(data.get("stops"), list)
        ):
            raise ValueError("not an autostop state of this host")
        return data

    def _load(self, name: str) -> _Host:
        try:
            data = self._read(name)
            stopped = {int(s["launch_ts"]) for s in data["stops"]}
            since, seen = data.get("idle_since"), data.get("idle_seen_at")
            idle = IdleClock(
                float(since) if since is not None else None,
                float(seen) if seen is not None else None,
            )
        except (ValueError, TypeError, KeyError, OSError) as exc:
            path = self.state_path(name)
            # Which queues were stopped is unknown: stopping again could be the second.
            return _Host(
                IdleClock(),
                set(),
                error=f"{path}: the autostop state is unreadable ({printable(exc, 200)}); "
                f"no stop runs until it is fixed — check the provider's console, then "
                f"move it aside (mv {path} {path}.damaged)",
            )
        unsettled, unsettled_launch = self._unsettled(data)
        failed = {
            int(s["launch_ts"]): _failed_how(s.get("exit_status"), bool(s.get("timed_out")))
            for s in data["stops"]
            if "ended_at" in s and s.get("ok") is False
        }
        ended = last_good_stop(data)
        return _Host(
            idle,
            stopped,
            stop_ended=ended,
            down_after_stop=ended is not None and data.get("down_after_stop") == ended,
            unsettled=unsettled,
            unsettled_launch=unsettled_launch,
            failed=failed,
        )

    def _unsettled(self, data: dict[str, Any]) -> tuple[float | None, int | None]:
        """When the last stop was claimed and for which launch, if it has no outcome (yet:
        another watch may be running it now; ``on_host`` waits out its time before
        telling it); (None, None) otherwise. The launch is None when unreadable."""
        claimed = [s for s in data["stops"] if isinstance(s, dict)]
        last = max(claimed, key=lambda s: _when(s.get("claimed_at")), default=None)
        if (
            last is None
            or "ended_at" in last
            or not isinstance(last.get("claimed_at"), int | float)
        ):
            return None, None
        try:
            launch: int | None = int(last["launch_ts"])
        except (KeyError, TypeError, ValueError):
            launch = None
        return float(last["claimed_at"]), launch

    def _save_idle(self, name: str, idle: IdleClock) -> None:
        with self.journal.locked(name):
            try:
                data = self._read(name)
            except (ValueError, OSError):
                return  # said by _load; never written over
            data["idle_since"], data["idle_seen_at"] = idle.since, idle.seen
            atomic_write_json(self.state_path(name), data)

    def _save_down(self, name: str, stop_ended: float) -> None:
        """Record that the box went down after the stop that ended at ``stop_ended``."""
        with self.journal.locked(name):
            try:
                data = self._read(name)
            except (ValueError, OSError):
                return  # said by _load; never written over
            data["down_after_stop"] = stop_ended
            atomic_write_json(self.state_path(name), data)

    def _claim(self, name: str, launch: int, report: GateReport, idle_for: float) -> str | None:
        """Record that this queue's stop runs now, unless it already ran (another watch,
        an earlier run) or a teardown began meanwhile; None when claimed."""
        with self.journal.locked(name):
            try:
                data = self._read(name)
                jh = self.journal.load(name)
            except (ValueError, OSError, JournalError) as exc:
                return (
                    f"no stop: the autostop state or journal cannot be read ({printable(exc, 200)})"
                )
            if any(int(s.get("launch_ts", -1)) == launch for s in data["stops"]):
                return f"already stopped once for the queue launched at {local_time(launch)}"
            host = self.fleet.host(name)
            underway = teardown_underway(jh, self._clock(), self._voided(host, jh))
            if underway is not None:
                return f"teardown: {underway}"
            data["stops"].append(
                {
                    "launch_ts": launch,
                    "box_id": report.box.box_id if report.box else None,
                    "claimed_at": self._clock(),
                    "idle_s": idle_for,
                    "exit_status": None,  # still None after a crash mid-command: never re-run
                }
            )
            atomic_write_json(self.state_path(name), data)
        return None

    def _record_run(self, name: str, launch: int, run: LocalRun) -> float | None:
        """Record how the stop ended; returns when, had it exited 0 (else None)."""
        with self.journal.locked(name):
            try:
                data = self._read(name)
            except (ValueError, OSError):
                return None
            for stop in data["stops"]:
                if stop.get("launch_ts") == launch:
                    stop.update(
                        exit_status=run.status,
                        timed_out=run.timed_out,
                        ok=run.status == 0 and not run.timed_out,
                        output=run.output[-4000:],
                        ended_at=self._clock(),
                    )
            atomic_write_json(self.state_path(name), data)
        return last_good_stop(data)


def refusals(fleet: Fleet) -> dict[str, str]:
    """Each host whose autostop can never run as configured, and why
    (``domain.autostop.config_refusal``): ``watch`` says them when it starts and when
    the fleet file changes."""
    return {
        h.name: why
        for h in fleet.hosts
        if h.watch.autostop_minutes is not None and (why := _refusal(h)) is not None
    }


def _refusal(host: HostConfig) -> str | None:
    reversible = [p.name for p in load_profiles().values() if p.reversible_stop]
    return config_refusal(host, load_profile(host.profile), reversible)
