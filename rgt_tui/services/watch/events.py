"""What ``rgt-tui watch`` hands its sinks (notifications, metrics, autostop).

``HostState``: one host as a pane shows it, after each sample or poll. ``WatchEvent``:
something worth telling a person once — a new alert, a reminder, a finished queue, a
silent box and its return, a rebooted box, a forgotten one, a stop, a pull. Its ``key`` is
stable across restarts and names one occurrence (``alert:box1:disk.inodes:/data:<opened
ts>``), so a sender that remembers keys never says the same thing twice.
"""

from __future__ import annotations

from dataclasses import dataclass

from rgt_tui.domain.health import Alert
from rgt_tui.domain.queue_state import QueueView
from rgt_tui.domain.snapshot import HostSnapshot

EVENT_KINDS = (
    "alert", "reminder", "queue_done", "silent", "back", "reboot", "forgotten", "stopped",
    "pull", "pull_failed", "preempted", "preempt_action", "preempt_action_by_other",
    "still_answers", "host_key", "stop_unknown", "removed", "left_out", "autostop_waits",
    "runs_twice",
)  # fmt: skip


@dataclass(frozen=True)
class WatchEvent:
    """One thing to tell a person about one host, once (``key``)."""

    kind: str  # one of EVENT_KINDS
    host: str
    key: str
    title: str
    body: str
    severity: str = "info"  # info | warning | critical


@dataclass(frozen=True)
class HostState:
    """One host after a sample or a queue poll: what its pane would show."""

    snapshot: HostSnapshot | None
    alerts: tuple[Alert, ...]
    connection: str  # connected | connecting | reconnecting | lost | unreached | stopped
    lost_since: float | None
    queue: QueueView | None
    cost_per_hour: float | None
    cost_so_far: float | None
    now: float
    # The host is ``interruptible`` (issue 40): its silence is told as a preemption
    # ("preempted", "moved"), not as a "silent" box whose run may still be alive.
    interruptible: bool = False
    # Not connected: why the last try failed, and its fix (the pane's words), when known:
    # a name that does not resolve or a refused host key waits for the user, not time.
    error: str | None = None
    fix: str | None = None
    # A refused host key (``HostKeyError``): its kind ("changed", "unknown", "revoked")
    # and the key the box showed; "" when the last try refused none.
    key_kind: str = ""
    key_presented: str = ""
    # A [[groups]] entry: its sample and alerts are rank 0's, which rank 0's box tells.
    group: bool = False
