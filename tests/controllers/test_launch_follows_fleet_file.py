"""The launch and retry dialogs plan with the fleet file as applied when each plan is made
(``LaunchControl.current``): a workdir changed while the dialog was open was ignored by
its re-plan, and the launch ran in the old folder (s37 fleet hour #3)."""

from __future__ import annotations

import dataclasses
from typing import Any

from support.queues import SCRIPT_RUN

from rgt_tui.controllers.launch_plan import LaunchControl
from rgt_tui.domain.queue_state import FAILED, CellView
from rgt_tui.services.connections import FleetConnections


async def test_each_plan_reads_the_host_entry_applied_now(make_queue_fleet: Any) -> None:
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.write_queue(f"{qf.cell_script('a', 'exit 0')} t\n")
    applied = [qf.fleet]
    connections = FleetConnections(qf.fleet.hosts)
    try:
        control = LaunchControl(qf.fleet, qf.host(), connections, lambda: applied[-1])
        plan, error = await control.plan_launch(0, ())
        assert plan is not None and plan.ok, (error, plan and plan.problems)
        assert not control.stale()

        # The entry's workdir is changed in the file (and applied) with the dialog open:
        # the plan shown is stale (Launch plans again instead of launching it), and the
        # next plan is made with the new entry.
        moved = dataclasses.replace(qf.host(), workdir=qf.host().workdir + "x")
        applied.append(dataclasses.replace(qf.fleet, hosts=(moved,)))
        assert control.stale()
        plan, error = await control.plan_launch(0, ())
        assert not control.stale()
        assert plan is not None and not plan.ok, error
        assert any(f"workdir {moved.workdir} does not exist" in p for p in plan.problems), (
            plan.problems
        )
        assert control.host.workdir == moved.workdir  # the launch goes where it planned

        # The entry removed (or renamed): no plan against what is no longer there.
        applied.append(dataclasses.replace(qf.fleet, hosts=()))
        plan, error = await control.plan_launch(0, ())
        assert plan is None and "box1 is no longer in the fleet file" in error
        failed = CellView(0, "a", FAILED, exit_code=1, started_at=1, ended_at=2)
        retry, error = await control.plan_retry(failed, (), True)
        assert retry is None and "box1 is no longer in the fleet file" in error
    finally:
        await connections.close_all()
