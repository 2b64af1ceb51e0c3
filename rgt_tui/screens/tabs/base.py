"""The contract every host-detail tab follows, so adding a tab is one module.

A tab is a scrolling widget with a ``TAB_ID`` and a ``TITLE``; the detail screen calls
``show(view)`` with everything known about the host whenever the tab is on screen and
the host changes. Register a new tab by appending its class to ``DETAIL_TABS`` in
``rgt_tui/screens/tabs/__init__.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual.containers import VerticalScroll
from textual.widgets import Input

from rgt_tui.controllers.jobs import HostJobs
from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.health import Thresholds
from rgt_tui.domain.history import HostHistory
from rgt_tui.domain.preemption import Checkpoint, Preemption
from rgt_tui.domain.queue_state import QueueView
from rgt_tui.screens.tabs.logs_recall import LogRecall
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.telemetry import HostUpdate


@dataclass(frozen=True)
class HostView:
    """What a tab may draw: the host's config, its latest update and history, and now."""

    host: HostConfig
    update: HostUpdate | None
    history: HostHistory
    now: float
    thresholds: Thresholds
    # The host's shared connection, for tabs that read the box (Logs); None in tests
    # that draw without one.
    connections: FleetConnections | None = None
    queue: QueueView | None = None  # the poller's latest view of the host's queue
    # The running cell's newest pulled-and-verified checkpoint: (cell, it or None).
    verified: tuple[str, Checkpoint | None] | None = None
    # What the app's Logs tabs last drew of each log (the next one shows it at once);
    # None: a screen drawn without an app's memory (tests).
    log_recall: LogRecall | None = None
    # The runtime's named preemption of the host (issue 40; None: none named).
    preemption: Preemption | None = None


class TabbedScreen:
    """The screen the tabs sit on (``HostDetailScreen`` mixes this in): a tab asks it
    which tab is on screen without importing the screen, which imports every tab."""

    @property
    def active_tab(self) -> str:
        """The TAB_ID of the tab on screen ("" while none is); the screen overrides it."""
        return ""


class DetailTab(VerticalScroll):
    """Base class of the detail screen's tabs."""

    TAB_ID: ClassVar[str] = ""
    TITLE: ClassVar[str] = ""

    def show(self, view: HostView) -> None:
        """Draw ``view``; called only while this tab is the active one."""
        raise NotImplementedError

    def bind_host(self, host: HostConfig) -> None:
        """The screen's host, known before the first ``show`` (a job's outcome may come
        first); tabs that read its settings keep it."""

    def show_jobs(self, state: HostJobs) -> None:
        """The host's pull / verify / teardown moved on; tabs that show jobs redraw."""

    def show_queue(self, view: QueueView) -> None:
        """The poller read the host's queue; tabs that show it redraw."""

    def catch_up(self) -> None:
        """The screen is on top again (a dialog closed): draw what the tab held back."""

    def take_focus(self) -> Input | None:
        """Shown for a job's key (``t``): a tab with a text entry for that job puts the
        cursor there and returns it. Most tabs have none."""
        return None
