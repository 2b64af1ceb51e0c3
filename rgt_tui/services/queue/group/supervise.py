"""Stopping a group's ranks together (MN3): one rank died, so the others are stopped now,
not after NCCL's timeout.

No box reaches another over SSH, so nothing on a box can watch its peers: the watch is
the product's, in the fleet runtime's queue poll of the group (the TUI and ``watch`` both
run it). Each poll reads every rank (``GroupSupervisor.check``); when one rank's attempt
ended badly while others still run, or a rank's box has answered nothing for
``LOST_AFTER_S``, the others' cells are killed and their queues stopped through the
backend's own kill verb (which records "user": ``group_run.own_stop`` reads it as the
group's own stop). With rgt-tui closed the job still fails fast on its own: the
ranks export ``TORCH_NCCL_ASYNC_ERROR_HANDLING=1`` and a short ``RGT_NCCL_TIMEOUT_S``,
and torchrun's c10d rendezvous ends a worker group whose peer is gone (docs/groups.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.group_run import (
    RankView,
    StopOrder,
    group_view,
    stop_order,
    with_group_stop,
)
from rgt_tui.domain.queue_state import QueueView
from rgt_tui.services.box_ctl import QueueError
from rgt_tui.transport import Transport

STOP_GRACE_S = 5  # SIGTERM, then SIGKILL: a rank in a hung collective ignores the first


class Ranks(Protocol):
    """What the watch needs of the group's backend (``backend.GroupBackend``)."""

    host: HostConfig

    async def read_ranks(self, transport: Transport) -> tuple[RankView, ...]: ...

    async def kill_ranks(
        self, transport: Transport, name: str | None, only: Iterable[int] | None, *,
        then: str = "stop", grace_s: int = ..., check_timeout_s: float | None = None,
    ) -> object: ...  # fmt: skip


@dataclass
class GroupSupervisor:
    """One group's watch, kept between polls (when each quiet rank was first missed)."""

    backend: Ranks
    clock: Callable[[], float] = time.monotonic
    quiet_since: dict[int, float] = field(default_factory=dict)
    # The orders given, latest last (the runtime reports them; tests read them).
    orders: list[StopOrder] = field(default_factory=list)
    # Each rank's own view at the last check (the group's pane and Queue tab show them).
    ranks: tuple[RankView, ...] = ()

    async def check(self, transport: Transport) -> QueueView:
        """Read every rank, stop the others when one died, and return the group's view
        (read again after a stop, so it shows the ranks stopped)."""
        backend, name = self.backend, self.backend.host.name
        ranks = await backend.read_ranks(transport)
        order = self._order(ranks)
        if order is not None:
            self.orders.append(order)
            try:
                await backend.kill_ranks(
                    transport, None, order.ranks, then="stop", grace_s=STOP_GRACE_S
                )
            except QueueError:
                pass  # a rank that ended meanwhile: the next poll looks again
            ranks = await backend.read_ranks(transport)
        # Each rank as the pane and the Queue tab show it: a rank this watch stopped
        # reads as the group's stop (its kill records "group"; older ones "user").
        self.ranks = with_group_stop(ranks)
        try:
            return group_view(name, ranks)
        except LookupError as exc:
            raise QueueError(name, str(exc)) from None

    def _order(self, ranks: tuple[RankView, ...]) -> StopOrder | None:
        now = self.clock()
        for rank in ranks:
            if rank.view is None:
                self.quiet_since.setdefault(rank.rank, now)
            else:
                self.quiet_since.pop(rank.rank, None)
        return stop_order(ranks, self.quiet_since, now)
