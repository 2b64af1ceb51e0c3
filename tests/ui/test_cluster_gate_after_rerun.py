"""A cluster's Teardown tab said "✓ the gate opened: nothing to destroy" after its queue
ran again (an ``R`` retry of a Slurm cell; the s39 Slurm hour), while the retried cell's
work was still to come. A run that starts after the gate was checked outdates it: the tab
says the opening was before that run, and a re-check that finds the gate shut drops it.

The host's queue is a real loopback box's; the opened cluster gate is handed to the
App's jobs as a Slurm teardown leaves it (no cluster runs here for this check)."""

from __future__ import annotations

from pathlib import Path

from support.pilot import make_app, text_of, wait_for
from support.queues import SCRIPT_RUN, launched_holding, wait_view
from textual.widgets import Static

from rgt_tui.domain.queue_state import FINISHED
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.services.teardown.confirm import TeardownOutcome

OPENED = TeardownOutcome(
    ran=False, ok=True, exit_status=None, output="", instructions="every job ended", cluster=True
)


async def test_a_run_after_the_gate_opened_says_so_and_a_shut_gate_drops_it(
    make_queue_fleet, tmp_path: Path
) -> None:
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    running = await launched_holding(qf)
    (qf.root() / "go").touch()
    ended = await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to end")
    app = make_app(tmp_path, fleet=qf.fleet)
    async with app.run_test(size=(120, 48)) as pilot:
        jobs = app.jobs
        app.runtime.queue_viewed("box1", ended)
        jobs.request("box1", "gate")
        await wait_for(lambda: jobs.state("box1").gate is not None, 60, pilot=pilot)
        await wait_for(lambda: not jobs.state("box1").running, 60, pilot=pilot)
        jobs.learned("box1", teardown=OPENED)  # as a Slurm host's teardown leaves it
        app.open_host("box1")
        detail = await wait_for(
            lambda: isinstance(app.screen, HostDetailScreen) and app.screen, pilot=pilot
        )
        detail.action_show_tab("teardown")

        def outcome() -> str:
            return text_of(detail.query_one("#teardown-outcome", Static))

        await wait_for(lambda: "✓ the gate opened" in outcome(), pilot=pilot)
        app.runtime.queue_viewed("box1", running)  # the queue runs again (a retry)
        await wait_for(lambda: "its queue ran again from" in outcome(), pilot=pilot)
        assert "✓ the gate opened" not in outcome()
        assert "the gate opened, but its queue ran again from" in outcome()
        assert "Ctrl+R re-checks" in outcome()
        # The re-check finds the gate shut (nothing pulled here): the opening goes.
        jobs.request("box1", "gate")
        await wait_for(lambda: jobs.state("box1").teardown is None, 60, pilot=pilot)
        await wait_for(lambda: "gate opened" not in outcome(), pilot=pilot)
