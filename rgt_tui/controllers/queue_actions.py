"""What the queue keys (L launch, a append, f follow logs, d diagnose) do.

Screens post ``QueueActionRequested`` (``screens/queue_keys.py``); the App hands it to
its ``QueueController``, which decides: a host without a queue gets the hint naming the
file to edit; launch, diagnose and logs open their screen (``open_screen``: the App
pushes the dialog, Textual's side); append runs the service in a worker of the host,
over the host's shared connection, and shows the result. Nothing here imports Textual
or a screen.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from functools import partial
from typing import Any

from rgt_tui.controllers.controller_host import ControllerHost
from rgt_tui.controllers.workers import run_host_worker
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.units import plural
from rgt_tui.services.connections import FleetConnections

ACTIONS = {
    "launch": ("Launch queue", "Plan, confirm and launch the host's queue"),
    "append": ("Append to queue", "Send lines appended to the local queue file"),
    "logs": ("Follow logs", "Open the host's Logs tab"),
    "diagnose": ("Diagnose queue", "Why the latest cell vanished, with evidence"),
    "move": (
        "Move cells…",
        "Move cells to another host's queue; an unfinished one with its verified checkpoint",
    ),
}
# The actions that open a screen (the App's side); append runs here.
SCREEN_ACTIONS = ("launch", "diagnose", "logs", "move")


def error_text(exc: BaseException, host: str = "") -> str:
    """A user-facing line for a failed box action (transport errors carry their fix).
    ``host``: a toast's title names it, so the text does not begin with it again
    ("box2: append refused / box2: refused: …", a user's hour)."""
    text = str(exc) or type(exc).__name__
    return text.removeprefix(f"{host}: ") if host else text


# What a torn-down box is not offered: nothing runs there any more. Its logs, diagnosis
# and a move of its unfinished cells to another box stay (they read records, not the box).
SENDS_TO_THE_BOX = ("launch", "append")


def queue_commands(
    fleet: Fleet, request: Callable[[str, str], None], torn_down: Collection[str] = ()
) -> list[tuple[str, str, Callable[[], Any]]]:
    """Command-palette entries: every queue action for every host with a queue; none that
    sends to the box for a host recorded torn down (``torn_down``): "Launch queue: box2"
    was offered for a box destroyed minutes before (hour s33 TUI #11)."""
    commands = []
    for host in fleet.hosts:
        if not host.queue:
            continue
        for action, (title, help_text) in ACTIONS.items():
            if host.name in torn_down and action in SENDS_TO_THE_BOX:
                continue
            commands.append(
                (f"{title}: {host.name}", help_text, partial(request, host.name, action))
            )
    return commands


class QueueController:
    """Turns the queue keys into the service calls and screens they stand for."""

    def __init__(
        self,
        app: ControllerHost,
        connections: FleetConnections,
        *,
        fleet: Callable[[], Fleet],
        open_screen: Callable[[str, HostConfig], None],
    ) -> None:
        self.app = app
        self.connections = connections
        self._fleet = fleet  # the App's fleet now (a host added meanwhile included)
        self.open_screen = open_screen  # (action, host): the App opens the action's screen

    @property
    def fleet(self) -> Fleet:
        return self._fleet()

    def request(self, host_name: str, action: str) -> None:
        """Do ``action`` (launch | append | logs | diagnose) on ``host_name``."""
        try:
            host = self.fleet.host(host_name)
        except KeyError:
            self.app.notify(f"No host named {host_name}", severity="error")
            return
        if action == "logs":
            self.open_screen(action, host)
            return
        if not host.queue and action != "diagnose":
            self.app.notify(
                no_queue_hint(host_name, self.fleet),
                title=host_name,
                severity="warning",
            )
            return
        if action in SCREEN_ACTIONS:
            self.open_screen(action, host)
        elif action == "append":
            run_host_worker(self.app, self._append(host), "queue-append", host_name)

    async def _append(self, host: HostConfig) -> None:
        from rgt_tui.services.box_ctl import QueueError
        from rgt_tui.services.journal import torn_down_refusal
        from rgt_tui.services.queue.backends import backend_for

        # Asked before any connection, as a launch is: a torn-down box's append read
        # "connection refused … try again once it is back" (h542 #3).
        torn = await asyncio.to_thread(torn_down_refusal, self.fleet, host.name)
        if torn is not None:
            self.app.notify(
                torn,
                title=f"{host.name}: append refused",
                severity="error",
                timeout=20,
            )
            return
        try:
            result = await self.connections.use(
                host.name, lambda t: backend_for(host).append_cells(self.fleet, t)
            )
        except (TransportError, QueueError) as exc:
            self.app.notify(
                error_text(exc, host.name),
                title=f"{host.name}: append refused",
                severity="error",
                timeout=20,
            )
            return
        if not result.added:  # "appended" would say something was: nothing was
            self.app.notify(result.detail, title=f"{host.name}: no new cells", timeout=10)
            return
        names = ", ".join(c.name for c in result.added)
        hint = "" if result.running else "\nL plans that launch"
        self.app.notify(
            f"added {plural(len(result.added), 'cell')}: {names}\n{result.detail}{hint}",
            title=f"{host.name}: appended",
            timeout=10,
        )


def no_queue_hint(host_name: str, fleet: Fleet) -> str:
    """Why ``L``/``a`` do nothing on a host without a queue, and which file to edit."""
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
    if host_name in {h.name for h in fleet.hosts if h.group is not None}:  # one torchrun job
        return (
            f"{host_name} has no queue file: in its [[groups]] entry in {fleet.path}, add "
            f'queue = "queues/{host_name}.txt" (one cell per line) and run = "torchrun '
            "--nnodes {nnodes} --node-rank {node_rank} --nproc-per-node {nproc_per_node} "
            "--rdzv-backend c10d --rdzv-endpoint {master_addr}:{master_port} train.py "
            '--config {cfg} --out {out}" (docs/groups.md)'
        )
    host = fleet.find(host_name)
    if host is not None and host.run is not None:
        # Its run is set: only the queue key is missing (the hint named run as well).
        return (
            f"{host_name} has no queue file: in its [[hosts]] entry in {fleet.path}, add "
            f'queue = "queues/{host_name}.txt" (one cell per line; its run is set)'
        )
    return (
        f"{host_name} has no queue file: in its [[hosts]] entry in {fleet.path}, add "
        f'queue = "queues/{host_name}.txt" (one cell per line) and run = "python3 train.py '
        '--config {cfg} [--epochs {epochs}] --out {out}" (the command each line runs)'
    )
