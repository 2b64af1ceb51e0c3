"""Hour s25b #1, review s25 #7: `teardown --ack-missing` of a cell the queue still runs is
refused from the box's state now (the command checks first), as bad input, once. A
loopback box running the real runner, the real command line."""

from __future__ import annotations

import pytest
from support.cli import arun
from support.queues import SCRIPT_RUN, launched_holding, wait_view

from rgt_tui.domain.queue_state import RUNNING


@pytest.mark.timeout(300)
async def test_a_pending_cell_of_a_running_queue_is_not_accepted_as_missing(make_queue_fleet):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    await launched_holding(qf, f"{qf.cell_script('later', 'echo later')} t 1\n")
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="hold to run")
    hosts = str(qf.loopback.hosts_file)
    for cell, words in (("later", "later is pending on box1"), ("hold", "hold is running on box1")):
        refused = await arun("teardown", "box1", "--ack-missing", cell, "--hosts", hosts)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert words in refused.stderr and refused.stderr.count("nothing was acknowledged") == 1
        assert "recorded for this box" not in refused.stdout
    (qf.root() / "go").touch()
