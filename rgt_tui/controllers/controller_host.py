"""What a UI-free controller needs from the program that hosts it.

Controllers (the job runner, the box watch, the queue poller) run their work as workers
of their host (``controllers.workers``) and tell the user through it; the Textual App
has both methods with these signatures, so it passes itself, and a test may pass
anything that has them. Controllers stay free of Textual.
"""

from __future__ import annotations

from typing import Any, Protocol

from rgt_tui.controllers.workers import WorkerRunner


class ControllerHost(WorkerRunner, Protocol):
    """Runs a controller's background work and shows its notices."""

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: Any = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Show a toast. The App's shows it as plain text, lists it under ``n`` and posts
        no copy of one still showing (``controllers.notices.Toasts``): callers need not."""
