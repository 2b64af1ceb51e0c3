"""What the launch (``L``) and retry (``R``) dialogs need from the box: the plan (a
retry's with the checkpoints it would set aside, ``services.disk.out_checkpoints``), made
again after each acknowledgement or start index, then the launch or the retry itself.

The dialogs show the plan and ask (``screens/launch_confirm.py``,
``screens/retry_confirm.py``); this asks the host's backend (``services.queue``) over the
host's shared connection and returns what to show: the plan or why there is none, the
outcome's notice or why it failed. Box text is left as it came: the dialogs make it
printable where they put it. No Textual here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rgt_tui.controllers.queue_actions import error_text
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.errors import NoAnswer, TransportError
from rgt_tui.domain.queue_records import RESUMED
from rgt_tui.domain.units import plural
from rgt_tui.services.connections import FleetConnections

if TYPE_CHECKING:
    from rgt_tui.domain.queue_state import CellView
    from rgt_tui.services.connect import Transport
    from rgt_tui.services.queue.control import RetryPlan
    from rgt_tui.services.queue.launch import LaunchPlan, LaunchResult


def unreachable_text(host: HostConfig, exc: TransportError) -> str:
    """Why a plan could not be made, and, on an interruptible box, where to look next: a
    spot box that stopped answering is most often preempted, and L said only "connection
    refused" where ``d`` names the preemption and the move (hour s17a #15)."""
    text = error_text(exc)
    if host.watch.interruptible:
        text += (
            "\nan interruptible box that does not answer may be preempted: d says what "
            "happened to its run, and m moves an interrupted cell to another box"
        )
    return text


@dataclass(frozen=True)
class Outcome:
    """A launch or a retry: ``message`` (the notice) when it ran, else ``error``;
    ``result``: the launch's result."""

    message: str = ""
    error: str = ""
    result: LaunchResult | None = None
    code: str = ""  # the box's refusal code when it refused (code-changed, changed, …)


