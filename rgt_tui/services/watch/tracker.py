"""Which ``WatchEvent``s one host's new state means: pure, given what was seen before.

Past 450 lines on purpose: every event kind reads and writes the same ``HostMemory``,
and its JSON form sits beside it.

``derive(host, memory, state)`` compares a ``HostState`` with the host's ``HostMemory``
(what ``watch`` — or the TUI — last saw and announced, kept in the fleet's journal by
``store.WatchStore``) and returns the memory after it and the events it owes:

- ``alert``: an alert opened (key: the alert and when it opened; an OOM kill also by
  boot and counter, so each further kill is told, not folded into the first). The
  forgotten box (GEN1, ``cost.forgotten``) opening is a ``forgotten`` event instead. A reboot and a
  lost connection are not told as alerts: the ``reboot`` and ``silent`` events say them.
- ``reminder``: an alert still open ``reminder_s`` after it opened, once per period
  (key: the alert, its opening, the reminder's number); a late one (a drop, a restart, a
  shorter period set meanwhile) is one reminder, never the periods missed one by one, and
  the next a whole period after it.
- ``queue_done``: a launch's done record (key: the launch's ts), worded by
  ``queue_end_words``: a killed or interrupted cell named as such, teardown advised only
  when nothing is left to run.
- ``silent``: no answer for ``silent_grace_s`` (key: since when); an interruptible box
  once seen answering is told by its preemption instead.
- ``back``: a box told ``silent`` answers again (key: the silence's start), so whoever
  got the warning learns it is over.
- ``reboot``: the box's boot id is not the one last seen (key: the new boot id), so a
  reboot while nothing watched is still told once.
- ``runs_twice``: a cell the queue file moved to another host runs (or finished) here
  all the same: the box came back after a move nobody watched (key: the cell, its
  attempt's start and whether it runs or ended). Two runs bill twice, and the other host runs it again unless told.

A group (``[[groups]]``) and its boxes are told once each thing: the group's alerts are
rank 0's sample, told under that box's name, so the group tells none; a box whose records
are a group's job (``QueueView.group_job``: it ran as a rank) leaves the job's end to the
group's ``queue_done``.

Every event changes the memory, so a memory saved before the event is delivered means
the event is never owed again: a restart repeats nothing. An alert missing from a sample
is closed only when ``may_close`` (the caller's warm-up: rules that need minutes of
samples — idle, silent log — must have had them), so a restart does not close and
re-announce an alert still open on the box.

Over 450 lines: the one pure reducer of watch's memory; each event kind is a short
function here, and its words live beside it so a restart's "told once" is checked in
one place.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from typing import Any

from rgt_tui.domain.health import Alert, HealthState
from rgt_tui.domain.queue_records import RunnerLaunch
from rgt_tui.domain.queue_state import (
    BY_GROUP,
    BY_OWN_FAILURE,
    DONE,
    FAILED,
    GROUP_STOPPED,
    INTERRUPTED,
    KILLED,
    PENDING,
    RETRY,
    SKIPPED,
    SLURM_ENDED,
    STOPPED,
    QueueView,
    nothing_left_to_run,
)
from rgt_tui.domain.text import printable, shell_word
from rgt_tui.domain.units import fmt_duration, local_time, plural
from rgt_tui.services.watch.events import HostState, WatchEvent

MEMORY_VERSION = 1
FORGOTTEN = "cost.forgotten"
# Alerts worked out at each look from the clock and the fleet file, not from the box's
# latest sample (domain.cost.cost_alerts): still true of a box that does not answer.
WITHOUT_SAMPLE = (FORGOTTEN, "profile.release_clock")
OOM_KILL = "cgroup.oom_kill"
# Told by their own events (reboot, silent): never also as an alert.
NOT_ALERT_EVENTS = frozenset({"host.rebooted", "connection.lost"})
# Not answering. "ended" (a torn-down box gone, as it should be) and "stopped" (a box
# watch's autostop stopped: services.runtime.stopped) are none of them: never silent.
NOT_CONNECTED = ("reconnecting", "lost", "unreached")
NAME_CHARS = 60  # a cell name in a notification: the box's text, cut
MAX_NAMED = 5  # cells named in a retry command; more read "…"
SILENT_GRACE_S = 300.0  # a drop of a few minutes is a network blip, not a silent box
REMINDER_SLACK_S = 30.0  # a reminder this late (the looks' spacing) is still on schedule
OPENS_PER_RULE = 10  # alerts of one rule a host may open per OPENS_WINDOW_S, told
OPENS_WINDOW_S = 3600.0
SUBJECT_CHARS = 120  # a subject from the box (a mount, a cell): as /metrics cuts its labels
SAID_CHARS = 2000  # an alert's words in an event; a notification cuts its body to 1800
# A one-sample rule (AT_ONCE: a disk at 90 %) closes only once missing this long: a disk
# checkpointing and pruning around its threshold opened a critical notification at each
# crossing, to every target, all night (h562 #1: 40 in 40 s). Back sooner, it stays the
# alert told, reminded on its schedule; a disk that fills again later is told again.
QUIET_BEFORE_CLOSE_S = 900.0


@dataclass(frozen=True)
class OpenAlert:
    """An alert that is open: when it opened (this machine's clock), reminders sent."""

    opened: float
    reminders: int = 0
    # When the schedule of the next reminder counts from: a reminder's period boundary,
    # or the time of a catch-up reminder (None: ``opened`` + ``reminders`` periods).
    reminded_at: float | None = None
    # A one-sample rule's alert missing from fresh samples since then: it closes once
    # missing for QUIET_BEFORE_CLOSE_S; back before that, it is the same alert, not news.
    missing_since: float | None = None


@dataclass(frozen=True)
class HostMemory:
    """What was seen and told about one host, across watch runs (see module docstring)."""

    open: dict[str, OpenAlert] = field(default_factory=dict)  # alert_slot → when opened
    boot_id: str | None = None
    done_launch: int | None = None  # the last launch whose done record was told
    lost_since: float | None = None  # not answering since (None: answering)
    silent_told: float | None = None  # the lost_since a silent event was told for
    # The OOM counter at the first sample of ``oom_boot`` (HealthState.oom_baseline), so
    # a kill while nothing watched still rises above it after a restart.
    oom_boot: str | None = None
    oom_baseline: int | None = None
    # The idle clock (HealthState.idle_since, the box's clock) and the last sample that
    # saw it still idle (saved at most every IDLE_SEEN_EVERY_S): a restart, or watch --once
    # from cron, goes on counting, where each process started it afresh and cost.idle never
    # came (h602 #1).
    idle_since: float | None = None
    idle_seen: float | None = None
    key_told: str | None = None  # the refused host key told ("kind key"), until it connects
    twice_told: tuple[str, ...] = ()  # the runs_twice keys still true at the last look
    # (rule, when) of each alert opened in the last OPENS_WINDOW_S: OPENS_PER_RULE a rule
    # may tell per window, the rest are opened unsaid.
    opens: tuple[tuple[str, float], ...] = ()


def occurrence(alert: Alert, state: HostState | None = None) -> str:
    """Which occurrence of a rule an alert is, where one subject has several: an OOM kill
    stays alerted for the rest of the boot once the counter rose, so each further rise
    (a second kill, one while nothing watched) is a new one, named by boot and counter.
    "" for every other rule."""
    snap = state.snapshot if state is not None else None
    if alert.id != OOM_KILL or snap is None or snap.cgroup is None:
        return ""
    return f"{snap.boot_id}@{snap.cgroup.oom_kill}"


def alert_slot(alert: Alert, state: HostState | None = None) -> str:
    """The memory's name for an alert: its rule and subject (one per mount, per GPU),
    and its ``occurrence`` where it has one."""
    slot = f"{alert.id}|{_named(alert.subject)}"
    occ = occurrence(alert, state)
    return f"{slot}|{occ}" if occ else slot


def derive(
    host: str,
    memory: HostMemory,
    state: HostState,
    *,
    reminder_s: float,
    silent_grace_s: float = SILENT_GRACE_S,
    may_close: bool = True,
) -> tuple[HostMemory, list[WatchEvent]]:
    """The memory after ``state``, and the events it owes (see the module docstring)."""
    events: list[WatchEvent] = []
    # A group's alerts are rank 0's, told under rank 0's name: not a second time (a
    # user's hour: each alert twice, the group's cell ending three times).
    if not state.group:
        memory = _alerts(host, memory, state, reminder_s, may_close, events)
    memory = _queue_done(host, memory, state, events)
    memory = _key_refused(host, memory, state, events)
    memory = _silent(host, memory, state, silent_grace_s, events)
    memory = _reboot(host, memory, state, events)
    memory = _runs_twice(host, memory, state, events)
    return memory, events


_KEYGEN_RE = re.compile(r"ssh-keygen -R \S+ -f \S+(?: && ssh-keygen -R \S+ -f \S+)*")


def _key_refused(
    host: str, memory: HostMemory, state: HostState, events: list[WatchEvent]
) -> HostMemory:
    """A refused host key, told at once and as itself, once per refusal (kind and key)
    until the box connects again: a changed key may be someone in the middle, and it
    waits for the user, not time. It was told only as "silent", five minutes later
    (a user's hour)."""
    if state.connection == "connected":
        return memory if memory.key_told is None else replace(memory, key_told=None)
    if not state.key_kind or state.group:  # a group reaches rank 0's box: told as the box
        return memory
    told = f"{state.key_kind} {state.key_presented}"
    if memory.key_told == told:
        return memory
    what = {
        "changed": "HOST KEY CHANGED",
        "revoked": "its host key is revoked",
    }.get(state.key_kind, "its host key is not trusted yet")
    # The fix's ssh-keygen commands as code: a notification keeps them as written
    # (``notify._MARKDOWN_RE``), where Markdown escapes would break their [host]:port.
    fix = _KEYGEN_RE.sub(lambda m: f"`{m.group()}`", state.fix or "")
    body = (state.error or "") + (f". Fix: {fix}" if fix else ".")
    events.append(
        WatchEvent(
            "host_key",
            host,
            f"host_key:{host}:{told}",
            f"{host}: {what}; rgt-tui does not connect to it",
            body + " Nothing is sampled, pulled or stopped there until this is settled.",
            "warning" if state.key_kind == "unknown" else "critical",
        )
    )
    return replace(memory, key_told=told)


def _launched_since(state: HostState, at: float) -> bool:
    """The host's queue was launched after ``at``."""
    launch = state.queue.launch if state.queue is not None else None
    return launch is not None and launch.ts > at


def _sampled(state: HostState) -> bool:
    """The alerts are a fresh sample's: connected, with a snapshot."""
    return state.connection == "connected" and state.snapshot is not None


def _alerts(
    host: str,
    memory: HostMemory,
    state: HostState,
    reminder_s: float,
    may_close: bool,
    events: list[WatchEvent],
) -> HostMemory:
    now = state.now
    present = {alert_slot(a, state): a for a in state.alerts if a.id not in NOT_ALERT_EVENTS}
    opened = dict(memory.open)
    opens = memory.opens
    for slot, alert in present.items():
        known = opened.get(slot)
        if known is not None and known.missing_since is not None and _sampled(state):
            # Back soon: the same one. Back after a gap nothing sampled (a drop, watch
            # --once from cron) as long as the hold: a new one (review h564 #2).
            if now - known.missing_since < QUIET_BEFORE_CLOSE_S:
                known = opened[slot] = replace(known, missing_since=None)
            else:
                known = None
        if known is not None and alert.id == FORGOTTEN and _launched_since(state, known.opened):
            # A queue launched since it opened (the box stopped, started, relaunched): its
            # end is a new forgotten box, not the old one's reminder ("still open after
            # 25m16s … finished 3 min ago": an overnight hour, s39 watch #6).
            known = None
        if known is None:
            opened[slot] = OpenAlert(now)
            opens = tuple(o for o in opens if now - o[1] < OPENS_WINDOW_S)
            told = sum(1 for rule, _ in opens if rule == alert.id)
            # One instant counts once: several mounts full in one sample, or a clock that
            # stands still (the same event key again, which a notifier sends once).
            again = (alert.id, now) in opens
            if again or told < OPENS_PER_RULE:
                events.append(_opened_event(host, alert, occurrence(alert, state), now))
            if not again and told < OPENS_PER_RULE:  # no more kept: a small memory (h564 #6)
                opens += ((alert.id, now),)
                if told == OPENS_PER_RULE - 1:
                    events.append(_hushed_event(host, alert.id, now))
            continue
        # Reminded only from a fresh sample: a box that does not answer still has its last
        # sample's alerts, and "log silent … alive, not hung — do not kill it" went on
        # every period beside "box1: silent for 5m00s" (an overnight hour, s39 watch #2).
        # One that answers again is reminded then, late, as after a restart. The cost
        # rules' are worked out at each look, not read from a sample: a release clock runs
        # only while the box is down (the review of s39 #3).
        if reminder_s > 0 and (_sampled(state) or alert.id in WITHOUT_SAMPLE):
            due = int((now - known.opened) // reminder_s)
            last = known.reminded_at
            if last is None:
                last = known.opened + known.reminders * reminder_s
            if due > known.reminders and now - last >= reminder_s:
                # On schedule, the next one is a period after this one's boundary; a late
                # one (a drop, a restart, a shorter period) is said now and the next a
                # whole period later, never seconds after it (hour s18a #8: 92 s late,
                # counted from its boundary, the next came 40 s after it).
                boundary = max(known.opened + due * reminder_s, last + reminder_s)
                at = boundary if now - boundary <= min(REMINDER_SLACK_S, reminder_s / 4) else now
                opened[slot] = replace(known, reminders=due, reminded_at=at)
                occ = occurrence(alert, state)
                events.append(_reminder_event(host, alert, occ, known.opened, due, now))
    # A missing alert closes only on a fresh sample (a stale one after a drop says nothing),
    # and only once the rules that need minutes of samples have had them; one read from a
    # single sample (a full disk) closes without that warm-up, so a disk that fills again
    # is told again (hour s23a #5: not within 31 minutes of a start, the warm-up of the
    # longest rule), once it was missing for QUIET_BEFORE_CLOSE_S (h562 #1).
    if _sampled(state):
        opened = {
            slot: kept
            for slot, a in opened.items()
            if (kept := _kept(slot, a, present, now, may_close))
        }
    if opened == memory.open and opens == memory.opens:
        return memory
    return replace(memory, open=opened, opens=opens)


def _hushed_event(host: str, rule: str, now: float) -> WatchEvent:
    """The last alert of ``rule`` told this hour: a box whose subjects change at every
    sample (a cell renamed each second) opened a new alert, and a notification to every
    target, at each one (h562 #2)."""
    return WatchEvent(
        "alert", host, f"alert:{host}:{rule}:hushed:{now:.0f}",
        f"{host}: {rule} opened {OPENS_PER_RULE} times within the hour",
        f"further {rule} alerts of {host} are not notified for an hour (the TUI and "
        "`rgt-tui status` still show them): look at the box", "warning",
    )  # fmt: skip


def _kept(
    slot: str, alert: OpenAlert, present: dict[str, Alert], now: float, may_close: bool
) -> OpenAlert | None:
    """An open alert after a fresh sample: as it was, marked missing, or None (closed)."""
    if slot in present:
        return alert
    if slot.split("|", 1)[0] not in AT_ONCE:
        return None if may_close else alert
    if alert.missing_since is None:
        return replace(alert, missing_since=now)
    return None if now - alert.missing_since >= QUIET_BEFORE_CLOSE_S else alert


# Rules read from one sample: nothing about them needs minutes of samples to hold.
AT_ONCE = ("disk.inodes", "disk.bytes", "disk.unread", "cgroup.memory")


def _named(subject: str) -> str:
    """A subject as titles, keys and the memory carry it. One from the box may be any
    length: a 200 KB mount went whole into titles, the console and the journal (h562 #3),
    and a chat target refuses such a title, so the alert never arrived. A cut one keeps a
    digest of the whole: two alike in their first characters stay two alerts."""
    if len(subject) <= SUBJECT_CHARS:
        return subject
    digest = hashlib.sha256(subject.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{subject[: SUBJECT_CHARS - 10]}…#{digest}"


def _subject(alert: Alert) -> str:
    return f" {_named(alert.subject)}" if alert.subject else ""


def _said(alert: Alert) -> str:
    """An alert's words in an event (its message holds the box's text too), cut."""
    words = alert.message if len(alert.message) <= SAID_CHARS else alert.message[:SAID_CHARS] + "…"
    return f"{words} ({alert.gotcha})"


def _what(host: str, alert: Alert, occ: str) -> str:
    """The alert's part of an event key: host, rule, subject (and occurrence)."""
    return f"{host}:{alert.id}:{_named(alert.subject)}" + (f":{occ}" if occ else "")


def _opened_event(host: str, alert: Alert, occ: str, now: float) -> WatchEvent:
    key = f"{_what(host, alert, occ)}:{now:.0f}"
    if alert.id == FORGOTTEN:
        return WatchEvent(
            "forgotten", host, f"forgotten:{key}", f"{host}: forgotten box, still billing",
            _said(alert), "critical",
        )  # fmt: skip
    return WatchEvent(
        # No "(warning)": the console line, the notification's type and the metrics'
        # label carry the severity already.
        "alert", host, f"alert:{key}", f"{host}: {alert.id}{_subject(alert)}",
        _said(alert), alert.severity,
    )  # fmt: skip


def _reminder_event(
    host: str, alert: Alert, occ: str, opened: float, n: int, now: float
) -> WatchEvent:
    return WatchEvent(
        "reminder",
        host,
        f"reminder:{_what(host, alert, occ)}:{opened:.0f}:{n}",
        f"{host}: still open after {fmt_duration(now - opened)}: {alert.id}{_subject(alert)}",
        _said(alert),
        alert.severity,
    )


def _queue_done(
    host: str, memory: HostMemory, state: HostState, events: list[WatchEvent]
) -> HostMemory:
    view = state.queue
    launch = view.launch if view is not None else None
    if view is None or launch is None:
        return memory
    if view.told_by_group(state.group):
        return memory  # a rank's records: the group tells the job's end, once
    if memory.done_launch is not None and launch.ts <= memory.done_launch:
        return memory  # told already (or an older launch's record)
    if launch.done is None and view.state == STOPPED:
        # The runner is gone without its done record (killed, the box's OOM killer): the
        # queue stopped and nothing said so (a user's hour: no alert, no notice).
        title, body = queue_gone_words(host, view, interruptible=state.interruptible)
        events.append(
            WatchEvent("queue_done", host, f"queue_gone:{host}:{launch.ts}", title, body, "warning")
        )
        return replace(memory, done_launch=launch.ts)
    if launch.done is None:
        return memory
    title, body = queue_end_words(
        host, view, launch, state.cost_per_hour, interruptible=state.interruptible
    )
    severity = "warning" if launch.done.n_failed else "info"
    events.append(
        WatchEvent("queue_done", host, f"queue_done:{host}:{launch.ts}", title, body, severity)
    )
    return replace(memory, done_launch=launch.ts)


def _tally(view: QueueView, named: frozenset[str] = frozenset()) -> str:
    """``3/5 done, 1 failed, 1 not run``: the whole queue's cells, as the body's summary
    counts them (the done record counts only its own launch's: a resumed queue's "1 ok"
    read as all). Killed, interrupted and not-run cells are counted too: "stopped by you:
    2/5 done" left three cells to the body (h471 #9); but not the ``named`` ones, which
    the title names already."""
    parts = [f"{view.count(DONE)}/{view.total} done"]
    failed = view.count(FAILED) + sum(view.count(s) for s in SLURM_ENDED)

    def others(status: str) -> int:
        return sum(1 for c in view.cells if c.status == status and c.name not in named)

    counts = [(failed, "failed"), (others(KILLED), "killed"), (others(INTERRUPTED), "interrupted")]
    counts += [
        (view.count(PENDING) + view.count(RETRY), "not run"),
        (view.count(SKIPPED), "moved/skipped"),
    ]
    parts += [f"{n} {what}" for n, what in counts if n]
    return ", ".join(parts)


def queue_gone_words(host: str, view: QueueView, *, interruptible: bool = False) -> tuple[str, str]:
    """A runner gone without its done record, as a person reads it: what stopped, and
    how to find out why and go on. On an ``interruptible`` box a preemption is the likely
    cause, and is named first (it read "killed by hand, or the box's OOM killer" beside
    the preemption's own notice: a user's hour, s21a #6)."""
    title = f"{host}: the queue stopped: its runner is gone ({_tally(view)})"
    resume = view.resume_index
    again = (
        f"resume from cell {resume} with L (rgt-tui launch {host} --start {resume})"
        if resume is not None
        else f"launch it again with L (rgt-tui launch {host})"
    )
    left = not nothing_left_to_run(view)
    if not left:
        # Every cell done or passed over (moved to another box, skipped): a relaunch
        # would run nothing, or done work again (h541 #6).
        moved = sum(c.label == "moved" for c in view.cells)
        again = "nothing is left to run here" + (
            f": {plural(moved, 'cell')} moved to another box (rgt-tui queue show {host} says where)"
            if moved
            else ""
        )
    causes = (
        "a preemption of this interruptible box, killed by hand, or the box's OOM killer"
        if interruptible
        else "killed by hand, or by the box's OOM killer"
    )
    body = (
        f"{view.summary()}. The runner ended without its done record ({causes}): see why "
        f"with rgt-tui diagnose {host}, then {again}."
    )
    if interruptible and left:
        # As queue_end_words says it: while the box answers, its newest checkpoint can
        # still be saved; once it goes, m moves the cell (h502 #2: this notice had only
        # "resume with L", a relaunch on a box that may be about to go).
        body = (
            "This box is interruptible: pull and verify now while it answers (p, then v; or "
            f"rgt-tui pull {host}, then rgt-tui verify {host}); if it goes, m moves the "
            f"cell to another box, resuming from that checkpoint. {body}"
        )
    return title, body


def queue_end_words(
    host: str,
    view: QueueView,
    launch: RunnerLaunch,
    cost_per_hour: float | None = None,
    *,
    interruptible: bool = False,
) -> tuple[str, str]:
    """The end of a launch as a person reads it: (title, body). A cell the user killed or
    one that was interrupted is named with what happened to it and to the queue after;
    the advice is to run again what did not finish, and the teardown only once nothing
    is left to run (a kill's "0 ok, 1 failed ... tear the box down" read as the end):
    retry (R) to start a cell over, or relaunch from it (L) to resume its checkpoint. On
    an ``interruptible`` box an interrupted cell may be a preemption's TERM, told before
    the box is gone: the advice then leads with pulling its checkpoint while it answers."""
    # Only this launch's own: a cell killed in an earlier launch (kill --then stop, then
    # a relaunch by hand) is not this launch's story; it is still offered to run again.
    cut = [
        c
        for c in view.cells
        if c.status in (KILLED, INTERRUPTED) and (c.started_at or 0) >= launch.ts
    ]
    if cut:
        first = cut[0]
        if first.status != KILLED:
            what = "interrupted"
        elif first.killed_by == BY_GROUP:  # rgt-tui stopped it: another rank had failed
            what = "stopped with its group"
        else:
            what = "killed by you"
        who = f"cell {printable(first.name, NAME_CHARS)}" + (
            f" and {len(cut) - 1} more" if len(cut) > 1 else ""
        )
        began = min(c.started_at or 0 for c in cut)
        went_on = launch.stop_by != "kill" and any(
            c.status not in (KILLED, INTERRUPTED) and (c.started_at or 0) > began
            for c in view.cells
        )
        tally = _tally(view, frozenset(c.name for c in cut))
        if went_on:
            after = f"the queue went on: {tally}"
        elif (
            launch.stop_by or launch.stopped_by_user or view.state == GROUP_STOPPED
            or first.killed_by == BY_GROUP  # a group's stop: its view has no stop records
        ):  # fmt: skip
            after = f"the queue stopped: {tally}"
        else:  # the launch's last cell: the kill's own notice says "finished" too (h481 #1)
            after = f"the queue finished: {tally}"
        title = f"{host}: {who} {what}; {after}"
    else:
        if not launch.stopped_by_user:
            # A group's own stop: its view's launch has no stop records (group_run.
            # _without_stop), so only its state says it (it read "queue finished").
            how = GROUP_STOPPED if view.state == GROUP_STOPPED else "finished"
        elif launch.stop_by in (BY_GROUP, BY_OWN_FAILURE):  # a rank failed (maybe this)
            how = "stopped with its group"
        else:
            how = "stopped by you"
        title = f"{host}: queue {how}: {_tally(view)}"
    again = [c for c in view.cells if c.status in (KILLED, INTERRUPTED, FAILED, *SLURM_ENDED)]
    if again:
        names = " ".join(shell_word(c.name, NAME_CHARS) for c in again[:MAX_NAMED])
        more = " …" if len(again) > MAX_NAMED else ""
        # R sets a cell's outputs aside and starts it over, or (Resume) keeps them so its
        # run goes on from its checkpoint, that cell alone; L (a relaunch from it) keeps
        # them too and runs every cell from it on (ux-h #13).
        k = min(c.index for c in again)
        one = len(again) == 1
        it, its = ("it", "its") if one else ("them", "their")
        advice = (
            f"Keep the box: R on the Queue tab starts {it} over (rgt-tui queue retry {host} "
            f"{names}{more}) or resumes {it} from {its} checkpoint, if one was written, and "
            "runs no other cell again (the same with --resume)."
        )
        # A launch from k runs every cell from k on, done ones too: L read as the cheap
        # way on while it re-ran finished cells (a user's hour, session 29). Offered only
        # where no done cell follows: then it also runs the cells still pending after it.
        if not any(c.status == DONE and c.index > k for c in view.cells):
            advice += (
                f" L relaunches from {'it' if one else f'cell {k}'} on, "
                f"resuming likewise (rgt-tui launch {host} --start {k})."
            )
        # Nothing done, nothing to pull (a user's hour read "pull what finished" after
        # every cell had failed).
        advice += " Pull what finished with p meanwhile." if view.count(DONE) else ""
        if interruptible and any(c.status == INTERRUPTED for c in cut):
            # A RunPod-style TERM comes before the box goes: this notice was the first, and
            # its "R starts it over" was read before any preemption was named (s35 resume
            # hour #8). While the box answers, its newest checkpoint can still be saved.
            advice = (
                "This box is interruptible, so this may be a preemption's warning: pull and "
                f"verify now while it answers (p, then v; or rgt-tui pull {host}, then "
                f"rgt-tui verify {host}); if it goes, m moves the cell to another box, "
                f"resuming from that checkpoint. {advice}"
            )
    elif view.resume_index is not None:
        n = view.resume_index
        advice = f"Keep the box: resume from cell {n} with L (rgt-tui launch {host} --start {n})."
    else:
        advice = "Pull and verify the results, then tear the box down if nothing else runs there."
    if cost_per_hour:
        # What waiting costs: the box idles and bills on (hour s24a #9).
        advice += f" It bills ${cost_per_hour:.2f}/h while it idles."
    # The title says how it ended: the body's summary without the state word, which a
    # kill --then stop read as "the queue stopped — finished" (s35 docs audit).
    said = f"{view.group_stop}. " if view.group_stop else ""  # which rank, which cell
    return title, f"{said}{view.summary(with_state=False)}. {advice}"


def _silent(
    host: str, memory: HostMemory, state: HostState, grace_s: float, events: list[WatchEvent]
) -> HostMemory:
    if state.connection == "connected":
        if memory.lost_since is None:
            return memory
        since = memory.lost_since
        if memory.silent_told == since and _told_silent(memory, state):
            queued = state.queue is not None and bool(state.queue.cells)
            events.append(_back_event(host, since, state.now, queued))
        return replace(memory, lost_since=None)
    if state.connection not in NOT_CONNECTED:
        return memory  # connecting: nothing is known yet
    if memory.lost_since is None:
        # Still silent across a restart keeps the first time: told once per silence.
        since = state.lost_since if state.lost_since is not None else state.now
        memory = replace(memory, lost_since=since)
    since = memory.lost_since
    assert since is not None
    if state.now - since < grace_s or memory.silent_told == since:
        return memory
    if state.key_kind:
        return memory  # it answers, with a key refused: told as host_key, not a silence
    if state.interruptible and (state.connection != "unreached" or memory.boot_id is not None):
        # It was seen answering (this run, or by an earlier one: its boot is known), so
        # the runtime names its preemption past the grace (the "preempted" event, then
        # on_preempt's "moved"): that is this silence's story, told once; a "may still be
        # alive" after it would contradict it (docs/spot.md).
        return replace(memory, silent_told=since)
    if state.interruptible:
        # Never seen answering: nothing to name a preemption from.
        why = (
            "The box does not answer: an interruptible box, so preempted or released, or "
            "its network is down. Its results are only where they were last pulled to."
        )
    elif state.connection == "unreached" and memory.boot_id is None:
        # Never seen answering by any watch: said so, not "does not answer (powered off…)"
        # (h602 #6); a run may still be there, started before rgt-tui watched it.
        why = (
            "No watch has seen it answer; a run there, if one was started, may still be "
            "alive (GEN8)."
        ) + (
            ""
            if state.fix
            else " Check its address, port and login in the fleet file, and whether the "
            "box is up yet."
        )
    else:
        why = (
            "The box does not answer (powered off, network down, or released?). A run "
            "there may still be alive (GEN8); its results are only where they were last "
            "pulled to."
        )
    # The title carries the last try's own words for a host that never answered (a name
    # that does not resolve, a refused port): four such hosts read only "silent for
    # 5m03s", like boxes that had gone (hour s19b #7). The body does not say them twice.
    gone = fmt_duration(state.now - since)
    title = f"{host}: silent for {gone}"
    in_title = state.connection == "unreached" and bool(state.error)
    if state.connection == "unreached":
        title = f"{host}: never answered ({gone})"
        if state.error:
            title += f" — last try: {printable(state.error, 120)}"
    if state.error:  # the last try's own words: a bad name or a refused key waits for you
        said = "" if in_title else f"Last try: {state.error}"
        fix = f"fix: {state.fix}" if state.fix else ""
        why = " — ".join(w for w in (said, fix) if w) + (". " if said or fix else "") + why
    events.append(WatchEvent("silent", host, f"silent:{host}:{since:.0f}", title, why, "warning"))
    return replace(memory, silent_told=since)


def _told_silent(memory: HostMemory, state: HostState) -> bool:
    """The silence that just ended was told as ``silent`` (an interruptible box once seen
    answering had its preemption told instead: that story is the runtime's)."""
    return not state.interruptible or memory.boot_id is None


def _back_event(host: str, since: float, now: float, queued: bool = True) -> WatchEvent:
    """A box told as silent answers again: whoever got the warning learns it is over
    (``queued``: it has a queue to look at; a host with none was sent to a `queue show`
    that says only "not deployed": h582 #8)."""
    where = f" Where its queue stands: rgt-tui queue show {host}" if queued else ""
    return WatchEvent(
        "back",
        host,
        f"back:{host}:{since:.0f}",
        f"{host}: answering again after {fmt_duration(now - since)} silent",
        f"It did not answer from {local_time(since)}. A reboot meanwhile is told on its own.{where}",
    )


def _reboot(
    host: str, memory: HostMemory, state: HostState, events: list[WatchEvent]
) -> HostMemory:
    snap = state.snapshot
    if not _sampled(state) or snap is None or not snap.boot_id:
        return memory
    boot = snap.boot_id
    if memory.boot_id is None or memory.boot_id == boot:
        return memory if memory.boot_id == boot else replace(memory, boot_id=boot)
    events.append(
        WatchEvent(
            "reboot",
            host,
            f"reboot:{host}:{boot}",
            f"{host}: the box rebooted",
            f"Its boot id changed (up {fmt_duration(snap.uptime_s or 0)}): every tmux or "
            "nohup job there died (GEN6). Check the queue (rgt-tui queue show) and relaunch "
            "from the cell it says.",
            "warning",
        )
    )
    return replace(memory, boot_id=boot)


def _runs_twice(
    host: str, memory: HostMemory, state: HostState, events: list[WatchEvent]
) -> HostMemory:
    """A cell moved away (by ``on_preempt`` while the box did not answer, or by hand)
    that this box runs on, or finished: told once per attempt, with the cell's own note,
    which says how to keep one run (h541 #1: the views alone said it, watch never did)."""
    if state.queue is None:
        return memory  # not read this time: what was told stays told
    twice = runs_twice_news(host, state.queue)
    for key, (title, note) in twice.items():
        if key not in memory.twice_told:
            events.append(WatchEvent("runs_twice", host, key, title, note, "warning"))
    told = tuple(sorted(twice))
    return memory if told == memory.twice_told else replace(memory, twice_told=told)


def runs_twice_news(host: str, view: QueueView) -> dict[str, tuple[str, str]]:
    """Each cell the queue file moved away that runs (or finished) on ``host``'s box, by a
    key of its attempt: (title, the cell's note, which says how to keep one run). The
    TUI toasts them as watch sends them (h592 #2: only the Queue tab said it)."""
    news = {}
    for cell in view.cells:
        if not cell.moved_to:
            continue
        name = printable(cell.name, NAME_CHARS)
        dest = printable(cell.moved_to, NAME_CHARS)
        # "queued on": the other host runs it once its box gets to it (h545 #8: "runs here
        # and on box1" while box1 had not started it).
        how = (
            "finished here, yet is queued on"
            if cell.status == DONE
            else "runs here, yet is queued on"
        )
        key = f"runs_twice:{host}:{cell.name}:{cell.started_at or 0}:{cell.status}"
        news[key] = (f"{host}: cell {name} {how} {dest}", cell.note)
    return news


IDLE_SEEN_EVERY_S = 300.0  # how stale the memory's "still idle at" may get (one write)


def note_health(memory: HostMemory, health: HealthState | None) -> HostMemory:
    """The memory with the OOM baseline of the health state's boot (set once per boot),
    and its idle clock (``idle_seen`` moved on at most every IDLE_SEEN_EVERY_S, so an idle
    fleet is not one write a sample)."""
    if health is None:
        return memory
    if health.idle_since is None or health.last_t is None:
        idle = (None, None)
    elif (
        memory.idle_since == health.idle_since
        and memory.idle_seen is not None
        and (0 <= health.last_t - memory.idle_seen < IDLE_SEEN_EVERY_S)
    ):
        idle = (memory.idle_since, memory.idle_seen)
    else:
        idle = (health.idle_since, health.last_t)
    if idle != (memory.idle_since, memory.idle_seen):
        memory = replace(memory, idle_since=idle[0], idle_seen=idle[1])
    if health.boot_id is None or health.oom_baseline is None:
        return memory
    if memory.oom_boot == health.boot_id:
        return memory
    return replace(memory, oom_boot=health.boot_id, oom_baseline=health.oom_baseline)


def seed_health(memory: HostMemory) -> HealthState:
    """A monitor's starting health state from the memory: an OOM kill (or reboot) while
    nothing watched then rises above the baseline seen before, and is alerted; an idle
    clock goes on (``HealthState.observe`` drops it after a gap it could not see)."""
    idle = {}
    if memory.idle_since is not None and memory.idle_seen is not None:
        idle = {"idle_since": memory.idle_since, "last_t": memory.idle_seen}
    if memory.oom_boot is None or memory.oom_baseline is None:
        return HealthState(**idle)
    return HealthState(
        first_boot_id=memory.oom_boot,
        boot_id=memory.oom_boot,
        oom_baseline=memory.oom_baseline,
        **idle,
    )


def memory_to_json(host: str, memory: HostMemory) -> dict[str, Any]:
    """The memory as its journal file holds it."""
    return {
        "version": MEMORY_VERSION,
        "host": host,
        "open": {
            k: {
                "opened": a.opened,
                "reminders": a.reminders,
                "reminded_at": a.reminded_at,
                "missing_since": a.missing_since,
            }
            for k, a in memory.open.items()
        },
        "boot_id": memory.boot_id,
        "done_launch": memory.done_launch,
        "lost_since": memory.lost_since,
        "silent_told": memory.silent_told,
        "oom_boot": memory.oom_boot,
        "oom_baseline": memory.oom_baseline,
        "idle_since": memory.idle_since,
        "idle_seen": memory.idle_seen,
        "key_told": memory.key_told,
        "twice_told": list(memory.twice_told),
        "opens": [list(o) for o in memory.opens],
    }


def _num(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if ok else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def memory_from_json(host: str, data: Any) -> HostMemory:
    """The memory from its file; ValueError when it is not one of ``host``'s."""
    if not isinstance(data, dict) or data.get("version") != MEMORY_VERSION:
        raise ValueError(f"not a version-{MEMORY_VERSION} watch memory")
    if data.get("host") != host:
        raise ValueError(f"written for host {data.get('host')!r}")
    opened: dict[str, OpenAlert] = {}
    raw = data.get("open")
    for slot, entry in raw.items() if isinstance(raw, dict) else ():
        at = _num(entry.get("opened")) if isinstance(entry, dict) else None
        if isinstance(slot, str) and at is not None:
            opened[slot] = OpenAlert(
                at,
                _int(entry.get("reminders")) or 0,
                _num(entry.get("reminded_at")),
                _num(entry.get("missing_since")),
            )
    return HostMemory(
        open=opened,
        boot_id=_str(data.get("boot_id")),
        done_launch=_int(data.get("done_launch")),
        lost_since=_num(data.get("lost_since")),
        silent_told=_num(data.get("silent_told")),
        oom_boot=_str(data.get("oom_boot")),
        oom_baseline=_int(data.get("oom_baseline")),
        idle_since=_num(data.get("idle_since")),
        idle_seen=_num(data.get("idle_seen")),
        key_told=_str(data.get("key_told")),
        twice_told=tuple(k for k in _list(data.get("twice_told")) if isinstance(k, str)),
        opens=tuple(
            (o[0], float(o[1]))
            for o in _list(data.get("opens"))
            if isinstance(o, list) and len(o) == 2 and isinstance(o[0], str) and _num(o[1])
        ),
    )
