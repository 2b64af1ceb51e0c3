"""The tunnel key (``T``, U39): a host's TensorBoard (port 6006) on this machine.

``T`` on a host's detail screen starts ``services.box.tunnel.tunnel_with_check`` in an App
worker of the host's own, over the host's shared connection (no new login; the waits are
the fleet's, so ``r`` wakes them too): the tunnel lives as long as the app, or until
``T`` again closes it. The detail screen's ``TunnelLine`` shows its state (the URL, or
down and why) and, once, what keeps the box's TensorBoard from showing the runs.
The state is kept per app (``tunnels_of``), so a detail screen opened later shows it.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from textual.app import App
from textual.binding import Binding
from textual.widgets import Static
from textual.worker import Worker

from rgt_tui.controllers.workers import run_work
from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.text import printable_lines
from rgt_tui.services.box.tunnel import (
    TENSORBOARD_PORT,
    TunnelError,
    TunnelState,
    tunnel_with_check,
)
from rgt_tui.services.connections import FleetConnections

TUNNEL_BINDING = Binding(
    "T",
    "tunnel",
    "Tunnel",
    show=False,  # the footer is full; ? lists it
    tooltip=f"Forward the box's TensorBoard (port {TENSORBOARD_PORT}) to "
    "http://127.0.0.1:N/ over its connection; T again closes it",
)


@dataclass
class Tunnels:
    """An app's tunnels: the worker, latest state and TensorBoard advice per host."""

    workers: dict[str, Worker[None]] = field(default_factory=dict)
    states: dict[str, TunnelState] = field(default_factory=dict)
    advice: dict[str, str] = field(default_factory=dict)

    def line(self, host: str) -> str | None:
        """What the host's detail shows: the tunnel's line, then the advice; None: none."""
        state = self.states.get(host)
        if state is None:
            return None
        advice = self.advice.get(host)
        return state.line() + (f"\n{advice}" if advice else "")


_tunnels: weakref.WeakKeyDictionary[Any, Tunnels] = weakref.WeakKeyDictionary()


def tunnels_of(app: Any) -> Tunnels:
    """``app``'s tunnels (one record per app, made on first use)."""
    found = _tunnels.get(app)
    if found is None:
        found = _tunnels[app] = Tunnels()
    return found


class TunnelLine(Static):
    """The host's tunnel on its detail screen; hidden while it has none."""

    DEFAULT_CSS = """
    TunnelLine { height: auto; padding: 0 1; color: $accent; }
    """

    def __init__(self, host: str) -> None:
        super().__init__("", markup=False)
        self.host = host
        self.display = False

    def on_mount(self) -> None:
        self.refresh_line()

    def refresh_line(self) -> None:
        """Show the app's latest for this host (box text printable, never markup)."""
        line = tunnels_of(self.app).line(self.host)
        self.display = line is not None
        self.update(printable_lines(line or ""))


def _show(app: App[Any], host: str) -> None:
    for screen in app.screen_stack:
        for widget in screen.query(TunnelLine):
            if widget.host == host:
                widget.refresh_line()


def _in_sight(app: App[Any], host: str) -> bool:
    """The screen on top shows ``host``'s tunnel line: a toast would say it twice (h542 #8:
    two toasts and the banner said one thing, and covered half of a 100x30 screen)."""
    return any(w.host == host and w.display for w in app.screen.query(TunnelLine))


def toggle_tunnel(app: App[Any], host: HostConfig, connections: FleetConnections) -> None:
    """``T``: open the host's tunnel, or close the one it has."""
    tunnels = tunnels_of(app)
    worker = tunnels.workers.pop(host.name, None)
    if worker is not None and not worker.is_finished:
        worker.cancel()
        tunnels.states.pop(host.name, None)
        tunnels.advice.pop(host.name, None)
        _show(app, host.name)
        app.notify(f"tunnel to {host.name} closed", title=host.name)
        return
    tunnels.states[host.name] = TunnelState(host.name, TENSORBOARD_PORT, None, False, "opening…")
    _show(app, host.name)
    tunnels.workers[host.name] = run_work(app, _hold(app, host, connections), f"tunnel:{host.name}")


async def _hold(app: App[Any], host: HostConfig, connections: FleetConnections) -> None:
    tunnels = tunnels_of(app)
    name = host.name

    def on_state(state: TunnelState) -> None:
        was = tunnels.states.get(name)
        tunnels.states[name] = state
        _show(app, name)
        if state.up and (was is None or not was.up) and not _in_sight(app, name):
            app.notify(state.line(), title=name)

    def on_advice(advice: str) -> None:
        tunnels.advice[name] = advice
        _show(app, name)
        if not _in_sight(app, name):
            app.notify(advice, title=f"{name}: TensorBoard", severity="warning", timeout=15)

    try:
        await tunnel_with_check(
            host,
            connections.transport(name),
            TENSORBOARD_PORT,
            on_state,
            on_advice,
            backoff=connections.backoff,
            wait=connections.waiter(name),
        )
    except (TunnelError, TransportError) as exc:  # this machine; a refused host key
        tunnels.states.pop(name, None)
        tunnels.workers.pop(name, None)
        _show(app, name)
        text = f"{exc.message} — {exc.fix}" if exc.fix else exc.message
        app.notify(text, title=name, severity="warning", timeout=15)


def tunnel_commands(app: Any) -> list[tuple[str, str, Any]]:
    """Command-palette entries: the tunnel key on every SSH host (the App's fleet and
    connections, read through ``app``: the App sits above the screens)."""
    return [
        (
            f"Tunnel TensorBoard: {host.name}",
            f"Forward the box's port {TENSORBOARD_PORT} to http://127.0.0.1:N/ (again: close)",
            partial(toggle_tunnel, app, host, app.connections),
        )
        for host in app.fleet.hosts
        if not host.is_local
    ]
