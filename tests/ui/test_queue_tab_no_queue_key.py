"""A box running a queue whose entry names no `queue` file (launched from another
checkout, or the line since removed): its Queue tab showed "has no queue" while the cell
ran, and the gate's fix pointed at the tab's X (hour s19b #3). Over a real loopback box:
the tab reads the box's own records, says whose they are, and S / X have the view."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

from support.pilot import SIZE, make_app, open_queue_body, wait_for
from support.queues import SCRIPT_RUN, wait_view

from rgt_tui.domain.queue_state import RUNNING
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.services.queue.launch import launch, plan_launch


async def test_the_queue_tab_shows_a_queue_launched_from_elsewhere(
    make_queue_fleet: Any, tmp_path: Path
) -> None:
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    hold = qf.cell_script("hold", 'while [ ! -e "$HOME/go" ]; do sleep 0.05; done')
    qf.write_queue(f"{hold} t\n")
    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, qf.host(), transport, preflight=False), transport)
    await transport.close()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="hold to run")
    fleet = dataclasses.replace(
        qf.fleet, hosts=tuple(dataclasses.replace(h, queue=None) for h in qf.fleet.hosts)
    )
    app = make_app(tmp_path, fleet=fleet, start_monitors=True, clock=time.time)
    try:
        async with app.run_test(size=SIZE) as pilot:
            body = await open_queue_body(app, pilot)
            await wait_for(
                lambda: "hold" in body() and "entry names no queue file" in body(),
                90,
                what="the box's own records on the Queue tab",
                pilot=pilot,
            )
            assert "has no queue" not in body()
            screen = app.screen
            assert isinstance(screen, HostDetailScreen)
            assert screen.queue_view is not None and screen.queue_view.current is not None
    finally:
        (qf.root() / "go").touch()
