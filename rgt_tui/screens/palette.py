"""The command palette (every action of the app, per host and per theme) and the help
screen (every key).

The App lists ``RgtCommands`` in ``COMMANDS``; each hit calls one of the App's public
actions (read through ``self.app``, never imported: the App sits above the screens).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from textual.binding import Binding, BindingType
from textual.command import DiscoveryHit, Hit, Hits, Provider

from rgt_tui.controllers.queue_actions import queue_commands
from rgt_tui.screens.disk_usage import disk_commands
from rgt_tui.screens.fleet import FleetScreen
from rgt_tui.screens.fleet_filter import FilterInput
from rgt_tui.screens.help import HelpScreen
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.screens.job_keys import job_commands
from rgt_tui.screens.queue_control import queue_control_commands
from rgt_tui.screens.shell_keys import shell_commands
from rgt_tui.screens.tunnel_keys import tunnel_commands


class RgtCommands(Provider):
    """The command palette: every action of the app, per host and per theme."""

    def _commands(self) -> list[tuple[str, str, Callable[[], Any]]]:
        app: Any = self.app  # the RgtApp: its fleet, queues and actions
        commands: list[tuple[str, str, Callable[[], Any]]] = []
        for host in app.fleet.hosts:
            commands.append(
                (
                    f"Open detail: {host.name}",
                    "Show the host's detail screen",
                    partial(app.open_host, host.name),
                )
            )
            commands.append(
                (
                    f"Reconnect host: {host.name}",
                    "Drop and retry the connection now",
                    partial(app.reconnect, host.name),
                )
            )
            commands.append(
                (
                    f"Reclaim VRAM: {host.name}",
                    "GPU tab: who holds the VRAM; x kills a holder, its PID typed (U11)",
                    partial(app.open_host, host.name, "gpus"),
                )
            )
        for name in app.theme_names():
            commands.append(
                (
                    f"Switch theme to: {name}",
                    "Change the colours (remembered)",
                    partial(app.switch_theme, name),
                )
            )
        torn_down = {h.name for h in app.fleet.hosts if app.jobs.state(h.name).torn_down_at}
        commands += queue_commands(app.fleet, app.queues.request, torn_down)
        commands += queue_control_commands(app)  # S X R: stop, kill, retry (asks first)
        commands += job_commands(app)
        commands += shell_commands(app.fleet, app.post_message)
        commands += disk_commands(app.fleet, app.post_message)
        commands += tunnel_commands(app)  # T: a box's TensorBoard here (U39)
        commands += [
            ("Filter hosts", "Show only hosts whose name matches", app.action_filter),
            ("Help: keys", "List every key", app.action_help),
            (
                "Quit",
                "Leave rgt-tui (runs on boxes keep going; the demo's boxes go)",
                app.action_quit,
            ),
        ]
        return commands

    async def discover(self) -> Hits:
        for text, help_text, callback in self._commands():
            yield DiscoveryHit(text, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, help_text, callback in self._commands():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), callback, help=help_text)


def help_screen(app_bindings: list[BindingType]) -> HelpScreen:
    """Every key: the App's (``app_bindings``, and the palette's), the fleet grid's, the
    filter box's and the host detail's."""
    palette = Binding(
        "ctrl+p", "command_palette", "Commands", tooltip="Command palette: every action"
    )
    return HelpScreen(
        [
            ("Everywhere", [*app_bindings, palette]),
            ("Fleet", FleetScreen.BINDINGS),
            (
                "Filter box",
                [
                    *FilterInput.BINDINGS,
                    Binding("enter", "keep", "Keep the filter, back to the grid"),
                ],
            ),
            ("Host detail", HostDetailScreen.BINDINGS),
        ]
    )
