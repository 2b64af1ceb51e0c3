"""Cost per host and the forgotten-box clocks: pure functions of times and rates.

``host_alerts`` is the one place a host's alerts are put together — the health rules
and the cost rules (a forgotten box, the platform's release clock) — so the TUI's
telemetry and `rgt-tui status` show the same alerts for the same facts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from rgt_tui.domain.health import (
    IDLE_ALERT,
    SEVERITY_ORDER,
    UNKNOWN_RATE_FIX,
    Alert,
    HealthContext,
    HealthState,
    clock_jumped,
    evaluate,
)
from rgt_tui.domain.profiles import Profile
from rgt_tui.domain.queue_state import FINISHED, QueueView
from rgt_tui.domain.snapshot import HostSnapshot
from rgt_tui.domain.tracker_rule import tracker_alerts

IDLE_UTIL_PCT = 5.0


def billing_start(started_at: float | None, first_seen: float | None) -> float | None:
    """When the meter started: the fleet file's ``started_at``, else when rgt-tui first
    saw the box answer (kept in the fleet's journal); None while neither is known.

    Never the box's uptime: a rented box is often booted (or a container's host up)
    long before the user rented it, so a box added a minute ago would show hours spent.
    """
    return started_at if started_at is not None else first_seen


Span = tuple[float, float]  # (from, to): a time the box billed no compute


def cost_so_far(
    rate_per_hour: float | None,
    start: float | None,
    now: float,
    end: float | None = None,
    *,
    unbilled: Iterable[Span] = (),
) -> float | None:
    """Money spent from ``start`` to ``end`` (torn down) or ``now``, less the ``unbilled``
    spans within (a box watch's autostop stopped, until it answered again); None when
    unknown."""
    if rate_per_hour is None or start is None:
        return None
    stop = end if end is not None else now
    billed = max(0.0, stop - start) - sum(
        max(0.0, min(b, stop) - max(a, start)) for a, b in unbilled
    )
    return max(0.0, billed) / 3600 * rate_per_hour


@dataclass(frozen=True)
class IdleMeter:
    """Paid minutes with the GPUs idle (all under 5 % util) and no queue cell running."""

    idle_s: float = 0.0
    last_t: float | None = None
    last_idle: bool = False

    def observe(self, t: float, gpu_utils: tuple[float, ...], cell_running: bool) -> IdleMeter:
        """Add the time since the previous sample if the box was idle across it."""
        idle = bool(gpu_utils) and all(u < IDLE_UTIL_PCT for u in gpu_utils) and not cell_running
        # Not across a jump of the box's clock: not the box's idle time. Nor back in time.
        gap = t - self.last_t if self.last_t is not None else 0.0
        add = (
            gap if self.last_idle and idle and gap > 0 and not clock_jumped(self.last_t, t) else 0.0
        )
        return replace(self, idle_s=self.idle_s + add, last_t=t, last_idle=idle)

    @property
    def idle_minutes(self) -> float:
        return self.idle_s / 60

    def observe_sample(self, snap: HostSnapshot, cell_running: bool) -> IdleMeter:
        """``observe`` with a sample's time and GPUs (``idle_utils``)."""
        return self.observe(snap.t, idle_utils(snap), cell_running)


def idle_utils(snap: HostSnapshot) -> tuple[float, ...]:
    """The GPUs' util % as the idle meter reads them: a GPU that cannot say its util
    counts as busy (100 %), so time is never called idle on a reading that is missing."""
    return tuple(g.util_pct if g.util_pct is not None else 100.0 for g in snap.gpus)


FORGOTTEN_ALERT = "cost.forgotten"


def forgotten_box_alert(
    queue_done_at: float | None,
    now: float,
    rate: float | None,
    grace_minutes: float = 30.0,
    *,
    stopped: bool = False,
) -> Alert | None:
    """GEN1: the queue finished a while ago and the box still bills. A box of no known
    rate (no ``cost_per_hour``) is told too: unknown is not free (h513 #1: deleting the
    line silenced a critical alert); ``cost_per_hour = 0`` says it costs nothing.
    ``stopped``: the queue stopped before its last cell (the user's stop, or a group's),
    cells left to run (h513 #8: "queue
    finished … tear it down" stood beside the stop's own "L relaunches")."""
    if queue_done_at is None or rate == 0:
        return None
    since = (now - queue_done_at) / 60
    if since < grace_minutes:
        return None
    if stopped:
        ended, way = "stopped", "relaunch what is left (L), or pull, verify and tear it down"
    else:
        ended, way = "finished", "pull, verify and tear it down"
    bills = (
        f"still bills ${rate:.2f}/h (${since / 60 * rate:.2f} since it {ended})"
        if rate is not None
        else f"still answers, at a rate not set ({UNKNOWN_RATE_FIX})"
    )
    return Alert(
        FORGOTTEN_ALERT,
        "critical",
        f"queue {ended} {since:.0f} min ago and the box {bills}: {way}",
        "GEN1",
    )


def profile_clock_alerts(
    profile: Profile, unreachable_since: float | None, now: float
) -> tuple[Alert, ...]:
    """Platform clocks: a powered-off box that the platform will release (and wipe)."""
    days = profile.release_after_off_days
    if days is None or unreachable_since is None:
        return ()
    off_days = (now - unreachable_since) / 86400
    if off_days < 1:
        return ()
    left = days - off_days
    when = (
        f"released in {left:.0f} days"
        if left > 0
        else "past its release date: it may already be gone"
    )
    return (
        Alert(
            "profile.release_clock",
            "critical" if left <= 3 else "warning",
            f"{profile.title}: unreachable (powered off?) for {off_days:.0f} days — {when}, data disk deleted",
            "P4",
        ),
    )


def queue_done_at(view: QueueView, now: float) -> float | None:
    """When the host's queue finished, on this machine's clock; None while it is not done."""
    ended = [c.ended_at for c in view.cells if c.ended_at is not None]
    if view.state != FINISHED or not ended:
        return None
    return now - max(0.0, float(view.now - max(ended)))  # box clock -> ours, by the age


def sample_queue_done_at(snap: HostSnapshot | None, received_at: float) -> float | None:
    """When the queue finished, on this machine's clock, from a sample that arrived at
    ``received_at``: the box's clock is translated by the record's age, so a box whose
    clock is off still counts right."""
    if snap is None or snap.queue_done_at is None:
        return None
    return received_at - max(0.0, snap.t - snap.queue_done_at)


@dataclass(frozen=True)
class CostContext:
    """What the cost rules need beyond the sample: the platform, the rate, the clocks."""

    profile: Profile
    rate: float | None
    now: float
    # While the box does not answer: since when (the last time it was seen, across app
    # restarts when that was recorded); None while it answers.
    unreachable_since: float | None = None
    received_at: float | None = None  # when the sample arrived (None: just now)
    forgotten_minutes: float = 30.0  # Thresholds.forgotten_minutes


def cost_alerts(snap: HostSnapshot | None, ctx: CostContext) -> tuple[Alert, ...]:
    """The forgotten box (GEN1) and the platform's release clock (P4) for one host."""
    alerts = list(profile_clock_alerts(ctx.profile, ctx.unreachable_since, ctx.now))
    received = ctx.received_at if ctx.received_at is not None else ctx.now
    done_at = sample_queue_done_at(snap, received)
    stopped = snap is not None and snap.queue_stopped
    forgotten = forgotten_box_alert(
        done_at, ctx.now, ctx.rate, ctx.forgotten_minutes, stopped=stopped
    )
    if forgotten is not None:
        alerts.append(forgotten)
    return tuple(alerts)


def merge_alerts(*groups: Iterable[Alert]) -> tuple[Alert, ...]:
    """One list, each (id, subject) once, most severe first (stable within a severity)."""
    seen: set[tuple[str, str]] = set()
    merged: list[Alert] = []
    for group in groups:
        for alert in group:
            if alert.key not in seen:
                seen.add(alert.key)
                merged.append(alert)
    merged.sort(key=lambda a: SEVERITY_ORDER.get(a.severity, len(SEVERITY_ORDER)))
    return tuple(merged)


def host_alerts(
    snap: HostSnapshot | None, state: HealthState, health: HealthContext, cost: CostContext
) -> tuple[Alert, ...]:
    """Every active alert of a host: the health rules' and the cost rules', merged. A
    forgotten box (GEN1) says all its idle alert would: the idle one goes (h513 #11: each
    reminder came as two notifications for one box)."""
    merged = merge_alerts(
        evaluate(snap, state, health), tracker_alerts(snap, health), cost_alerts(snap, cost)
    )
    if any(a.id == FORGOTTEN_ALERT for a in merged):
        return tuple(a for a in merged if a.id != IDLE_ALERT)
    return merged
