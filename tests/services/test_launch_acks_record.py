"""The launch's acknowledgements record (services.launch_acks): it applies only to the
launch it names (a queue launched since, by hand or elsewhere, inherits nothing), only
check names acknowledge anything, and a damaged record applies nothing."""

from __future__ import annotations

import json
from dataclasses import replace

from support.queues import SCRIPT_RUN, wait_view

from rgt_tui.services.queue.backends import backend_for
from rgt_tui.services.queue.control import plan_retry
from rgt_tui.services.queue.launch import launch, plan_launch
from rgt_tui.services.queue.launch_acks import acks_path, launch_recorded, load_launch_acks


async def test_the_record_applies_to_its_own_launch_only(make_queue_fleet) -> None:  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.set_preflight_ack(("torch", "driver", "arch"))
    qf.write_queue(f"{qf.cell_script('one', 'exit 3')} t\n")
    fleet, host, transport = qf.fleet, qf.host(), qf.transport()
    try:
        plan = await plan_launch(fleet, host, transport, acks=("gpu",))
        result, unrecorded = await launch_recorded(fleet, backend_for(host), plan, transport)
        assert unrecorded == ""
        record = load_launch_acks(fleet, "box1")
        assert record is not None and record.names == ("gpu",) and record.pid == result.pid
        await wait_view(qf, lambda v: v.cells[0].status == "failed" and not v.runner_alive)
        retry = await plan_retry(fleet, host, transport, ["one"])
        assert retry.ok and retry.launch_acks[0][0] == "gpu"

        # Launched since without this record (another machine, by hand): nothing applies.
        again = await plan_launch(fleet, host, transport, start_index=0, acks=("gpu",))
        await launch(again, transport)
        await wait_view(
            qf, lambda v: v.launch is not None and v.launch.pid != result.pid
            and not v.runner_alive,
        )  # fmt: skip
        retry = await plan_retry(fleet, host, transport, ["one"])
        assert not retry.ok and retry.launch_acks == ()
        assert retry.launch is not None and retry.launch.unacknowledged == ("gpu",)
    finally:
        await transport.close()

    # Only a check's name acknowledges; a damaged record acknowledges nothing.
    path = acks_path(fleet, "box1")
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "acks": [["gpu", "x"], ["rm -rf", "y"]]}))
    loaded = load_launch_acks(fleet, "box1")
    assert loaded is not None and loaded.names == ("gpu",)
    assert replace(loaded, pid=0).belongs_to(None) is False
    path.write_text("{not json")
    assert load_launch_acks(fleet, "box1") is None
