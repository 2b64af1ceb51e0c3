"""The shell key (``s``, as k9s): its binding, message, palette entries, and the suspend.

Screens bind ``SHELL_BINDING`` and post ``ShellRequested`` (messages up); the App runs
``open_shell`` in a worker. The TUI is suspended (Textual's ``App.suspend``) while the
user's ssh runs with the terminal; the event loop keeps running meanwhile, so the SSH
connections answer their keepalives and telemetry keeps arriving, but nothing is drawn
(``batch_update``: the suspended driver must not be written to) until the shell ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import termios
from collections.abc import Callable
from functools import partial
from typing import Any

from textual import events
from textual.app import App, ComposeResult, SuspendNotSupported
from textual.binding import Binding
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.services.box.shell import (
    SSH_FAILED,
    keys_to_the_shell,
    run_attached,
    shell_command,
)

SHELL_BINDING = Binding(
    "s",
    "shell",
    "Shell",
    tooltip="A shell on the box: your ssh, in a new window of the queue's tmux if it runs",
)


class ShellRequested(Message):
    """The user asked for a shell on a host."""

    def __init__(self, host: str, opening: ShellOpening | None = None) -> None:
        super().__init__()
        self.host = host
        self.opening = opening  # the key-dropping screen ``s`` pushed, when it did


class ShellOpening(ModalScreen[None]):
    """Shown from ``s`` until the shell has ended: every key that reaches the TUI then is
    dropped. Keys typed for the shell while ``ssh -G`` ran, before the suspend, were read
    as the TUI's and ran as commands once the shell ended (hour s23b #4: ``/saved`` typed
    on a Logs tab opened a shell on ``s``, then appended, verified and diagnosed)."""

    DEFAULT_CSS = """
    ShellOpening { align: center middle; }
    ShellOpening > Static { width: auto; padding: 1 2; border: round $accent; }
    """

    def __init__(self, host: str) -> None:
        super().__init__()
        self.host = host
        self.ended = False  # the shell ended (or never ran): nothing is left to wait for
        self._left = False

    def compose(self) -> ComposeResult:
        yield Static(Content(f"opening a shell on {self.host}…"))

    def end(self) -> None:
        """The shell ended: leave now if on top, else as soon as what covers it closes.
        Keys typed before ``s`` (``qus`` in one burst) open their dialogs a moment later,
        over this one; it was left under them, dropping every key, Esc included, with only
        a quit to get out (hour s45a #1)."""
        self.ended = True
        self._leave()

    def on_screen_resume(self) -> None:
        self._leave()

    def _leave(self) -> None:
        # Only from the top (a pop takes the top screen, whichever asks) and only once: a
        # resume queued before a dialog covered it arrives while that dialog is on top.
        if self.ended and self.app.screen is self and not self._left:
            self._left = True
            self.dismiss()

    async def on_key(self, event: events.Key) -> None:
        event.stop()
        event.prevent_default()


def _drop_typed_ahead() -> None:
    """Drop what was typed but not read yet (keys meant for the shell that ended): the
    TUI reads the terminal again right after."""
    with contextlib.suppress(OSError, ValueError, termios.error):
        if sys.stdin.isatty():
            termios.tcflush(sys.stdin.fileno(), termios.TCIFLUSH)


def request_shell(screen: Screen[Any], host: str) -> None:
    """``s`` on ``screen`` for ``host``: the screen that drops keys goes up at once, as
    the key is handled, before the keys typed after it are (the message is handled a
    moment later, once they have been: they ran as commands)."""
    opening = ShellOpening(host)
    screen.app.push_screen(opening)
    screen.post_message(ShellRequested(host, opening))


async def open_shell(
    app: App[Any], fleet: Fleet, message: ShellRequested, *, torn_down_at: float | None = None
) -> None:
    """Suspend the TUI, run the shell for the message's host, come back; say how it
    ended. ``torn_down_at``: the host's recorded teardown, which an ssh that could not
    connect is said against (h471 #5: "exit status 255" of a destroyed box)."""
    host_name = message.host
    opening = message.opening or ShellOpening(host_name)
    if not opening.is_attached:
        await app.push_screen(opening)
    try:
        host = fleet.host(host_name)
    except KeyError:
        opening.end()
        app.notify(f"No host named {host_name}", severity="error")
        return
    try:
        code = await _run_shell(app, host)
    finally:
        opening.end()
    if isinstance(code, str):
        app.notify(code, title=host_name, severity="error", timeout=10)
        return
    app.refresh(layout=True)  # what arrived meanwhile, drawn at once
    if code == SSH_FAILED and torn_down_at is not None:
        from rgt_tui.services.journal import gone_as_recorded

        app.notify(
            f"no shell: {gone_as_recorded(host_name, torn_down_at)} (ssh's exit 255)",
            title=host_name,
            severity="warning",
        )
    elif code != 0:
        app.notify(f"shell on {host_name} ended with exit status {code}", title=host_name)


async def _run_shell(app: App[Any], host: HostConfig) -> int | str:
    """The shell's exit status, or why it did not run (words for a toast)."""
    command = await asyncio.to_thread(shell_command, host)  # ssh -G: off the event loop
    if isinstance(command, str):
        return command
    try:
        with app.batch_update(), app.suspend(), keys_to_the_shell():
            code = await asyncio.to_thread(run_attached, command, pause_on_failure=True)
            _drop_typed_ahead()
    except SuspendNotSupported:
        return f"A shell needs the app in a terminal: run rgt-tui shell {host.name}"
    return code


def shell_commands(
    fleet: Fleet, post: Callable[[Message], Any]
) -> list[tuple[str, str, Callable[[], Any]]]:
    """Command-palette entries: a shell on every host."""
    return [
        (
            f"Shell: {host.name}",
            "Suspend rgt-tui and open your ssh on the box (a new window of the queue's tmux "
            "session if it runs: exit, or the box's tmux detach, comes back)",
            partial(_post_shell, post, host.name),
        )
        for host in fleet.hosts
    ]


def _post_shell(post: Callable[[Message], Any], host: str) -> None:
    post(ShellRequested(host))  # a message per request: one is posted only once
