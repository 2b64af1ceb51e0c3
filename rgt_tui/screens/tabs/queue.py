"""Queue tab: every cell's state from the box's records, refreshed while the tab shows.

The view is read from the box (never from memory) in a worker every ``REFRESH_S``
seconds, only while this tab is on screen; a new read is armed only after the last one
finished, so reads never overlap.
"""

from __future__ import annotations

import time

from textual import on
from textual.app import ComposeResult
from textual.content import Content
from textual.message import Message
from textual.widgets import Static

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.queue_state import QueueView
from rgt_tui.screens.tabs.base import DetailTab, HostView
from rgt_tui.widgets.host_pane import screen_in_view
from rgt_tui.widgets.queue_text import queue_lines

REFRESH_S = 3.0


class QueueTab(DetailTab):
    """Cells pending / running / done / failed (exit code) / interrupted, and the resume index."""

    TAB_ID = "queue"
    TITLE = "Queue"

    class Loaded(Message):
        """A queue view (or the reason there is none) came back from the box."""

        def __init__(self, view: QueueView | None, error: str = "") -> None:
            super().__init__()
            self.view = view
            self.error = error

    def __init__(self) -> None:
        super().__init__()
        self.host: HostConfig | None = None
        self.view: QueueView | None = None
        self._loading = False
        self._last = 0.0

    def compose(self) -> ComposeResult:
        yield Static(
            Content.styled("reading the queue…", "$foreground-muted"), classes="queue-body"
        )

    def on_mount(self) -> None:
        self.set_interval(1.0, self._maybe_refresh)

    def is_visible_tab(self) -> bool:
        """Whether this tab is the active one on a screen in view."""
        screen = self.screen
        return screen_in_view(screen) and getattr(screen, "active_tab", None) == self.TAB_ID

    def show(self, view: HostView) -> None:
        first = self.host is None
        self.host = view.host
        if first or time.monotonic() - self._last > REFRESH_S:
            self.refresh_view()

    def _maybe_refresh(self) -> None:
        stale = time.monotonic() - self._last >= REFRESH_S
        if self.host is not None and stale and self.is_visible_tab():
            self.refresh_view()

    def refresh_view(self) -> None:
        """Read the box's queue records in a worker."""
        host = self.host
        if host is None or self._loading:
            return
        if not host.queue:
            self.query_one(".queue-body", Static).update(
                Content.styled(
                    f"{host.name} has no queue: set `queue` and `run` in its [[host]] table",
                    "$foreground-muted",
                )
            )
            return
        self._loading = True
        self.run_worker(
            self._read(host),
            name=f"queue-tab:{host.name}",
            group=f"queue-tab:{host.name}",
            exclusive=True,
            exit_on_error=False,
        )

    async def _read(self, host: HostConfig) -> None:
        from rgt_tui.screens.queue_actions import error_text, with_transport
        from rgt_tui.services.queue_view import read_queue_view

        try:
            view = await with_transport(host, lambda t: read_queue_view(host, t))
        except Exception as exc:  # unreachable: say so, keep the last view
            self.post_message(self.Loaded(None, error_text(exc)))
        else:
            self.post_message(self.Loaded(view))

    @on(Loaded)
    def _loaded(self, message: Loaded) -> None:
        self._loading = False
        self._last = time.monotonic()
        body = self.query_one(".queue-body", Static)
        if message.view is None:
            lines = [Content.styled(f"could not read the queue: {message.error}", "$error")]
            if self.view is not None:
                lines += [Content.styled("last known:", "$foreground-muted")]
                lines += queue_lines(self.view)
            body.update(Content("\n").join(lines))
            return
        self.view = message.view
        body.update(Content("\n").join(queue_lines(message.view)))
