"""What the usage dialog (``u``) needs from the box: the disk audit, and the typed delete
of one offered entry (checked by ``services.disk.reclaim``, then the audit again).

The dialog shows and asks (``screens/disk_usage.py``); this runs the services over the
host's shared connection and returns what to show, box text already printable. No
Textual here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rgt_tui.controllers.queue_actions import error_text
from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.errors import NoAnswer
from rgt_tui.domain.text import printable, printable_lines
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.disk.audit import DiskAudit, DiskError


@dataclass(frozen=True)
class DiskOutcome:
    """``audit``: the audit taken now (None: none, keep the last one); ``status``: a
    printable line (a delete done, or why it or the audit failed) and its ``kind``
    ("success" | "error" | "" for none)."""

    audit: DiskAudit | None
    status: str = ""
    kind: str = ""


class DiskControl:
    """Audits a host's disk and deletes what the user typed, when it is offered."""

    def __init__(
        self,
        connections: FleetConnections,
        host: HostConfig,
        results: Path,
        *,
        torn_down_at: float | None = None,
    ) -> None:
        self.connections = connections
        self.host = host
        self.results = results  # this machine's copy of the host's results (the pull root)
        self.torn_down_at = torn_down_at  # the host's recorded teardown, None when none

    async def audit(self) -> DiskOutcome:
        """The box's disk audit now."""
        return await self._work(None, None)

    async def delete(self, audit: DiskAudit, typed: str) -> DiskOutcome:
        """Delete ``typed`` (an entry of ``audit``) if the check allows it, then audit
        again; refused with what it would lose otherwise."""
        return await self._work(audit, typed)

    async def _work(self, audit: DiskAudit | None, typed: str | None) -> DiskOutcome:
        from rgt_tui.services.disk.audit import audit_disk
        from rgt_tui.services.disk.reclaim import delete_planned, plan_delete

        host, results, use = self.host, self.results, self.connections.use
        status, kind = "", ""
        try:
            if typed is not None and audit is not None:
                old = audit
                plan = await use(host.name, lambda t: plan_delete(host, t, results, old, typed))
                status, kind = (
                    printable_lines(await use(host.name, lambda t: delete_planned(t, plan))),
                    "success",
                )
            fresh = await use(host.name, lambda t: audit_disk(host, t, results))
        except DiskError as exc:
            lost = "".join(f"\n  would lose: {printable(line, None)}" for line in exc.lost)
            return DiskOutcome(None, printable(exc.message, None) + lost, "error")
        except NoAnswer as exc:
            if self.torn_down_at is None:
                return DiskOutcome(None, printable_lines(error_text(exc)), "error")
            # A destroyed box does not answer: said so, not "check the port" (h471 #3).
            from rgt_tui.services.journal import gone_as_recorded

            gone = gone_as_recorded(host.name, self.torn_down_at)
            return DiskOutcome(None, f"{gone}: there is no box to read", "error")
        except Exception as exc:  # an unreachable box and the like: shown in the dialog
            return DiskOutcome(None, printable_lines(error_text(exc)), "error")
        return DiskOutcome(fresh, status, kind)
