"""Refused host keys: the ``trust this key?`` prompt, and what the App keeps of refusals.

A monitor's connection refused with ``HostKeyError`` stops there (retrying would repeat
the refusal). ``K`` on that host opens ``HostKeyScreen``:

- an unknown key: the host, its SHA-256 fingerprint, the exact known_hosts line and the
  file it goes to; only the Trust button appends it (``known_hosts.trust_host_key``),
  then the host reconnects. Cancel (or Escape, the default) writes nothing;
- a changed or revoked key: no way to trust it here. The old and new fingerprints and
  the exact fix (``ssh-keygen -R`` for the resolved name and port) are shown instead.

``HostKeys`` learns of refusals from each host's connection state (``key_error``): the
refusal itself, not its text, is what the prompt needs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from rgt_tui.screens.fleet_view import FleetView
from rgt_tui.transport.base import HostKeyError

if TYPE_CHECKING:
    from textual.app import App

    from rgt_tui.services.telemetry import ConnectionState

MUTED = "$foreground-muted"

# On the fleet (the selected pane) and on the host's detail screen; enabled (and so
# shown in the footer) only while that host's key is refused.
HOST_KEY_BINDING = Binding(
    "K",
    "host_key",
    "Host key",
    tooltip="Show the host's refused host key (trust it if it is new)",
)


class HostKeyReviewRequested(Message):
    """The user asked to see a host's refused key (``K``)."""

    def __init__(self, host: str) -> None:
        super().__init__()
        self.host = host


def _row(label: str, value: str, style: str = "") -> Content:
    return Content.assemble((f"{label:<14}", MUTED), (value, style))


class HostKeyScreen(ModalScreen[bool]):
    """One refused host key; dismisses with True only when the user trusts it."""

    DEFAULT_CSS = """
    HostKeyScreen { align: center middle; }
    HostKeyScreen > #key-box {
        width: 110; max-width: 96%; height: auto; max-height: 90%;
        border: round $warning; background: $surface; padding: 0 1;
    }
    HostKeyScreen #key-buttons { height: auto; align-horizontal: right; }
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel", tooltip="Close; nothing is written")]

    def __init__(self, error: HostKeyError) -> None:
        super().__init__()
        self.error = error

    @property
    def can_trust(self) -> bool:
        """Only an unknown key, with its line and file, can be trusted from here."""
        e = self.error
        return e.kind == "unknown" and bool(e.trust_line) and e.known_hosts_file is not None

    def compose(self) -> ComposeResult:
        with Vertical(id="key-box"):
            yield Static(self._body(), id="key-body")
            with Horizontal(id="key-buttons"):
                if self.can_trust:
                    yield Button("Trust this key", id="key-trust", variant="warning")
                    yield Button("Cancel", id="key-cancel", variant="primary")
                else:
                    yield Button("Close", id="key-cancel", variant="primary")

    def on_mount(self) -> None:
        # Enter on the default button leaves known_hosts alone: trusting takes a deliberate
        # move to the Trust button.
        self.query_one("#key-cancel", Button).focus()

    def _body(self) -> Content:
        e = self.error
        lines: list[Content]
        if self.can_trust:
            lines = [
                Content.assemble(("trust this key? ", "bold $warning"), (e.host, "bold $accent")),
                Content.styled(
                    "The box showed a host key no known_hosts file has. Trust it only if this "
                    "fingerprint is the one your provider shows for the box.",
                    MUTED,
                ),
                Content(""),
                _row("host", e.host, "bold"),
                _row("fingerprint", e.presented, "bold"),
                _row("file", str(e.known_hosts_file)),
                Content.styled("Trust appends this line to the file:", MUTED),
                Content(e.trust_line or ""),  # a row of its own: copied whole, not wrapped
            ]
        else:
            lines = [
                Content.assemble(
                    (f"host key {e.kind.upper()}: ", "bold $error"), (e.host, "bold $accent")
                ),
                Content.styled(e.message, "$error"),
                Content(""),
                _row("host", e.host, "bold"),
                _row("old", ", ".join(e.known) or "(none recorded)"),
                _row("new", e.presented, "bold"),
                _row("fix", e.fix or ""),
                Content(""),
                Content.styled("rgt-tui does not trust a changed or revoked key.", MUTED),
            ]
        return Content("\n").join(lines)

    @on(Button.Pressed, "#key-trust")
    def _trust(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(True)

    @on(Button.Pressed, "#key-cancel")
    def _cancel(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(False)

    def action_cancel(self) -> None:
        self.dismiss(False)


class HostKeys:
    """The App's refused host keys, the prompt, and trusting after confirmation."""

    def __init__(self, app: App[Any], reconnect: Callable[[str], None]) -> None:
        self.app = app
        self.reconnect = reconnect
        self.refusals: dict[str, HostKeyError] = {}

    def host_updated(self, host: str, connection: ConnectionState) -> None:
        """Follow a host's connection: a refused key is kept for ``K``; connecting ends it."""
        error = connection.key_error
        if error is None and connection.status != "connected":
            return  # still trying: an earlier refusal stands until the key is trusted
        if self.refusals.get(host) is not error:
            self.refused(host, error)

    def refused(self, host: str, error: HostKeyError | None) -> None:
        """Record (or clear) ``host``'s refusal and show it on every screen."""
        if error is None:
            self.refusals.pop(host, None)
        else:
            self.refusals[host] = error
        for screen in self.app.screen_stack:
            if isinstance(screen, FleetView):
                screen.host_key_refused(host, error)

    def review(self, host: str) -> None:
        """Show ``host``'s refused key; trust it (and reconnect) only if the user says so."""
        error = self.refusals.get(host)
        if error is None:
            self.app.notify(f"{host}: no refused host key to review", title=host)
            return

        def answered(trust: bool | None) -> None:
            if trust:
                self.app.run_worker(
                    self._trust(host, error),
                    name=f"host-key:{host}",
                    group=f"host-key:{host}",
                    exclusive=True,
                    exit_on_error=False,
                )

        self.app.push_screen(HostKeyScreen(error), answered)

    async def _trust(self, host: str, error: HostKeyError) -> None:
        from rgt_tui.transport.known_hosts import trust_host_key

        try:
            path = await asyncio.to_thread(trust_host_key, error)
        except (ValueError, OSError) as exc:
            self.app.notify(f"{host}: {exc}", title=host, severity="error", timeout=15)
            return
        self.app.notify(
            f"{host}: trusted {error.presented} (added to {path}); reconnecting…",
            title=host,
            timeout=10,
        )
        self.refused(host, None)
        self.reconnect(host)
