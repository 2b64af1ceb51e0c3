"""What a UI-free controller needs from the program that hosts it.

Controllers (the job runner, the box watch) run their work as workers of their host and
tell the user through it; the Textual App has both methods with these signatures, so it
passes itself, and a test may pass anything that has them. Services stay free of Textual.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, Protocol


class ControllerHost(Protocol):
    """Runs a controller's background work and shows its notices."""

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

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: Any = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None: ...
