"""What the Queue tab's ``S`` (stop after the cell) and ``X`` (kill the cell) do once the
user chose in their dialog: the host's backend stops or kills over the host's shared
connection, in a worker of the App, and the outcome is told as a notice.

The tab asks (``screens/queue_control.py``) and hands the answer here; the work runs on
the App rather than the tab, so leaving the tab never cuts a kill short. ``R`` (retry)
plans and runs in its own dialog (``screens/retry_confirm.py``). No Textual here.
"""

from __future__ import annotations

from rgt_tui.controllers.controller_host import ControllerHost
from rgt_tui.controllers.queue_actions import error_text
from rgt_tui.controllers.workers import run_host_worker
from rgt_tui.domain.config import HostConfig
from rgt_tui.services.connections import FleetConnections


class QueueControl:
    """Stop and kill on a host's queue, asked for by the Queue tab's dialogs."""

    def __init__(self, app: ControllerHost, connections: FleetConnections) -> None:
        self.app = app
        self.connections = connections

    def request(self, host: HostConfig, action: str, cell: str | None, chosen: str) -> None:
        """Do ``action`` ("stop" | "kill") on ``host``; ``chosen``: the dialog's answer
        (for a kill, what then: "next" or "stop"); ``cell``: the cell the dialog named."""
        work = self._act(host, action, cell, chosen)
        run_host_worker(self.app, work, "queue-control", host.name)

    async def _act(self, host: HostConfig, action: str, cell: str | None, chosen: str) -> None:
        from rgt_tui.services.queue.backends import backend_for

        title = f"{host.name}: {action}"
        use = self.connections.use
        severity = "information"
        try:
            if action == "stop":
                result = await use(host.name, lambda t: backend_for(host).stop(t))
                # And how to go on (Slurm: release the holds); first, when the cell the
                # dialog named had ended and another started, that the stop moved on.
                message = result.summary(cell)
                if result.moved_on(cell):
                    severity = "warning"
            elif action == "kill":
                # Said only when the kill is slow (a far box): its outcome's own toast
                # follows, and the two stacked read as one too many (s39 new user #5).
                slow = self.app.set_timer(
                    KILLING_SAID_AFTER_S,
                    lambda: self.app.notify(f"killing {cell}…", title=title, timeout=4),
                )
                # "end": X on the last cell, a stop no one asked for by name.
                then = "stop" if chosen == "end" else chosen
                try:
                    killed = await use(
                        host.name, lambda t: backend_for(host).kill(t, cell, then=then)
                    )
                finally:
                    slow.stop()
                message = killed.summary(asked=chosen != "end")
            else:  # a retry runs from its own dialog
                return
        except Exception as exc:  # refused on the box, or unreachable: said, not raised
            self.app.notify(error_text(exc, host.name), title=title, severity="error", timeout=20)
            return
        # The title names the host: "box1: kill / box1: cell … killed" said it twice.
        self.app.notify(
            message.removeprefix(f"{host.name}: "), title=title, severity=severity, timeout=10
        )


KILLING_SAID_AFTER_S = 1.5  # a kill answered sooner is said once, by its outcome
