"""Cost per host and the forgotten-box clocks: pure functions of times and rates."""

from __future__ import annotations

from dataclasses import dataclass, replace

from rgt_tui.domain.health import Alert
from rgt_tui.domain.profiles import Profile

IDLE_UTIL_PCT = 5.0


def billing_start(started_at: float | None, now: float, uptime_s: float | None) -> float | None:
    """When the meter started: the fleet file's started_at, else the box's boot time."""
    if started_at is not None:
        return started_at
    if uptime_s is not None:
        return now - uptime_s
    return None


def cost_so_far(
    rate_per_hour: float | None, start: float | None, now: float, end: float | None = None
) -> float | None:
    """Money spent from ``start`` to ``end`` (torn down) or ``now``; None when unknown."""
    if rate_per_hour is None or start is None:
        return None
    return max(0.0, (end if end is not None else now) - start) / 3600 * rate_per_hour


@dataclass(frozen=True)
class IdleMeter:
    """Paid minutes with the GPUs idle (all under 5 % util) and no queue cell running."""

    idle_s: float = 0.0
    last_t: float | None = None
    last_idle: bool = False

    def observe(self, t: float, gpu_utils: tuple[float, ...], cell_running: bool) -> IdleMeter:
        """Add the time since the previous sample if the box was idle across it."""
        idle = bool(gpu_utils) and all(u < IDLE_UTIL_PCT for u in gpu_utils) and not cell_running
        add = (
            t - self.last_t
            if self.last_t is not None and self.last_idle and idle and t > self.last_t
            else 0.0
        )
        return replace(self, idle_s=self.idle_s + add, last_t=t, last_idle=idle)

    @property
    def idle_minutes(self) -> float:
        return self.idle_s / 60


def forgotten_box_alert(
    queue_done_at: float | None, now: float, rate: float | None, grace_minutes: float = 30.0
) -> Alert | None:
    """GEN1: the queue finished a while ago and the box still bills."""
    if queue_done_at is None or not rate:
        return None
    since = (now - queue_done_at) / 60
    if since < grace_minutes:
        return None
    return Alert(
        "cost.forgotten",
        "critical",
        f"queue finished {since:.0f} min ago and the box still bills ${rate:.2f}/h "
        f"(${since / 60 * rate:.2f} so far): pull, verify and tear it down",
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
