"""ux-e #2: `d` on an interruptible box that does not answer says what to do about its
cell (move it), not only "connection refused". A real loopback box, stopped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support.pilot import SIZE, text_of, wait_for
from test_app_queue import queue_app
from textual.widgets import Static

from rgt_tui.screens.diagnosis import DiagnosisScreen


async def test_d_on_a_silent_spot_box_says_to_move_its_cell(
    make_queue_fleet: Any, tmp_path: Path
) -> None:
    qf = await make_queue_fleet(1)
    hosts = qf.loopback.hosts_file
    hosts.write_text(hosts.read_text().rstrip("\n") + "\ninterruptible = true\n")
    await qf.loopback.box("box1").stop()
    app = queue_app(qf, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("d")
        await wait_for(lambda: isinstance(app.screen, DiagnosisScreen), pilot=pilot)

        def said() -> str:
            return " ".join(text_of(app.screen.query_one("#diagnosis-body", Static)).split())

        await wait_for(lambda: "Could not diagnose" in said(), pilot=pilot)
        text = said()
        assert "connection refused" in text, text
        assert (
            "box1 does not answer (preempted?): move the interrupted cell: "
            "rgt-tui queue move CELL --to HOST" in text
        ), text
