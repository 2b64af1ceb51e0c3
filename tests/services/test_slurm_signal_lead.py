"""The Slurm warning signal's lead (SLURM2) on a real one-node cluster: a launch plan
whose signal_lead_s does not cover checkpoint_write_s plus Slurm's 60 s slack is refused
by the ``signal-lead`` check, and goes ahead once that check is acknowledged by name."""

from __future__ import annotations

import pytest
from support.queues import SCRIPT_RUN

from rgt_tui.services.queue.backends import backend_for


@pytest.mark.timeout(180)
async def test_a_lead_inside_the_write_and_the_slack_is_refused_until_acknowledged(
    slurm_queue_fleet,
):  # type: ignore[no-untyped-def]
    qf = await slurm_queue_fleet(
        1, run=SCRIPT_RUN, mem="100M", signal_lead_s=100, checkpoint_write_s=90
    )
    qf.write_queue(f"{qf.cell_script('one', 'echo one')} t 1\n")
    host, transport = qf.host(), qf.transport()
    try:
        await transport.connect()
        plan = await backend_for(host).plan_launch(qf.fleet, transport)
        lead = [p for p in plan.problems if p.startswith("preflight check 'signal-lead'")]
        assert not plan.ok and len(lead) == 1, plan.problems
        assert "signal_lead_s = 100 on box1 is shorter than checkpoint_write_s 90 s" in lead[0]
        assert "set signal_lead_s = 150 or more" in lead[0] and "--ack signal-lead" in lead[0]

        plan = await backend_for(host).plan_launch(qf.fleet, transport, acks=["signal-lead"])
        assert plan.ok, plan.problems
        assert any(
            "preflight check 'signal-lead' failed (acknowledged for this launch)" in w
            for w in plan.warnings
        ), plan.warnings

        # Without preflight (an append's plan) the lead is still the launch's to refuse.
        plan = await backend_for(host).plan_launch(qf.fleet, transport, preflight=False)
        assert any(p.startswith("preflight check 'signal-lead'") for p in plan.problems)
    finally:
        await transport.close()
