"""What the Move dialog (``m``) needs from the boxes: the plan of moving cells to another
host's queue (one cell that ran and did not finish: resumed from its newest verified
checkpoint, ``services.queue.resume``), then the move or the resume itself.

The dialog shows the plan and asks (``screens/queue_move_dialog.py``); this runs the
services over the hosts' shared connections and returns the plan or why none, and the
outcome's notice or why it failed (box text left as it came: the dialog makes it
printable). No Textual here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rgt_tui.controllers.queue_actions import error_text
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.units import plural
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.queue.move import MovedNotRun, PartlyMoved

if TYPE_CHECKING:
    from rgt_tui.services.queue.move import MovePlan
    from rgt_tui.services.queue.resume_preflight import ResumeDialogPlan


@dataclass(frozen=True)
class Moved:
    """A move or a resume: ``message`` (the notice) and its ``result`` when it ran, else
    ``error``."""

    message: str = ""
    error: str = ""
    result: Any = None  # MoveResult | ResumeResult
    # Moved, but not all the way (``MovedNotRun``: the target did not start it;
    # ``PartlyMoved``: finish it by hand): ``message`` says what is left. The dialog
    # closes on it: "Not moved" and Move enabled again read as nothing done (s44 #5).
    partly: bool = False


def run_moved_keys(dest: str) -> str:
    """How cells moved to ``dest`` that never ran get run, in the TUI's keys
    (``run_moved_hint`` says it in the command line's): appended to a queue that runs
    there, else launched (an append is refused on a box with no queue yet)."""
    return f"run them: a (Append) on {dest} if a queue runs there, else L (Launch) on {dest}"


class MoveControl:
    """Plans and runs moving cells from one host's queue to another's."""

    def __init__(self, fleet: Fleet, host: HostConfig, connections: FleetConnections) -> None:
        self.fleet = fleet
        self.host = host  # the source
        self.connections = connections

    async def plan(
        self, cells: list[str], dest: str, *, from_scratch: bool, acks: tuple[str, ...]
    ) -> tuple[MovePlan | ResumeDialogPlan | None, str]:
        """One cell to a host of the fleet: the resume plan (``from_scratch``: its
        checkpoint left behind); else the plain move; or why none."""
        from rgt_tui.services.queue.move import plan_move
        from rgt_tui.services.queue.resume_preflight import plan_resume_with_preflight

        fleet, host = self.fleet, self.host
        try:
            known = dest in {h.name for h in fleet.hosts}
            if len(dict.fromkeys(cells)) == 1 and known:
                # Not connected first: a source box that does not answer (preempted,
                # gone) still has a resume plan, which says so.
                src = self.connections.transport(host.name)
                dst = self.connections.transport(dest)
                plan: MovePlan | ResumeDialogPlan = await plan_resume_with_preflight(
                    fleet, host, cells[0], dest, src, dst, from_scratch=from_scratch, acks=acks
                )
            else:
                # The target's box is asked for the cells' configs (a warning: h471 #11).
                to = self.connections.transport(dest) if known else None
                plan = await self.connections.use(
                    host.name,
                    lambda t: plan_move(fleet, host, cells, dest, t, target_transport=to),
                )
        except Exception as exc:  # the plan reports an unreachable box itself; anything else said
            return None, error_text(exc)
        return plan, ""

    async def move(self, plan: MovePlan) -> Moved:
        """Move ``plan``'s cells (the source box skips them, the target's queue file
        gains them)."""
        from rgt_tui.services.queue.move import apply_move

        host = self.host
        gone = self._gone(plan.dest)
        if gone:
            return Moved(error=gone)
        try:
            result = await self.connections.use(host.name, lambda t: apply_move(plan, host, t))
        except (MovedNotRun, PartlyMoved) as exc:
            return Moved(message=error_text(exc), partly=True)
        except Exception as exc:  # MoveError / TransportError: said, the dialog stays
            return Moved(error=error_text(exc))
        names = ", ".join(c.name for c in plan.cells)
        skipped = (
            f"\n{plan.source}'s box skips {', '.join(result.skipped)}" if result.skipped else ""
        )
        origins = "".join(f"\n{said}" for said in result.origins)
        message = f"moved {names} to {plan.dest}{skipped}{origins}\n{run_moved_keys(plan.dest)}"
        return Moved(message=message, result=result)

    def _gone(self, name: str) -> str:
        """Why nothing moves when ``name`` left the fleet file since the plan ("" when it
        is still there): a destination gone while the dialog was open hung it at
        "moving…" for good, its error swallowed by the worker (h545 #1)."""
        try:
            self.connections.transport(name)
        except KeyError:
            return f"{name} is no longer in the fleet file: nothing was moved (plan again)"
        return ""

    async def resume(self, planned: ResumeDialogPlan, acks: tuple[str, ...]) -> Moved:
        """Move ``planned``'s cell with its verified files, queued on the target."""
        from rgt_tui.services.queue.resume import resume_move

        plan, move = planned.plan, planned.plan.move
        gone = self._gone(move.dest) or self._gone(self.host.name)
        if gone:
            return Moved(error=gone)
        try:
            src = self.connections.transport(self.host.name)
            dst = self.connections.transport(move.dest)
            result = await resume_move(plan, self.fleet, self.host, src, dst, acks=acks)
        except (MovedNotRun, PartlyMoved) as exc:
            return Moved(message=error_text(exc), partly=True)
        except Exception as exc:  # MoveError / TransportError / QueueError: said, stays
            return Moved(error=error_text(exc))
        lines = [f"moved {plan.cell} to {move.dest}"]
        if result.moved.skipped:
            lines.append(f"{move.source}'s box skips {plan.cell}")
        if plan.files:
            lines.append(
                f"pushed {plural(len(plan.files), 'verified file')} to {move.dest}:{result.out}"
            )
        # A cell that never ran is queued by nothing: the TUI's keys, not the command
        # line's (hour s34 TUI #10: "run it: rgt-tui queue append box3 … else rgt-tui
        # launch box3" in a toast).
        lines.append(result.queued if plan.ran else run_moved_keys(move.dest))
        return Moved(message="\n".join(lines), result=result)
