"""The Queue tab (its poll) and `queue show` say when the host's queue file cannot be read (a typo in
its ``queue`` path saved while the queue runs): its "not sent" lines vanished without a
word (s37 fleet hour #7). Real loopback box, the real launch."""

from __future__ import annotations

import dataclasses

from support.queues import SCRIPT_RUN, wait_view

from rgt_tui.domain.queue_state import FINISHED
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.queue.append import against_box
from rgt_tui.services.queue.launch import launch, plan_launch
from rgt_tui.services.runtime.queues import QueuePoller


async def test_a_queue_path_that_names_no_file_is_said_beside_the_boxs_copy(make_queue_fleet):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.write_queue(f"{qf.cell_script('a', 'exit 0')} t\n")
    transport = qf.transport()
    try:
        await launch(await plan_launch(qf.fleet, qf.host(), transport, preflight=False), transport)
        view = await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to finish")
        qf.append_queue(f"{qf.cell_script('b', 'exit 0')} t\n")
        compared = await against_box(qf.host(), transport, view, qf.fleet)
        assert compared.not_sent is not None and compared.changed is None  # b waits

        queue = qf.host().queue
        typo = dataclasses.replace(qf.host(), queue=queue.with_name("q" + queue.name))
        fleet = dataclasses.replace(qf.fleet, hosts=(typo,))
        compared = await against_box(typo, transport, view, fleet)
        assert compared.not_sent is None
        assert compared.changed is not None and "queue file not found" in compared.changed
        assert "fix the queue path in that entry" in compared.changed, compared.changed
        assert compared.changed.endswith("; the box runs its own copy of the queue")

        # The Queue tab's poll says it too (it stat'ed the file and gave up, unsaid).
        connections = FleetConnections(fleet.hosts)
        poller = QueuePoller(
            connections, on_view=lambda h, v: None, is_live=lambda h: True, fleet=lambda: fleet
        )
        try:
            polled = await poller.poll_once(typo)
        finally:
            await connections.close_all()
        assert polled is not None and "queue file not found" in polled.sent_changed, polled
    finally:
        await transport.close()
