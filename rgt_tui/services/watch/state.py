"""A ``HostState`` from what a monitor and the queue poller last said: pure, one place,
so ``watch`` and the TUI's notifications see a host alike."""

from __future__ import annotations

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.cost import billing_start, cost_so_far
from rgt_tui.domain.queue_state import QueueView
from rgt_tui.services.runtime.monitors import ENDED
from rgt_tui.services.runtime.stopped import STOPPED
from rgt_tui.services.telemetry import HostUpdate
from rgt_tui.services.watch.events import HostState
from rgt_tui.services.watch.tracker import NOT_CONNECTED


def host_state(
    host: HostConfig, update: HostUpdate | None, queue: QueueView | None, now: float
) -> HostState:
    """``host`` as its pane would show it at ``now``: the update's snapshot, alerts and
    connection, the latest queue view, and what it costs (from ``started_at``, else from
    when rgt-tui first saw the box, as the pane counts). A box watch's autostop stopped
    (``services.runtime.stopped``) bills no compute since: its rate reads 0 and its cost
    stays what it was at the stop (the disk a stopped box keeps is not in the figure); so
    does a box torn down that no longer answers, from when it stopped answering."""
    started = host.started_at.timestamp() if host.started_at is not None else None
    first_seen = update.first_seen if update is not None else None
    if update is None:
        return HostState(
            None, (), "connecting", None, queue, host.cost_per_hour,
            cost_so_far(host.cost_per_hour, billing_start(started, first_seen), now), now,
            host.watch.interruptible, group=host.group is not None,
        )  # fmt: skip
    conn = update.connection
    refused = conn.key_error if conn.status in NOT_CONNECTED else None
    rate, until = host.cost_per_hour, now
    if conn.status in (STOPPED, ENDED):
        # A torn-down box gone (``ENDED``) bills no more either: its series kept the rate,
        # so sum(rgt_cost_per_hour) counted it after its teardown (h491 #6).
        rate, until = (None if rate is None else 0.0), min(now, conn.since)
    return HostState(
        snapshot=update.snapshot,
        alerts=update.alerts,
        connection=conn.status,
        lost_since=conn.since if conn.status in NOT_CONNECTED else None,
        queue=queue,
        cost_per_hour=rate,
        cost_so_far=cost_so_far(
            host.cost_per_hour, billing_start(started, first_seen), until, unbilled=update.unbilled
        ),
        now=now,
        interruptible=host.watch.interruptible,
        error=conn.error if conn.status in NOT_CONNECTED else None,
        fix=conn.fix if conn.status in NOT_CONNECTED else None,
        group=host.group is not None,
        key_kind=refused.kind if refused is not None else "",
        key_presented=refused.presented if refused is not None else "",
    )
