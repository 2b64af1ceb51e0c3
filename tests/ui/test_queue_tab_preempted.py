"""The Queue tab of a box named preempted: its last read still said "cell … running" with
S and X offered, after the box was gone and its cell moved (hour s21a #8). The tab says
the box is gone and what moves the cell."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.pilot import make_app, screen_text, wait_for
from support.samples import FROZEN, agent_sample, make_update, write_fleet
from textual.widgets import Static

from rgt_tui.domain.preemption import LOST, Preemption, hhmm
from rgt_tui.domain.queue_state import RUNNING, CellView, QueueView
from rgt_tui.messages import HostUpdated
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.services.telemetry import ConnectionState

pytestmark = pytest.mark.usefixtures("utc")
HOST = "spot1"
FLEET = f"""\
[[hosts]]
name = "{HOST}"
ssh = "root@10.0.0.7:40022"
profile = "vastai"
interruptible = true
queue = "q.txt"
run = "python train.py --config {{cfg}}"
"""


async def test_the_queue_tab_of_a_preempted_box_says_it_is_gone(tmp_path: Path) -> None:
    fleet = write_fleet(tmp_path, FLEET)
    app = make_app(tmp_path, fleet=fleet)
    cells = (CellView(0, "eta_long", RUNNING, started_at=int(FROZEN - 900)),)
    view = QueueView(HOST, "running", cells, None, "boot", int(FROZEN - 600), None, True)
    async with app.run_test(size=(110, 40)) as pilot:
        await pilot.pause()
        app.runtime.queues.views[HOST] = view
        sample = agent_sample(HOST, t=FROZEN - 600, cell="eta_long", container_start=1000)
        app.post_message(HostUpdated(make_update(HOST, sample, ConnectionState("lost", FROZEN))))
        app.open_host(HOST, "queue")
        screen = await wait_for(
            lambda: app.screen if isinstance(app.screen, HostDetailScreen) else None, pilot=pilot
        )

        def body() -> str:
            found = screen.query(".queue-body").results(Static)
            return "\n".join(str(getattr(b.visual, "plain", b.visual)) for b in found)

        await wait_for(lambda: "eta_long" in body(), what="the last read", pilot=pilot)
        assert "the box is gone" not in body()  # only "preempted?": not named yet
        named = Preemption(HOST, LOST, FROZEN - 600, "boot/1000", "eta_long")
        app.runtime.preemptions.current[HOST] = named
        screen.query_one("QueueTab").show_queue(view)  # the poller's next view
        said = f"preempted at ~{hhmm(FROZEN - 600)}: the box is gone, so nothing here runs now"
        await wait_for(lambda: said in body(), what="the preemption on the tab", pilot=pilot)
        assert "m moves the interrupted cell" in screen_text(app)
