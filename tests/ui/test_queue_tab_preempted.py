"""The Queue tab of a box named preempted: its last read still said "cell … running" with
S and X offered, after the box was gone and its cell moved (hour s21a #8). The tab says
the box is gone and what moves the cell."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from support.pilot import make_app, screen_text, text_of, wait_for
from support.samples import FROZEN, agent_sample, make_update, write_fleet
from textual.widgets import Static

from rgt_tui.domain.preemption import LOST, Preemption, hhmm
from rgt_tui.domain.queue_state import PENDING, RUNNING, CellView, QueueView
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
    cells = (
        CellView(0, "eta_long", RUNNING, started_at=int(FROZEN - 900)),
        CellView(1, "zeta", PENDING),
    )
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

        # Moved (the spot controller's look after the queue file changed): the tab says
        # where, not "m moves" again (s43 spot hour #3), without waiting for a new view.
        async def named_now(p: Preemption, said: str) -> None:
            """The runtime names ``p`` and tells the screen; the tab comes to say ``said``."""
            app.runtime.preemptions.current[HOST] = p
            screen.host_preempted(HOST, p)
            await wait_for(lambda: said in body(), what=said, pilot=pilot)
            assert "m moves the interrupted cell" not in screen_text(app)

        await named_now(replace(named, moved_to="spot2"), "its cell eta_long was moved to spot2")
        # The cell not run yet, left behind, is said (s44 spot hour #6).
        assert "; 1 cell not run yet stays here — m moves one at a time" in body(), body()
        # Named with no cell running then (it had died before): nothing was interrupted,
        # and a cell moved by hand since is not offered to m again (h502 #1, #3).
        await named_now(replace(named, cell=None), "no cell was running then")
        assert "m moves a cell it did not finish to another box" in body(), body()


async def test_the_move_dialog_of_a_silent_box_lists_its_cell_as_last_read(
    tmp_path: Path,
) -> None:
    """m on a box that no longer answers listed its cell as ``eta_long (running)``, from the
    last read, beside the tab's "nothing here runs now" (s35 resume hour #8): the list says
    it is the last read, and when."""
    from rgt_tui.content.host_text import clock_hhmm
    from rgt_tui.screens.queue_move_dialog import QueueMoveScreen

    fleet = write_fleet(tmp_path, FLEET)
    app = make_app(tmp_path, fleet=fleet)
    cells = (CellView(0, "eta_long", RUNNING, started_at=int(FROZEN - 900)),)
    view = QueueView(HOST, "running", cells, None, "boot", int(FROZEN - 600), None, True)
    async with app.run_test(size=(110, 40)) as pilot:
        await pilot.pause()
        app.runtime.queues.views[HOST] = view
        sample = agent_sample(HOST, t=FROZEN - 600, cell="eta_long", container_start=1000)
        app.post_message(HostUpdated(make_update(HOST, sample, ConnectionState("lost", FROZEN))))
        await wait_for(
            lambda: app.runtime.latest.get(HOST) is not None, what="the update", pilot=pilot
        )
        app._open_queue_screen("move", fleet.hosts[0])
        screen = await wait_for(
            lambda: app.screen if isinstance(app.screen, QueueMoveScreen) else None, pilot=pilot
        )
        found = await wait_for(
            lambda: list(screen.query("#move-notes").results(Static)), what="notes", pilot=pilot
        )
        notes = text_of(found[0])
        assert "(running)" not in notes, notes
        said = f"Its cells as last read at {clock_hhmm(FROZEN - 600)} (the box does not answer)"
        assert said in notes and "eta_long (running when last read)" in notes, notes
