"""The target's preflight before a resume move is confirmed (the Move dialog, key ``m``,
and ``queue move``).

A resume move ends by launching the cell on the target (``services.queue.resume``), and
that launch runs preflight: a failed check refuses it unless acknowledged by name
(``--ack`` on the CLI). Found only then, the refusal would come after the files were
pushed and the line moved. The dialog (and the CLI) asks for the target's preflight with
the plan, so the plan shows each failed check and its Acknowledge button (``--ack``)
before anything moves; the acknowledged names then go to ``resume_move(acks=…)``, as the
launch dialog's do.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.preflight import PreflightReport
from rgt_tui.domain.text import printable
from rgt_tui.services.queue.launch_preflight import preflight_acks, run_preflight
from rgt_tui.services.queue.resume import ResumePlan, plan_resume_move
from rgt_tui.transport import Transport


@dataclass(frozen=True)
class TargetPreflight:
    """The target's preflight as the plan saw it, and the checks acknowledged so far."""

    host: str
    report: PreflightReport | None  # None: not run (error says why)
    acks: tuple[str, ...] = ()  # acknowledged in the dialog
    host_acks: tuple[str, ...] = ()  # the target's preflight_ack
    error: str = ""

    @property
    def acknowledged(self) -> tuple[str, ...]:
        return (*self.acks, *self.host_acks)

    @property
    def unacknowledged(self) -> tuple[str, ...]:
        """The failed checks that would still refuse the target's launch."""
        if self.report is None:
            return ()
        return tuple(c.name for c in self.report.unacknowledged(self.acknowledged))


@dataclass(frozen=True)
class ResumeDialogPlan:
    """A resume move's plan and, when the target will launch the cell, its preflight."""

    plan: ResumePlan
    preflight: TargetPreflight | None = None

    @property
    def ok(self) -> bool:
        """The move may go: its plan holds and no failed check waits for its Acknowledge."""
        waiting = self.preflight.unacknowledged if self.preflight is not None else ()
        return self.plan.ok and not waiting

    @property
    def needs_from_scratch(self) -> bool:
        """The cell ran and no verified checkpoint of it is here: only --from-scratch moves it."""
        p = self.plan
        return p.ran and p.checkpoint is None and not p.from_scratch and bool(p.move.cells)


async def plan_resume_with_preflight(
    fleet: Fleet,
    source: HostConfig,
    name: str,
    dest: str,
    source_transport: Transport,
    dest_transport: Transport,
    *,
    from_scratch: bool = False,
    acks: Iterable[str] = (),
) -> ResumeDialogPlan:
    """``plan_resume_move``, then, when it holds and the target will run the cell, the
    target's preflight (one cell budgeted) with ``acks`` acknowledged."""
    plan = await plan_resume_move(
        fleet, source, name, dest, source_transport, dest_transport, from_scratch=from_scratch
    )
    if not (plan.ok and plan.ran):
        return ResumeDialogPlan(plan)
    target = fleet.host(plan.move.dest)
    acked = tuple(dict.fromkeys(a for a in acks if a))
    try:
        await dest_transport.connect()
        report = await run_preflight(fleet, target, dest_transport, cells=1)
    except TransportError as exc:
        why = f"preflight on {target.name} could not run: {printable(exc.message, 300)}"
        return ResumeDialogPlan(plan, TargetPreflight(target.name, None, acked, error=why))
    host_acks = preflight_acks(target)
    return ResumeDialogPlan(plan, TargetPreflight(target.name, report, acked, host_acks))
