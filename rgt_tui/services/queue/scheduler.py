"""The scheduler protocol: what a backend that runs a host's cells is, and what it can do.

A backend (the box runner, Slurm; docs/schedulers.md) is one object per host, chosen in
one place (``services.queue.backends.backend_for``). Every backend reads the queue
(``Scheduler``); each verb beyond that is a small capability a caller asks for with
``isinstance(backend, Killable)`` — never by testing which backend it is (k9s's
``Nuker``/``Scalable``). A backend that lacks a capability makes the UI hide or refuse
that key and the command line refuse that verb, naming the backend (``lacks``).

Nothing here imports a backend: the backends import their use-cases' types, and
``backends`` imports the backends.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from rgt_tui.domain.config import Fleet, HostConfig
    from rgt_tui.domain.queue_state import QueueView
    from rgt_tui.domain.teardown_gate import SlurmJobsSeen
    from rgt_tui.domain.vanished import Diagnosis
    from rgt_tui.services.queue.append import AppendResult
    from rgt_tui.services.queue.control import KillResult, RetryPlan, RetryResult, StopResult
    from rgt_tui.services.queue.launch import LaunchPlan, LaunchResult
    from rgt_tui.services.queue.slurm.control import CancelResult
    from rgt_tui.transport import Transport

__all__ = [
    "AllocationSampler", "Appendable", "JobGated", "Killable", "Launchable", "Retryable",
    "Scheduler", "Skippable", "Stoppable", "Supervised", "lacks",
]  # fmt: skip


@runtime_checkable
class Scheduler(Protocol):
    """Every backend: its name (said in messages), its host, and the queue's view."""

    name: str  # "box runner", "Slurm": "<verb> is not available on <name> hosts"
    host: HostConfig

    async def read_view(self, transport: Transport) -> QueueView:
        """Every cell's state from the box's records (and the scheduler's, where it has
        one). TransportError when unreachable; QueueError when the box refused."""
        ...

    async def diagnose(self, transport: Transport) -> tuple[QueueView, Diagnosis]:
        """The view and why the latest cell that ended without its end record ended."""
        ...


class AllocationSampler(Protocol):
    """What a backend with ``allocations`` samples: the GPUs of running cells inside their
    scheduler allocations, laid over the queue's view (``allocation_sampler``)."""

    async def annotate(self, host: HostConfig, transport: Transport, view: QueueView) -> QueueView:
        """``view`` with each running cell's GPUs as sampled inside its allocation."""
        ...


@runtime_checkable
class Launchable(Protocol):
    """Starts the host's queue: a plan first (shown as the confirmation), then the launch."""

    async def plan_launch(
        self, fleet: Fleet, transport: Transport, *, start_index: int = 0,
        detach: str = "auto", fresh: bool = False, acks: Iterable[str] = (),
        preflight: bool = True, retry_only: bool = False,
    ) -> LaunchPlan:  # fmt: skip
        """Everything the launch would do and every reason it must not (``plan.problems``)."""
        ...

    async def launch(self, plan: LaunchPlan, transport: Transport) -> LaunchResult:
        """Do ``plan``. QueueError when the plan has problems or went stale on the box."""
        ...


@runtime_checkable
class Appendable(Protocol):
    """Sends the lines appended to the host's queue file to a queue already launched."""

    async def append_cells(self, fleet: Fleet, transport: Transport) -> AppendResult: ...


@runtime_checkable
class Stoppable(Protocol):
    """Stops the queue after the cells that run now (none is killed)."""

    # True: a stop is asked of the scheduler even when no runner is alive on the box
    # (Slurm holds the pending tasks); False: a queue whose runner is gone has nothing to stop.
    stops_without_runner: bool

    async def stop(self, transport: Transport) -> StopResult:
        """QueueError (code ``not-running``) when nothing runs."""
        ...


@runtime_checkable
class Killable(Protocol):
    """Kills one running cell now; the queue goes on (``then="next"``) or stops."""

    kill_how: str  # what a kill really does, said in the dialog before it runs

    async def kill(
        self, transport: Transport, name: str | None = None, *, then: str = "next",
        grace_s: int = 10, check_timeout_s: float | None = None,
    ) -> KillResult:  # fmt: skip
        """QueueError (``not-running``, ``unknown``, ``ambiguous``) when refused."""
        ...


@runtime_checkable
class Retryable(Protocol):
    """Runs ended cells again under their names, their outputs set aside first."""

    async def plan_retry(
        self, fleet: Fleet, transport: Transport, names: Iterable[str], *,
        allow_done: bool = False, acks: Iterable[str] = (), launch_acks: bool = True,
        resume: bool = False,
    ) -> RetryPlan: ...  # fmt: skip

    async def retry(
        self, plan: RetryPlan, transport: Transport, *, fleet: Fleet | None = None
    ) -> RetryResult: ...


@runtime_checkable
class Skippable(Protocol):
    """Records that a cell does not run on this host (what ``queue move`` leaves behind)."""

    async def skip(self, transport: Transport, name: str, reason: str) -> None:
        """QueueError (code ``running``) when the cell runs now."""
        ...


@runtime_checkable
class JobGated(Protocol):
    """A scheduler whose jobs are the teardown gate's facts: nothing to destroy once they
    ended, and the jobs cancelled only after the host's name was typed."""

    async def jobs_seen(self, transport: Transport) -> SlurmJobsSeen:
        """The queue's jobs the scheduler still holds (the gate's ``jobs`` condition)."""
        ...

    async def cancel_jobs(self, transport: Transport, typed: str) -> CancelResult:
        """Cancel every job of the queue; PermissionError unless ``typed`` is the host's name."""
        ...


class Watch(Protocol):
    """A backend's watch kept between polls (``Supervised``)."""

    async def check(self, transport: Transport) -> QueueView:
        """Read the queue, act on what must not wait (stop a dead job's other ranks),
        and return the view."""
        ...


@runtime_checkable
class Supervised(Protocol):
    """A backend whose running cells the fleet runtime must watch between polls: a group
    of boxes, whose other ranks are stopped when one dies (services.queue.group)."""

    boxes: tuple[str, ...]  # the hosts whose connections the watch reads

    def watch(self) -> Watch:
        """A new watch (the runtime keeps one per host, for its memory between polls)."""
        ...


def lacks(backend: Scheduler, verb: str) -> str:
    """The refusal for a verb ``backend`` does not implement, naming the backend."""
    return f"{backend.host.name}: {verb} is not available on {backend.name} hosts"
