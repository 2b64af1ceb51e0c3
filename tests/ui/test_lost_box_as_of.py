"""ux-e #4: a box lost mid-run does not read live: its Queue tab says its queue is the
last read, as of when, and the running cell's checkpoint ages, on the tab and on the
pane, say "as of HH:MM: the box does not answer" instead of ages that never advance.
A real loopback box (OpenSSH sshd, the real runner), the real app and its monitors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support.machine import kill_processes_under
from support.pilot import SIZE, screen_text, text_of, wait_for
from support.queues import GATE, SCRIPT_RUN, wait_view
from support.unfinished import launch_queue
from test_app_queue import queue_app
from textual.widgets import Static

from rgt_tui.screens.tabs.queue import QueueTab
from rgt_tui.widgets.host_pane import HostPane

SILENT = "the box does not answer"


def flat(app: Any) -> str:
    """The screen's text without the panes' borders, as one line."""
    return " ".join(" ".join(row.strip(" │┃║").split()) for row in screen_text(app).splitlines())


async def test_a_lost_box_reads_as_of_its_last_answer(make_queue_fleet: Any, tmp_path: Path):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.write_queue(f"{qf.cell_script('gate', GATE)} t 1\n")
    await launch_queue(qf)
    await wait_view(qf, lambda v: v.cells[0].status == "running", what="gate to run")

    app = queue_app(qf, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(
            lambda: (
                (u := app.latest.get("box1")) is not None
                and u.snapshot is not None
                and u.snapshot.cell == "gate"
            ),
            pilot=pilot,
        )
        app.open_host("box1", tab="queue")
        tab = await wait_for(lambda: next(iter(app.screen.query(QueueTab)), None), pilot=pilot)

        def body() -> str:
            return " ".join(
                " ".join(text_of(s).split()) for s in tab.query(".queue-body").results(Static)
            )

        await wait_for(lambda: "gate" in body() and "running" in body(), pilot=pilot)
        assert SILENT not in body()

        await qf.loopback.box("box1").stop()
        kill_processes_under(qf.root("box1"))
        await wait_for(lambda: SILENT in body(), pilot=pilot, what="the tab to say as of")
        said = body()
        assert "as of " in said and "its last read" in said, said
        assert "(as of " in said.split("gate: ", 1)[1], said  # the cell's ages, dated
        await pilot.press("escape")
        await wait_for(lambda: app.screen.query(HostPane), pilot=pilot)
        await wait_for(lambda: SILENT in flat(app), pilot=pilot, what="the pane to say as of")
        assert "(as of " in flat(app) and SILENT in flat(app), flat(app)
        # The pane's queue line says it is the last read, not a live "running".
        assert "last read: queue " in flat(app), flat(app)
