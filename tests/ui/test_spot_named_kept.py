"""A TUI started after a preemption still names it on the box's pane (UX trial H6).

docs/spot.md: "The preemption stays named until the box runs its queue again … on its
pane and for diagnose". A first runtime (the open TUI, or ``watch``) names it and keeps it
beside the fleet's journal; the box answers again with nothing running; a TUI started
then showed "connected" and no ⚡ line, while ``diagnose`` still named it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.pilot import make_app, screen_text, wait_for
from support.samples import FROZEN, agent_sample, make_update, write_fleet

from rgt_tui.domain.preemption import RESTARTED, Checkpoint, hhmm
from rgt_tui.messages import HostUpdated
from rgt_tui.paths import journal_dir
from rgt_tui.services.runtime.preemption import PreemptionWatch, named_preemption, preempt_dir
from rgt_tui.services.telemetry import ConnectionState

pytestmark = pytest.mark.usefixtures("utc")
HOST = "spot1"
FLEET = f"""\
[[hosts]]
name = "{HOST}"
ssh = "root@10.0.0.7:40022"
profile = "vastai"
interruptible = true
"""


def flat(app) -> str:
    return " ".join(" ".join(row.strip(" │┃║").split()) for row in screen_text(app).splitlines())


async def test_a_tui_started_after_the_preemption_names_it_on_the_pane(tmp_path: Path) -> None:
    fleet = write_fleet(tmp_path, FLEET)
    host = fleet.host(HOST)
    # The first runtime: the cell runs, the box restarts (a new PID 1), it is named.
    first = PreemptionWatch(
        fleet,
        memory_dir=preempt_dir(journal_dir(fleet.path)),
        checkpoint=lambda h, c: Checkpoint("step-21.pt", FROZEN - 900, 10, 21),
    )
    running = agent_sample(HOST, t=FROZEN - 600, cell="eta_long", container_start=1000)
    first.observe(host, make_update(HOST, running), FROZEN - 600)
    back = make_update(HOST, agent_sample(HOST, t=FROZEN - 300, container_start=2000))
    named = first.observe(host, back, FROZEN - 300)
    assert named is not None and named.kind == RESTARTED
    first.with_checkpoint(host, named)
    assert named_preemption(fleet, HOST) is not None  # what diagnose and queue show read

    # A TUI started now: the box answers from that same start, nothing running.
    app = make_app(tmp_path, fleet=fleet)
    line = f"preempted at ~{hhmm(FROZEN - 600)}: cell eta_long interrupted; last verified step 21"
    async with app.run_test(size=(100, 50)) as pilot:
        for seq in (1, 2):
            quiet = agent_sample(HOST, t=FROZEN + seq, seq=seq, container_start=2000)
            app.post_message(
                HostUpdated(make_update(HOST, quiet, ConnectionState("connected", FROZEN)))
            )
        await wait_for(lambda: line in flat(app), pilot=pilot)
        # Named once, by the first runtime: this one tells nothing again.
        assert app.runtime.preemptions.current[HOST].key == named.key


async def test_the_overview_says_preempted_as_the_pane_does(tmp_path: Path) -> None:
    """Hour s24a #7: the pane read "⚡ preempted?" for a silent interruptible box, its
    detail screen's Overview "the run may still be alive"."""
    from rgt_tui.content.host_text import ALIVE_NOTE

    fleet = write_fleet(tmp_path, FLEET)
    app = make_app(tmp_path, fleet=fleet)
    async with app.run_test(size=(100, 50)) as pilot:
        running = agent_sample(HOST, t=FROZEN - 60, cell="eta_long")
        app.post_message(HostUpdated(make_update(HOST, running, ConnectionState("connected", 0))))
        silent = ConnectionState("reconnecting", FROZEN - 30, attempt=3)
        app.post_message(HostUpdated(make_update(HOST, running, silent)))
        await wait_for(lambda: "preempted? unreachable since" in flat(app), pilot=pilot)
        await pilot.press("enter")
        await wait_for(lambda: "Overview" in flat(app) and "reconnecting" in flat(app), pilot=pilot)
        text = flat(app)
        assert "preempted? unreachable since" in text and ALIVE_NOTE not in text, text
