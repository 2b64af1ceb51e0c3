"""The queue keys (l launch, a append, f follow logs, d diagnose).

Screens post ``QueueActionRequested`` (messages up); the App hands it to its
``QueueController``, which opens the dialog the key stands for (launch, diagnosis) or
runs the service (append) in a worker of the host, over the host's shared connection,
and shows the result. ``QueueViewed`` carries the poller's views
(``services.queue_poller``) to the screens.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from textual.binding import Binding
from textual.message import Message

from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.queue_state import QueueView
from rgt_tui.domain.units import plural
from rgt_tui.screens.workers import run_host_worker
from rgt_tui.services.connections import FleetConnections

if TYPE_CHECKING:
    from textual.app import App


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
    """Turns the queue keys into the service calls and dialogs they stand for."""

    def __init__(self, app: App[Any], connections: FleetConnections) -> None:
        self.app = app
        self.connections = connections

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
                no_queue_hint(host_name, self.fleet),
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
        from rgt_tui.screens.host_detail import HostDetailScreen

        screen = self.app.screen
        if isinstance(screen, HostDetailScreen) and screen.host.name == host_name:
            screen.action_show_tab("logs")

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
        hint = "" if result.running or not result.added else "\npress l to launch them"
        self.app.notify(
            f"added {plural(len(result.added), 'cell')}: {names}\n{result.detail}{hint}",
            title=f"{host.name}: appended",
            timeout=10,
        )


def no_queue_hint(host_name: str, fleet: Fleet) -> str:
    """Why ``l``/``a`` do nothing on a host without a queue, and which file to edit."""
    if fleet.is_default:
        where = (
            f"{fleet.path} has no [[hosts]] entry"
            if fleet.path is not None
            else "there is no fleet file (hosts.toml)"
        )
        return (
            f"{host_name} has no queue file: {where}. Press + (or run rgt-tui add) to add "
            'a box, then set queue = "PATH" and run in its [[hosts]] entry'
        )
    return (
        f'{host_name} has no queue file: add queue = "PATH" and run to its [[hosts]] entry '
        f"in {fleet.path}"
    )
