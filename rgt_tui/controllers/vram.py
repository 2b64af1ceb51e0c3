"""What the GPUs tab's VRAM holders (U11, GEN7) need from the box: who holds the VRAM,
and ``x``'s kill of one holder by its typed PID, followed by a fresh list.

The tab shows and asks (``screens/tabs/gpus.py``, ``screens/vram_kill.py``); this runs
the services (``services/box/vram.py``) over the host's shared connection and returns
what to show. No Textual here.
"""

from __future__ import annotations

from dataclasses import dataclass

from rgt_tui.controllers.queue_actions import error_text
from rgt_tui.services.box.vram import VramEvidence
from rgt_tui.services.connections import FleetConnections


@dataclass(frozen=True)
class VramRead:
    """The box's VRAM evidence (None: not read, ``error`` says why); ``note``: a kill's
    outcome; ``killed``: a kill ran on the box (the App tells it as a notice too)."""

    evidence: VramEvidence | None
    error: str = ""
    note: str = ""
    killed: bool = False


class VramControl:
    """Reads the VRAM holders of a host and kills one."""

    def __init__(self, connections: FleetConnections) -> None:
        self.connections = connections

    async def read(self, host: str, note: str = "") -> VramRead:
        """Who holds the VRAM on ``host`` now; an unreachable or refusing box is said."""
        from rgt_tui.services.box.vram import read_vram_evidence

        try:
            evidence = await self.connections.use(host, lambda t: read_vram_evidence(host, t))
        except Exception as exc:  # unreachable, refused: said in the tab
            return VramRead(None, error_text(exc), note)
        return VramRead(evidence, note=note)

    async def kill(self, evidence: VramEvidence, pid: int) -> VramRead:
        """Kill ``pid`` (one of ``evidence``'s holders), then read the list again."""
        from rgt_tui.services.box.vram import kill_outcome, kill_vram_holder, read_vram_evidence

        host = evidence.host
        use = self.connections.use
        try:
            result = await use(host, lambda t: kill_vram_holder(evidence, t, pid))
        except Exception as exc:  # refused on the box, or unreachable: nothing was killed
            return VramRead(None, note=f"not killed: {error_text(exc)}")
        # A separate call on a (re)connected transport: the kill may have taken the
        # session down with it (U1), and only the list after it says what happened.
        try:
            transport = await self.connections.connect_with_backoff(host)
            after = await read_vram_evidence(host, transport)
        except Exception:  # the note says the box is not back yet
            after = None
        return VramRead(after, note=kill_outcome(result, after), killed=True)
