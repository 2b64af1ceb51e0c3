"""Refused host keys: what the App keeps of them, and trusting one after confirmation.

A monitor's connection refused with ``HostKeyError`` stops there (retrying would repeat
the refusal). ``HostKeys`` learns of refusals from each host's connection state
(``key_error``: the refusal itself, not its text, is what the prompt needs), keeps them
for ``K``, and hands each change to ``show`` (the App: every screen that shows hosts).
``review`` asks the user through ``ask`` (the App pushes ``screens.host_key.HostKeyScreen``)
and trusts the key only on a yes, through ``services.fleet.trust``, then reconnects the host.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rgt_tui.controllers.controller_host import ControllerHost
from rgt_tui.controllers.workers import run_host_worker
from rgt_tui.domain.errors import HostKeyError
from rgt_tui.services.fleet.trust import trust_refused_key

if TYPE_CHECKING:
    from rgt_tui.services.telemetry import ConnectionState

# ``ask(error, answered)``: show the refused key; ``answered(True)`` only when trusted.
Ask = Callable[[HostKeyError, Callable[[bool | None], None]], None]


class HostKeys:
    """The App's refused host keys, the question, and trusting after confirmation."""

    def __init__(
        self,
        app: ControllerHost,
        reconnect: Callable[[str], None],
        *,
        show: Callable[[str, HostKeyError | None], None],
        ask: Ask,
    ) -> None:
        self.app = app
        self.reconnect = reconnect
        self.show = show
        self.ask = ask
        self.refusals: dict[str, HostKeyError] = {}

    def host_updated(self, host: str, connection: ConnectionState) -> None:
        """Follow a host's connection: a refused key is kept for ``K``; connecting ends it."""
        error = connection.key_error
        if error is None and connection.status != "connected":
            return  # still trying: an earlier refusal stands until the key is trusted
        if self.refusals.get(host) is not error:
            self.refused(host, error)

    def refused(self, host: str, error: HostKeyError | None) -> None:
        """Record (or clear) ``host``'s refusal and show it."""
        if error is None:
            self.refusals.pop(host, None)
        else:
            self.refusals[host] = error
        self.show(host, error)

    def review(self, host: str) -> None:
        """Show ``host``'s refused key; trust it (and reconnect) only if the user says so."""
        error = self.refusals.get(host)
        if error is None:
            self.app.notify(f"{host}: no refused host key to review", title=host)
            return

        def answered(trust: bool | None) -> None:
            if trust:
                run_host_worker(self.app, self._trust(host, error), "host-key", host)

        self.ask(error, answered)

    async def _trust(self, host: str, error: HostKeyError) -> None:
        try:
            path = await trust_refused_key(error)
        except (ValueError, OSError) as exc:
            self.app.notify(f"{host}: {exc}", title=host, severity="error", timeout=15)
            return
        whose = f"the jump host {error.jump_host}'s key " if error.jump_host else ""
        self.app.notify(
            f"{host}: trusted {whose}{error.presented} (added to {path}); reconnecting…",
            title=host,
            timeout=10,
        )
        self.refused(host, None)
        self.reconnect(host)
