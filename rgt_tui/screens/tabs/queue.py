"""Queue tab: every cell's state from the box's records, as the queue poller reads them.

The tab reads nothing itself: the app's queue poller is the one reader per host (one kept
connection), and it polls every few seconds while this tab is on screen. The tab shows
the latest view it was handed.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.content import Content
from textual.widgets import Static

from rgt_tui.content.queue_text import queue_lines
from rgt_tui.content.ready_text import ready_lines
from rgt_tui.controllers.jobs import HostJobs
from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.queue_state import QueueView
from rgt_tui.screens.tabs.base import DetailTab, HostView


class QueueTab(DetailTab):
    """Cells pending / running / done / failed (exit code) / interrupted, and the resume index."""

    TAB_ID = "queue"
    TITLE = "Queue"

    def __init__(self) -> None:
        super().__init__()
        self.host: HostConfig | None = None
        self.view: QueueView | None = None

    def compose(self) -> ComposeResult:
        yield Static(
            Content.styled("reading the queue…", "$foreground-muted"), classes="queue-body"
        )
        # y (sync) and P (preflight): their progress and outcome, once one ran.
        ready = Static(classes="ready-body")
        ready.display = False
        yield ready

    def show_jobs(self, state: HostJobs) -> None:
        """The host's sync or preflight moved on: show its progress or outcome."""
        lines = ready_lines(state)
        for body in self.query(".ready-body").results(Static):
            body.display = bool(lines)
            body.update(Content("\n").join(lines))

    def show(self, view: HostView) -> None:
        self.host = view.host
        if self.view is None:  # the poller's last view, until its next read arrives
            self.view = view.queue
        body = self.query_one(".queue-body", Static)
        if not view.host.queue:
            body.update(
                Content.styled(
                    f"{view.host.name} has no queue: set `queue` and `run` in its [[hosts]] entry",
                    "$foreground-muted",
                )
            )
        elif self.view is not None:
            body.update(Content("\n").join(queue_lines(self.view)))

    def show_queue(self, view: QueueView) -> None:
        """Take a freshly polled view of this host's queue."""
        self.view = view
        # A view can arrive while the tab is mounted but its body is not yet (or no
        # longer) there; show() draws the kept view once the tab is up.
        for body in self.query(".queue-body").results(Static):
            body.update(Content("\n").join(queue_lines(view)))
