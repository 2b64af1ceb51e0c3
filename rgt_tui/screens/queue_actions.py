"""The queue keys (l launch, a append, f follow logs, d diagnose) and the queue poller.

Screens post ``QueueActionRequested`` (messages up); the App hands it to its
``QueueController``, which runs the blocking box work in workers (a group per host, one
kind of work per group) and shows the result in a modal or a notification. The poller
reads each connected host's queue view every ``POLL_S`` seconds, one worker per host,
and posts ``QueueViewed`` for the panes' summary line.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from textual.binding import Binding
from textual.message import Message

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.queue_state import QueueView
from rgt_tui.screens.workers import run_host_worker
from rgt_tui.services.connections import FleetConnections
from rgt_tui.transport import TransportError

if TYPE_CHECKING:
    from textual.app import App

POLL_S = 10.0
WATCHED_POLL_S = 3.0  # while the host's Queue tab is on screen

QUEUE_BINDINGS = [
    Binding("l", "queue('launch')", "Launch", tooltip="Launch the host's queue (shows the plan)"),
    Binding("a", "queue('append')", "Append", tooltip="Send new queue-file lines to the box"),
    Binding("f", "queue('logs')", "Logs", tooltip="Follow the host's queue and cell logs"),
    Binding("d", "queue('diagnose')", "Diagnose", tooltip="Why did the last cell vanish?"),
]
ACTIONS = {
    "launch": ("Launch queue", "Plan, confirm and launch the host's queue"),
    "append": ("Append to queue", "Send lines appended to the local queue file"),
    "logs": ("Follow logs", "Open the host's Logs tab"),
    "diagnose": ("Diagnose queue", "Why the latest cell vanished, with evidence"),
}


class QueueActionRequested(Message):
    """The user pressed a queue key on a host."""

    def __init__(self, host: str, action: str) -> None:
        super().__init__()
        self.host = host
        self.action = action


class QueueViewed(Message):
    """The poller read a host's queue view from the box."""

    def __init__(self, host: str, view: QueueView) -> None:
        super().__init__()
        self.host = host
        self.view = view

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, QueueViewed) and message.host == self.host


def error_text(exc: BaseException) -> str:
    """A user-facing line for a failed box action (transport errors carry their fix)."""
    return str(exc) or type(exc).__name__


def queue_commands(app: Any) -> list[tuple[str, str, Callable[[], Any]]]:
    """Command-palette entries: every queue action for every host with a queue."""
    commands = []
    for host in app.fleet.hosts:
        if not host.queue:
            continue
        for action, (title, help_text) in ACTIONS.items():
            commands.append(
                (f"{title}: {host.name}", help_text, partial(app.queues.request, host.name, action))
            )
    return commands


class QueueController:
    """Runs the queue actions and the queue poller on behalf of the App."""

    def __init__(
        self, app: App[Any], connections: FleetConnections, *, poll_s: float = POLL_S
    ) -> None:
        self.app = app
        self.connections = connections
        self.poll_s = poll_s
        self.views: dict[str, QueueView] = {}

    @property
    def fleet(self) -> Any:
        return self.app.fleet  # type: ignore[attr-defined]

    def request(self, host_name: str, action: str) -> None:
        """Do ``action`` (launch | append | logs | diagnose) on ``host_name``."""
        from rgt_tui.screens.diagnosis import DiagnosisScreen
        from rgt_tui.screens.launch_confirm import LaunchConfirmScreen

        try:
            host = self.fleet.host(host_name)
        except KeyError:
            self.app.notify(f"No host named {host_name}", severity="error")
            return
        if action == "logs":
            self.app.open_host(host_name)  # type: ignore[attr-defined]
            self.app.call_after_refresh(self._show_logs_tab, host_name)
            return
        if not host.queue and action != "diagnose":
            self.app.notify(
                f'{host_name} has no queue file: add `queue = "PATH"` and `run` to its '
                "[[host]] in hosts.toml",
                title=host_name,
                severity="warning",
            )
            return
        if action == "launch":
            self.app.push_screen(LaunchConfirmScreen(self.fleet, host, self.connections))
        elif action == "diagnose":
            self.app.push_screen(DiagnosisScreen(host, self.connections))
        elif action == "append":
            run_host_worker(self.app, self._append(host), "queue-append", host_name)

    def _show_logs_tab(self, host_name: str) -> None:
        screen = self.app.screen
        if getattr(getattr(screen, "host", None), "name", None) == host_name:
            screen.action_show_tab("logs")  # type: ignore[attr-defined]

    async def _append(self, host: HostConfig) -> None:
        from rgt_tui.services.queue import QueueError, append_cells

        try:
            result = await self.connections.use(
                host.name, lambda t: append_cells(self.fleet, host, t)
            )
        except (TransportError, QueueError) as exc:
            self.app.notify(
                error_text(exc), title=f"{host.name}: append refused", severity="error", timeout=20
            )
            return
        names = ", ".join(c.name for c in result.added) or "none"
        self.app.notify(
            f"added {len(result.added)} cell(s): {names}\n{result.detail}",
            title=f"{host.name}: appended",
            timeout=10,
        )

    # -- the poller ----------------------------------------------------------------------

    def start_pollers(self) -> None:
        """One slow queue-view poller per host that has a queue."""
        for host in self.fleet.hosts:
            if host.queue:
                run_host_worker(self.app, self._poll(host), "queue-poll", host.name)

    def _watched(self, host: str) -> bool:
        """Whether ``host``'s Queue tab is the one on screen (poll it faster then)."""
        screen = self.app.screen
        return (
            getattr(getattr(screen, "host", None), "name", None) == host
            and getattr(screen, "active_tab", None) == "queue"
        )

    def _connected(self, host: str) -> bool:
        """Connected at the last sample, and still sampled (not a torn-down box whose
        telemetry stopped while it was up)."""
        if host in getattr(self.app, "telemetry_stopped", ()):
            return False
        update = getattr(self.app, "latest", {}).get(host)
        return update is not None and update.connection.status == "connected"

    async def _poll(self, host: HostConfig) -> None:
        from rgt_tui.services.queue_view import read_queue_view

        while True:
            if not self._connected(host.name):
                await asyncio.sleep(1.0)
                continue
            try:
                # The host's one connection, which telemetry keeps up: the poller never
                # opens or closes it (not connected: a TransportError, tried next round).
                view = await read_queue_view(host, self.connections.transport(host.name))
            except Exception:  # TransportError or an unreadable record: retry next round
                pass  # the telemetry link reports connection trouble; the Queue tab the rest
            else:
                self.app.post_message(QueueViewed(host.name, view))
            # Re-armed only after the previous read finished: polls never overlap.
            waited = 0.0
            while waited < self.poll_s and not (
                waited >= WATCHED_POLL_S and self._watched(host.name)
            ):
                await asyncio.sleep(0.5)
                waited += 0.5

    def viewed(self, message: QueueViewed) -> None:
        """Record a polled view and hand it to the screens that show it."""
        self.views[message.host] = message.view
        for screen in self.app.screen_stack:
            sink = getattr(screen, "queue_viewed", None)
            if sink is not None:
                sink(message.host, message.view)
