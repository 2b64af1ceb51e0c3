"""The tracker rule (U35): a running cell whose log never printed its tracker's run line.

A run that cannot reach its tracker (no API key, a logger wrapper that turned "offline"
into "disabled") trains on, and the curves are simply not there when it ends. The agent
reports whether the running cell's log printed a line matching the host's
``tracker_patterns`` (``HostSnapshot.tracker_seen``); this rule raises the alert once the
cell has run ``Thresholds.tracker_minutes`` without one. Pure: the clock is the sample's.
"""

from __future__ import annotations

from rgt_tui.domain.health import Alert, HealthContext
from rgt_tui.domain.snapshot import HostSnapshot
from rgt_tui.domain.text import printable

# Where to look, per tracker, when its run line is missing.
_LOOK_FOR = {
    "wandb": "look for 'wandb: … Disabled' or 'No API key' in its log",
    "mlflow": "check MLFLOW_TRACKING_URI and look for mlflow errors in its log",
    "tensorboard": "check the run writes its event files (SummaryWriter's log_dir)",
}


def tracker_alerts(snap: HostSnapshot | None, ctx: HealthContext) -> list[Alert]:
    """The ``tracker`` alert for the running cell, or none.

    Fires only when the host checks a tracker, a cell is running, the agent read its log
    to the end without a run line (``tracker_seen is False``: None is "not known yet")
    and the cell's attempt has run ``tracker_minutes`` by the box's clock.
    """
    if not ctx.tracker or snap is None or snap.cell is None:
        return []
    if snap.tracker_seen is not False or snap.cell_started is None:
        return []
    ran = snap.t - snap.cell_started
    if ran < ctx.thresholds.tracker_minutes * 60:
        return []
    # The name comes from the box's file names: shown escaped, on one line (hostile box).
    cell = printable(snap.cell, 80)
    look = _LOOK_FOR.get(ctx.tracker, "look for the tracker's errors in its log")
    return [
        Alert(
            "tracker",
            "warning",
            f"cell {cell} has run {ran / 60:.0f} min and its log never printed {ctx.tracker}'s "
            f"run line: its curves are not being recorded — check the API key (credentials "
            f"in hosts.toml), {look}",
            "U35",
            cell,
        )
    ]
