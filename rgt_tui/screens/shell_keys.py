"""The shell key (``s``, as k9s): its binding, message, palette entries, and the suspend.

Screens bind ``SHELL_BINDING`` and post ``ShellRequested`` (messages up); the App runs
``open_shell`` in a worker. The TUI is suspended (Textual's ``App.suspend``) while the
user's ssh runs with the terminal; the event loop keeps running meanwhile, so the SSH
connections answer their keepalives and telemetry keeps arriving, but nothing is drawn
(``batch_update``: the suspended driver must not be written to) until the shell ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial
from typing import Any

from textual.app import App, SuspendNotSupported
from textual.binding import Binding
from textual.message import Message

from rgt_tui.domain.config import Fleet
from rgt_tui.services.box.shell import keys_to_the_shell, run_attached, shell_command

SHELL_BINDING = Binding(
    "s",
    "shell",
    "Shell",
    tooltip="A shell on the box: your ssh, in a new window of the queue's tmux if it runs",
)


class ShellRequested(Message):
    """The user asked for a shell on a host."""

    def __init__(self, host: str) -> None:
        super().__init__()
        self.host = host


async def open_shell(app: App[Any], fleet: Fleet, host_name: str) -> None:
    """Suspend the TUI, run the shell for ``host_name``, come back; say how it ended."""
    try:
        host = fleet.host(host_name)
    except KeyError:
        app.notify(f"No host named {host_name}", severity="error")
        return
    command = await asyncio.to_thread(shell_command, host)  # ssh -G: off the event loop
    if isinstance(command, str):
        app.notify(command, title=host_name, severity="error", timeout=10)
        return
    try:
        with app.batch_update(), app.suspend(), keys_to_the_shell():
            code = await asyncio.to_thread(run_attached, command, pause_on_failure=True)
    except SuspendNotSupported:
        app.notify(
            f"A shell needs the app in a terminal: run rgt-tui shell {host_name}",
            title=host_name,
            severity="warning",
        )
        return
    app.refresh(layout=True)  # what arrived meanwhile, drawn at once
    if code != 0:
        app.notify(f"shell on {host_name} ended with exit status {code}", title=host_name)


def shell_commands(
    fleet: Fleet, post: Callable[[Message], Any]
) -> list[tuple[str, str, Callable[[], Any]]]:
    """Command-palette entries: a shell on every host."""
    return [
        (
            f"Shell: {host.name}",
            "Suspend rgt-tui and open your ssh on the box (a new window of the queue's tmux "
            "session if it runs: exit or Ctrl-b d comes back)",
            partial(_post_shell, post, host.name),
        )
        for host in fleet.hosts
    ]


def _post_shell(post: Callable[[Message], Any], host: str) -> None:
    post(ShellRequested(host))  # a message per request: one is posted only once
