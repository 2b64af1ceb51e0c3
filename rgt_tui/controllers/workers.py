"""The one way the TUI runs background work (STYLE.md's worker convention).

Every worker of the TUI — a host's telemetry, a job, a poll, a dialog's check — is
started here, with the same options: a failure is reported by the job itself rather
than taking the app down (``exit_on_error=False``), and a newer worker of the same group
cancels the older (``exclusive``). The runner is whatever has Textual's ``run_worker``
(the App, a screen, a widget): this module imports no Textual.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, Protocol


class WorkerRunner(Protocol):
    """What runs a worker: the App, a screen or a widget (Textual's ``run_worker``)."""

    def run_worker(
        self,
        work: Coroutine[Any, Any, Any],
        name: str | None = "",
        group: str = "default",
        description: str = "",
        exit_on_error: bool = True,
        start: bool = True,
        exclusive: bool = False,
        thread: bool = False,
    ) -> Any: ...


def run_work(
    runner: WorkerRunner,
    work: Coroutine[Any, Any, Any],
    name: str,
    *,
    group: str | None = None,
    description: str = "",
    exclusive: bool = True,
) -> Any:
    """Run ``work`` as worker ``name`` in ``group`` (default: its name); a newer worker
    of the group cancels this one unless ``exclusive`` is False. Returns the worker."""
    return runner.run_worker(
        work,
        name=name,
        group=group or name,
        description=description,
        exclusive=exclusive,
        exit_on_error=False,
    )


def run_host_worker(
    runner: WorkerRunner, work: Coroutine[Any, Any, Any], kind: str, host: str
) -> Any:
    """Run ``work`` as the only ``kind`` job for ``host``: a newer one cancels the older."""
    return run_work(runner, work, f"{kind}:{host}")
