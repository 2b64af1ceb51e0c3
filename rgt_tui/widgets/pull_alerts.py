"""Cost and platform-clock alerts the TUI adds to a host's update (from ``domain.cost``).

Pure functions of an update, the host's profile and the clock: the danger clocks shown
once on a host's first connection (principle 10), and the profile's release clock for a
box that has been unreachable for days. The idle-while-billed alert comes from health.
"""

from __future__ import annotations

from dataclasses import replace

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.cost import forgotten_box_alert, profile_clock_alerts
from rgt_tui.domain.health import SEVERITY_ORDER, Alert
from rgt_tui.domain.queue_state import FINISHED, QueueView
from rgt_tui.profiles import profile as load_profile
from rgt_tui.services.telemetry import HostUpdate


def danger_clock_note(host: HostConfig) -> str | None:
    """The profile's danger clocks, for a notification; None when it has none."""
    p = load_profile(host.profile)
    if not p.danger_clocks:
        return None
    return "\n".join(f"• {clock}" for clock in p.danger_clocks)


def queue_done_at(view: QueueView, now: float) -> float | None:
    """When the host's queue finished, on this machine's clock; None while it is not done."""
    ended = [c.ended_at for c in view.cells if c.ended_at is not None]
    if view.state != FINISHED or not ended:
        return None
    return now - max(0.0, float(view.now - max(ended)))  # box clock -> ours, by the age


def with_cost_alerts(
    update: HostUpdate, host: HostConfig, now: float, queue_done_at: float | None = None
) -> HostUpdate:
    """``update`` with the forgotten-box and platform-clock alerts added (most severe first)."""
    conn = update.connection
    unreachable_since = conn.since if conn.status in ("reconnecting", "lost") else None
    extra: list[Alert] = list(
        profile_clock_alerts(load_profile(host.profile), unreachable_since, now)
    )
    forgotten = forgotten_box_alert(queue_done_at, now, host.cost_per_hour)
    if forgotten is not None:
        extra.append(forgotten)
    known = {a.id for a in update.alerts}
    extra = [a for a in extra if a.id not in known]
    if not extra:
        return update
    alerts = sorted((*update.alerts, *extra), key=lambda a: SEVERITY_ORDER.get(a.severity, 3))
    return replace(update, alerts=tuple(alerts))