class LaunchControl:
    """Plans, launches and retries the queue of one host through its backend."""

    def __init__(
        self,
        fleet: Fleet,
        host: HostConfig,
        connections: FleetConnections,
        current: Callable[[], Fleet] | None = None,
    ) -> None:
        self.fleet = fleet
        self.host = host
        self.connections = connections
        # The fleet as applied now (the TUI's): each plan reads the host's entry from it,
        # so a fleet-file edit saved while a dialog is open is planned with (s37 fleet
        # hour #3: a re-plan kept the workdir the dialog opened with, and launched there).
        self.current = current

    def stale(self) -> bool:
        """Whether the host's entry applied now differs from the one the last plan was
        made with (a fleet-file edit saved since): launching that plan would run with
        the old settings (review s37)."""
        if self.current is None:
            return False
        return self.current().find(self.host.name) != self.host

    def _follow(self) -> str | None:
        """Take the host's entry from the fleet applied now; why not (it is gone)."""
        if self.current is None:
            return None
        fleet = self.current()
        host = fleet.find(self.host.name)
        if host is None:
            return (
                f"{self.host.name} is no longer in the fleet file (removed or renamed since "
                "this dialog opened): close it"
            )
        self.fleet, self.host = fleet, host
        return None

    async def plan_launch(
        self, start: int | None, acks: tuple[str, ...], *, fresh: bool = False
    ) -> tuple[LaunchPlan | None, str]:
        """The launch plan from ``start`` (None: ``services.queue.launch.default_start``)
        with the preflight checks ``acks`` acknowledged (``fresh``: the box's queue moved
        aside first, as ``launch --fresh``); or why none."""
        from rgt_tui.services.queue.backends import backend_for
        from rgt_tui.services.queue.launch import default_start

        gone = self._follow()
        if gone is not None:
            return None, gone
        backend, fleet = backend_for(self.host), self.fleet

        async def planned(transport: Transport) -> LaunchPlan:
            first = start
            if first is None:
                # The default start is the records' alone: found without preflight (a
                # user's hour waited 6.4 s for L, two preflights), over the same connection.
                first = default_start(
                    await backend.plan_launch(
                        fleet, transport, start_index=0, preflight=False, fresh=fresh
                    )
                )
            return await backend.plan_launch(
                fleet, transport, start_index=first, acks=acks, fresh=fresh
            )

        try:
            return await self.connections.use(self.host.name, planned), ""
        except TransportError as exc:  # the box did not answer the connect
            return None, await self._unreachable(exc)
        except Exception as exc:  # the plan never raises for a dead box; anything else is said
            return None, error_text(exc)

    async def _unreachable(self, exc: TransportError) -> str:
        """Why no plan: a host recorded as torn down is said to be (its plan refuses it
        before asking the box, but the connection is made first, and "is sshd running on
        that port?" sent the user to the port: h461 #1); otherwise ``unreachable_text``."""
        from rgt_tui.services.journal import local_minute, recorded_torn_down_at

        torn = await asyncio.to_thread(recorded_torn_down_at, self.fleet, self.host.name)
        if torn is None:
            return unreachable_text(self.host, exc)
        # Only nothing answering is "as a destroyed box should"; a refused host key or
        # login is something answering at its address (review s46 #10), said as it is.
        said = (
            "it does not answer, as a destroyed box should"
            if isinstance(exc, NoAnswer)
            else f"the connection says: {exc.message}"
        )
        return (
            f"{self.host.name} is recorded as torn down ({local_minute(torn)}): {said}, and "
            "nothing is launched or retried there; to use that box again, rename its "
            "[[hosts]] entry in place (rgt-tui takes it as a new host)"
        )

    async def launch(self, plan: LaunchPlan) -> Outcome:
        """Launch ``plan``, recording the checks it acknowledged with it."""
        from rgt_tui.services.queue.backends import backend_for
        from rgt_tui.services.queue.launch_acks import launch_recorded

        backend, fleet = backend_for(self.host), self.fleet
        try:
            result, unrecorded = await self.connections.use(
                self.host.name, lambda t: launch_recorded(fleet, backend, plan, t)
            )
        except Exception as exc:  # QueueError / TransportError: said, the dialog stays
            return Outcome(error=error_text(exc), code=getattr(exc, "code", ""))
        return Outcome(message=launched_words(result, unrecorded), result=result)

    async def plan_retry(
        self, cell: CellView, acks: tuple[str, ...], launch_acks: bool
    ) -> tuple[RetryPlan | None, str]:
        """The retry plan of ``cell`` (a done one too) with ``acks`` acknowledged and,
        when ``launch_acks``, the launch's own acknowledgements; or why none."""
        from rgt_tui.domain.queue_state import DONE
        from rgt_tui.services.disk.out_checkpoints import with_checkpoints
        from rgt_tui.services.queue.backends import backend_for

        gone = self._follow()
        if gone is not None:
            return None, gone
        backend, fleet = backend_for(self.host), self.fleet

        async def planned(transport: Transport) -> RetryPlan:
            plan = await backend.plan_retry(
                fleet, transport, [cell.name], allow_done=cell.status == DONE, acks=acks,
                launch_acks=launch_acks,
            )  # fmt: skip
            return await with_checkpoints(plan, fleet, self.host, transport)

        try:
            return await self.connections.use(self.host.name, planned), ""
        except TransportError as exc:
            return None, await self._unreachable(exc)
        except Exception as exc:  # refused: said, never raised
            return None, error_text(exc)

    async def retry(self, plan: RetryPlan, cell: str) -> Outcome:
        """Run ``plan`` (the retry of ``cell``)."""
        from rgt_tui.services.queue.backends import backend_for

        backend, fleet = backend_for(self.host), self.fleet
        try:
            retried = await self.connections.use(
                self.host.name, lambda t: backend.retry(plan, t, fleet=fleet)
            )
        except Exception as exc:  # refused on the box, or unreachable: said, the dialog stays
            return Outcome(error=error_text(exc))
        aside = ", ".join(f"{n} → {a}" for n, a in retried.aside if a not in ("-", RESUMED))
        again = "resume, its {out} kept" if plan.resume else "run again"
        others = (
            f", with {plan.others_named()}, also set to run again" if plan.others_waiting else ""
        )
        if retried.running:
            # Not "next": a cell set to run again earlier may go first (h481 #4).
            message = (
                f"{cell} will {again} (the running queue runs it before its next cell{others})"
            )
        elif retried.job_id:
            message = f"{cell} will {again} (submitted as Slurm array job {retried.job_id})"
        elif retried.launched is not None:
            message = f"{cell} will {again} (launched for it{others})"
        else:  # the queue ended between plan and confirm: "launched for it" was untrue
            message = (
                f"{cell} is set to {again}, but the queue ended before the retry "
                "reached it: nothing runs it yet — retry it once more to launch the queue "
                "for it alone"
            )
        if aside:
            message += f"; outputs set aside: {aside}"
        if retried.unrecorded:
            message += f"\n{retried.unrecorded}"
        return Outcome(message=message)


def launched_words(result: LaunchResult, unrecorded: str = "") -> str:
    """The toast of a launch: what started, from where, and how it is reached; on a
    Slurm host the array's job id, never a "pid" (s35 Slurm hour #10: "pid 9")."""
    how = (
        f"array job {result.pid}, {result.session}"
        if result.detach == "slurm"
        else f"{result.detach}, session {result.session}, pid {result.pid}"
    )
    return (
        f"{'submitted' if result.detach == 'slurm' else 'launched'} "
        f"{plural(result.cells, 'cell')} from index {result.start_index} ({how})"
        + (f"\nprevious queue archived to {result.archived}" if result.archived else "")
        + (f"\n{unrecorded}" if unrecorded else "")
    )
