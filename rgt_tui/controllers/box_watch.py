"""Which box answers under each host's name, as the App's telemetry sees it.

Every fact belongs to a box, not to a name (DESIGN.md, Teardown): the first sample that
carries a box id (``~/.rgt/box-id`` on the box) is recorded in the journal
(``Journal.observe_box``, in a worker), which decides whether it is the box
it knew or a new one. The identity compared is the whole of it, as the journal's: the
box id *and* the host key the monitor's connection saw (``host_key_fingerprint``), so a
box whose key changed under the same id is a new box too.

A host recorded as torn down is not simply left alone: at start, and on ``r``, it gets
one connection attempt. If the box there is a new one (another id or host key), the
journal moves the old box's records to history and the host is live again, gate closed.
No answer (or no id to tell by) keeps it greyed out and its telemetry stops, with no
reconnect loop. The same box answering is the forgotten-box cost leak (GEN1): on ``r``,
or at start for a teardown recorded before this start and at least ``GRACE_S`` ago (a
provider takes a while to stop a destroyed box: the answers right after a teardown say
nothing, and one recorded while this app watched is retired at once, then tried once
more ``look_again_s`` later, as ``r`` does: a typed "destroyed" is no proof; one recorded
shortly before this start, once its grace is over), it is said loudly
(a toast, and the pane's ``teardown.still-answers`` alert, ``alert``) and the host is
watched again, live (``HostJobs.still_answers_at``), until it stops answering for
``GONE_AFTER_S`` (a short drop keeps the alarm): then it is torn down and gone, and its telemetry stops as above. A Slurm login node, which a
teardown never destroys, is watched again on ``r`` with a note, not an alarm. A box whose host key is refused cannot say its id; when
the key it presents is not the one the journal recorded for the torn-down box, it is
another box: shown live but refused (``HostJobs.refused_key``, its key error on the
pane), never as torn down.

A box recorded as torn down (by this app or by the command line) that no longer
answers is gone, as it should be: the fleet runtime shows its updates through
``as_torn_down`` (``services.runtime.monitors``), never as a lost connection whose run
"may still be alive" (GEN8).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from rgt_tui.controllers.controller_host import ControllerHost
from rgt_tui.controllers.jobs import HostJobs, JobRunner
from rgt_tui.controllers.workers import run_host_worker
from rgt_tui.domain.box_identity import BoxIdentity
from rgt_tui.domain.health import Alert
from rgt_tui.domain.torn_down import GRACE_S, still_answers_alert
from rgt_tui.domain.units import fmt_duration, local_time
from rgt_tui.services.queue.backends import backend_for
from rgt_tui.services.queue.scheduler import JobGated
from rgt_tui.services.telemetry import HostUpdate

# A torn-down box that still answered counts as gone only after this long without an
# answer: watch's own grace for a network blip (SILENT_GRACE_S), not a destroyed box.
GONE_AFTER_S = 300.0


class BoxWatch:
    """Records each host's box identity and decides a torn-down host's one attempt."""

    def __init__(
        self,
        app: ControllerHost,
        jobs: JobRunner,
        *,
        latest: Callable[[str], HostUpdate | None],
        host_key: Callable[[str], str | None],
        stop: Callable[[str], bool],
        is_stopped: Callable[[str], bool],
        reconnect: Callable[[str], None] | None = None,
    ) -> None:
        self.app = app
        self.jobs = jobs
        self._latest = latest
        self._host_key = host_key
        self._stop = stop
        self._is_stopped = is_stopped
        self._reconnect = reconnect  # a monitor started again (for its one attempt)
        # A teardown recorded here is looked at once more this long after it (hour s19a
        # #3: "destroyed" typed twice with the box left running stopped every look).
        self.look_again_s = GRACE_S
        self._looked: set[tuple[str, float]] = set()  # (host, teardown) looked at again
        self._seen: dict[str, int] = {}  # updates per host, to tell a new attempt's
        # Torn-down hosts whose one attempt is awaited: the update count it must exceed.
        self.pending: dict[str, int] = {}
        # The sample from before ``r``: a monitor reports its last sample again when it
        # reconnects, and that one says nothing about which box answers now.
        self._stale: dict[str, object] = {}
        self._observing: set[str] = set()  # hosts whose box is being recorded right now
        self._asked: set[str] = set()  # hosts whose pending attempt is the user's r
        # ... or the look made by itself later (_look_again): judged as r is, not worded
        # as the user's ("when you asked (r)" for a look nobody asked for: h571 #3).
        self._by_itself: set[str] = set()
        # A teardown recorded since this start is one the box is still going away from:
        # only ``r`` asks about it. One from before: the attempt at start asks.
        self._started = jobs.clock()

    def host_updated(self, update: HostUpdate) -> None:
        """A sample or connection change: record a box id the journal does not have yet,
        and decide a pending torn-down host."""
        host = update.host
        self._seen[host] = self._seen.get(host, 0) + 1
        self._note_refused_key(host, update)
        recording = self._observe_if_new(host, update)
        if not recording and _box_id(update) is not None and self.jobs.state(host).refused_key:
            # The journal's own box answers again (its key is trusted once more).
            self.jobs.learned(host, refused_key=None)
        if self.jobs.state(host).still_answers_at is not None and _gone(update, self.jobs.clock()):
            # The torn-down box that still answered stopped: destroyed at last. It is
            # shown torn down again, and its one attempt (jobs_changed) retires it.
            self.jobs.learned(host, still_answers_at=None)
        self._step(host)

    def alert(self, host: str) -> Alert | None:
        """The pane's alert for a torn-down box that still answers (None: not so)."""
        state = self.jobs.state(host)
        if state.still_answers_at is None or state.torn_down_at is None:
            return None
        return still_answers_alert(
            state.torn_down_at, self.jobs.clock(), cluster=self._cluster(host)
        )

    def _cluster(self, host: str) -> bool:
        """A Slurm login node: a teardown never destroys it."""
        config = self.jobs.fleet.find(host)
        return config is not None and isinstance(backend_for(config), JobGated)

    def _note_refused_key(self, host: str, update: HostUpdate) -> None:
        """A refused host key that is not the journal box's: another box answers."""
        error = update.connection.key_error
        if error is None or error.jump_host is not None:
            return  # no refusal, or the jump host's key: it says nothing of the box
        state = self.jobs.state(host)
        known: BoxIdentity | None = state.box
        presented = _fingerprint(error.presented)
        if (
            known is None
            or known.host_key is None
            or presented is None
            or presented == known.host_key
        ):
            return  # nothing to tell it by, or the journal's box itself
        if state.refused_key == presented:
            return
        self.jobs.learned(host, refused_key=presented)
        if state.torn_down_at is not None:
            self.app.notify(
                f"{host}: the box answering presents host key {presented}, not the torn-down "
                f"box's ({known.host_key}): another box, live, its key refused until you "
                "check it (K)",
                title=host,
                severity="warning",
                timeout=15,
            )

    def jobs_changed(self, state: HostJobs) -> None:
        """The journal's view of a host changed (loaded, torn down, a box observed)."""
        host = state.host
        if state.shown_torn_down_at is None:
            # A new box under the name (or another key refused there): it stays live.
            self.pending.pop(host, None)
            self._stale.pop(host, None)
            return
        if host not in self.pending and not self._is_stopped(host):
            self.pending[host] = -1  # any update, the latest already there included
            self._asked.discard(host)
        self._step(host)

    def retry(self, host: str, *, by_user: bool = True) -> None:
        """``r`` on a stopped torn-down host: one more attempt, judged by what comes next
        (``by_user=False``: the look made later by itself, judged the same)."""
        if self.jobs.state(host).torn_down_at is not None:
            self.pending[host] = self._seen.get(host, 0)
            self._asked.add(host)  # the user asked: the same box answering is news now
            if not by_user:
                self._by_itself.add(host)
            before = self._latest(host)
            self._stale[host] = before.snapshot if before is not None else None

    def _observe_if_new(self, host: str, update: HostUpdate | None) -> bool:
        """Start recording the box of ``update`` (its id and the connection's host key)
        when the journal has another box (or none), or would learn its key; True while
        such a recording is in flight."""
        if host in self._observing:
            return True
        box_id = _box_id(update)
        if box_id is None:
            return False
        identity = BoxIdentity(box_id, self._host_key(host))
        known: BoxIdentity | None = self.jobs.state(host).box
        learns_key = known is not None and known.host_key is None and identity.host_key
        if known is not None and known.same_box(identity) and not learns_key:
            return False  # the journal's box, nothing new to record
        self._observing.add(host)
        run_host_worker(self.app, self._observe(host, identity), "identity", host)
        return True

    async def _observe(self, host: str, identity: BoxIdentity) -> None:
        jobs = self.jobs
        try:
            jh = await asyncio.to_thread(jobs.journal().observe_box, host, identity, jobs.clock())
            before = jobs.state(host)
            changes: dict[str, Any] = {
                "box": jh.box,
                "history": tuple(jh.history),
                "torn_down_at": jh.torn_down_at,
                "refused_key": None,  # the box answered: the journal has decided
            }
            # The whole identity, as the journal compares it: a changed key is a new box.
            new_box = before.box is not None and not before.box.same_box(jh.box)
            if new_box:
                # Another box: nothing known about the old one applies to this one.
                changes.update(gate=None, gate_error=None, teardown=None, refusal=None)
            jobs.learned(host, **changes)
            if new_box or (before.torn_down_at is not None and jh.torn_down_at is None):
                same_key = (
                    before.box is not None
                    and before.box.host_key is not None
                    and before.box.host_key == identity.host_key
                )
                what = (
                    "another box id answers under this name with the same host key (another "
                    "login account on the same machine, each keeping its own ~/.rgt, or the "
                    "box re-created with its key kept)"
                    if same_key
                    else "a new box answers under this name"
                )
                self.app.notify(
                    f"{host}: {what} ({identity.describe()}): it is live, its teardown gate "
                    "starts closed; the earlier records are history (Teardown tab)",
                    title=host,
                    timeout=15,
                )
        except Exception as exc:  # a damaged journal: reported, the gate stays locked
            self.app.notify(f"{host}: {exc}", title=host, severity="error", timeout=15)
        finally:
            # After the new state was posted: a decision waiting on it sees it.
            self._observing.discard(host)

    def _step(self, host: str) -> None:
        mark = self.pending.get(host)
        if mark is None:
            return
        update = self._latest(host)
        if update is not None:
            self._note_refused_key(host, update)  # the journal may have loaded since
        state = self.jobs.state(host)
        if state.torn_down_at is None or state.shown_torn_down_at is None:
            self.pending.pop(host, None)
            return
        if update is None or self._seen.get(host, 0) <= mark:
            return  # the attempt has not answered yet
        conn = update.connection
        if conn.status == "connected":
            if update.snapshot is None or update.snapshot is self._stale.get(host):
                return  # connected; its first sample (with the box id) is on its way
            if self._observe_if_new(host, update):
                return  # the journal decides: its answer comes back as jobs_changed
            if _box_id(update) is not None and self._still_answers(host, state.torn_down_at):
                return  # watched again, live, with its alert
        elif conn.error is None:
            return  # still on its first try
        # No answer, no id to tell by, or the same box right after its teardown: it stays
        # torn down, and is done: its monitor, queue poll and connection close
        # (FleetRuntime.retire).
        asked, by_itself = host in self._asked, host in self._by_itself
        self._settled(host)
        if self._stop(host):
            later = self._look_again_later(host, state.torn_down_at)
            self.app.notify(
                f"{host} was torn down: "
                # The answer to the user's own r: "press r" told them to do what they
                # had just done (h461 #7).
                + (
                    "it did not answer when looked at again: "
                    if by_itself
                    else "it did not answer when you asked (r): "
                    if asked
                    else ""
                )
                + "telemetry stopped, its connection closed. "
                + (
                    f"It is looked at once more in {fmt_duration(later)}: a box "
                    "that still answers then is said loudly (GEN1). "
                    if later is not None
                    else ""
                )
                + ("" if asked and not by_itself else "Press r on it if the box is back."),
                title=host,
                timeout=8,
            )

    def _look_again_later(self, host: str, torn_down_at: float) -> float | None:
        """A teardown whose answers were not news yet: one more attempt later, as ``r``
        makes (the same box answering then is GEN1); the seconds until it, None when none
        is planned. One recorded while this app runs is looked at ``look_again_s`` later;
        one recorded before this start but within ``GRACE_S`` of it (`rgt-tui teardown`,
        then the TUI started) once its grace is over: before, none was planned, and the
        pane said "torn down" for good while `rgt-tui status` said STILL ANSWERS. An
        older teardown gets its attempt at once, at start (``_still_answers``)."""
        key = (host, torn_down_at)
        if self._reconnect is None or key in self._looked:
            return None
        if torn_down_at >= self._started:
            delay = self.look_again_s
        else:
            left = torn_down_at + GRACE_S - self.jobs.clock()
            if left <= 0:
                return None  # judged at start, past its grace: nothing to wait for
            delay = min(self.look_again_s, left)
        self._looked.add(key)
        run_host_worker(self.app, self._look_again(host, torn_down_at, delay), "look-again", host)
        return delay

    async def _look_again(self, host: str, torn_down_at: float, delay: float) -> None:
        await asyncio.sleep(delay)
        state = self.jobs.state(host)
        if state.torn_down_at != torn_down_at or not self._is_stopped(host):
            return  # a new box under the name, or watched again already (r)
        assert self._reconnect is not None
        self.retry(host, by_user=False)
        self._reconnect(host)

    def _settled(self, host: str) -> None:
        """The torn-down host's attempt is decided: nothing is pending for it any more."""
        del self.pending[host]
        self._stale.pop(host, None)
        self._asked.discard(host)
        self._by_itself.discard(host)

    def _still_answers(self, host: str, torn_down_at: float) -> bool:
        """The box recorded as torn down answers this attempt: on ``r``, or long enough
        after the record, it may still bill (GEN1). Say so, and watch it (True); right
        after the teardown it is still going away (False: it stops as torn down)."""
        now = self.jobs.clock()
        if host not in self._asked and (
            torn_down_at >= self._started or now - torn_down_at < GRACE_S
        ):
            return False
        self._settled(host)
        self.jobs.learned(host, still_answers_at=now)
        when = local_time(torn_down_at)
        if self._cluster(host):
            self.app.notify(
                f"{host}: recorded as torn down {when}, and its login node answers: a "
                "cluster is never destroyed. It is watched again (queue, launch, append).",
                title=host,
                timeout=15,
            )
            return True
        self.app.notify(
            f"{host} was recorded as torn down {when}, but the same box STILL ANSWERS: it "
            "may still be billing (GEN1). Destroy it in the provider's console (or check "
            "that the teardown command destroys, not stops); it is watched again until it "
            "stops answering.",
            title=host,
            severity="error",
            timeout=30,
        )
        return True


def _gone(update: HostUpdate, now: float) -> bool:
    """The box stopped answering: no answer for ``GONE_AFTER_S`` and two connection
    attempts in a row failed (not a dropped stream that reconnects at once, nor a refused
    key, which is another box's). A short drop (sshd restarted, the provider's proxy) is
    not the box destroyed: it cleared the GEN1 alarm of a box that answered again 30 s
    later (hour s19b #1)."""
    conn = update.connection
    return (
        conn.status == "reconnecting"
        and conn.attempt >= 2
        and conn.key_error is None
        and now - conn.since >= GONE_AFTER_S
    )


def _fingerprint(presented: str | None) -> str | None:
    """The ``SHA256:...`` part of a refused key as ``HostKeyError.presented`` shows it
    (``ssh-ed25519 SHA256:...``); None when it names none."""
    if not presented:
        return None
    return next((w for w in presented.split() if w.startswith("SHA256:")), None)


def _box_id(update: HostUpdate | None) -> str | None:
    if update is None or update.connection.status != "connected" or update.snapshot is None:
        return None
    return update.snapshot.box_id if update.snapshot is not None else None
