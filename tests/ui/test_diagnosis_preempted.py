"""The TUI's diagnosis (`d`) weighs a named preemption as `rgt-tui diagnose` does: a run
that vanished on a box the runtime named preempted reads "preempted", not "manual kill",
with the move beside the relaunch. Loopback boxes and the real runner."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from support.pilot import SIZE, screen_text, wait_for
from support.queues import GATE, SCRIPT_RUN, wait_view
from support.unfinished import launch_queue
from test_app_queue import queue_app

from rgt_tui.domain.preemption import LOST, Preemption
from rgt_tui.domain.queue_state import STOPPED
from rgt_tui.paths import journal_dir
from rgt_tui.screens.diagnosis import DiagnosisScreen
from rgt_tui.services.runtime.preemption import PreemptionWatch, preempt_dir


async def test_the_diagnosis_screen_names_a_named_preemption(
    make_queue_fleet: Any, tmp_path: Path
) -> None:
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.write_queue(f"{qf.cell_script('gate', GATE)} t 1\n")
    await launch_queue(qf)
    await wait_view(qf, lambda v: v.cells[0].status == "running", what="gate to run")
    qf.kill_session()  # the runner and its cell die at once, as in a preemption
    await wait_view(qf, lambda v: v.state == STOPPED, what="the queue to stop")

    app = queue_app(qf, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("d")
        await wait_for(lambda: isinstance(app.screen, DiagnosisScreen), pilot=pilot)
        await wait_for(lambda: "manual kill" in screen_text(app), pilot=pilot)
        assert "preempted" not in screen_text(app)
        await pilot.press("escape")

        # The runtime (here, as watch keeps it) names box1 preempted: d says so now.
        named = Preemption("box1", LOST, 1_700_000_000.0, "boot/1", "gate")
        memory = PreemptionWatch(qf.fleet, memory_dir=preempt_dir(journal_dir(qf.fleet.path)))
        memory.current["box1"] = named
        memory.with_checkpoint(qf.host("box1"), replace(named))
        await wait_for(lambda: not isinstance(app.screen, DiagnosisScreen), pilot=pilot)
        await pilot.press("d")
        await wait_for(lambda: isinstance(app.screen, DiagnosisScreen), pilot=pilot)
        await wait_for(lambda: "cause  preempted" in screen_text(app), pilot=pilot)
        text = screen_text(app)
        assert "rgt-tui queue move gate --to" in text, text
