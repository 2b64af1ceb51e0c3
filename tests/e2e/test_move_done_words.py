"""Hour s25a #3: `queue move` of a done, verified cell printed three verdicts at once:
`REFUSED: … has verified results`, a `push:` line, and `warning: … has no verified
results: box2 runs it again`. The refusal now stands alone. A loopback box running the
real runner, a real pull and verify, the real command line."""

from __future__ import annotations

import pytest
from support.cli import arun
from support.queues import SCRIPT_RUN, wait_view
from support.resume_cell import pull_verify

from rgt_tui.domain.queue_state import DONE
from rgt_tui.services.queue.launch import launch, plan_launch


@pytest.mark.timeout(300)
async def test_a_done_verified_cell_is_refused_without_contrary_words(make_queue_fleet):
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    done = qf.cell_script("done", 'mkdir -p "$2"; echo \'{"acc": 1}\' > "$2/metrics.json"')
    qf.write_queue(f"{done} t 1\n", "box1")
    qf.write_queue("", "box2")
    transport = qf.transport("box1")
    try:
        await launch(await plan_launch(qf.fleet, qf.host("box1"), transport), transport)
    finally:
        await transport.close()
    await wait_view(qf, lambda v: v.cells[0].status == DONE, what="the cell to finish")
    assert (await pull_verify(qf, "box1")).ok

    moved = await arun("queue", "move", "done", "--to", "box2", "--yes",
                       "--hosts", qf.loopback.hosts_file)  # fmt: skip
    said = moved.stdout + moved.stderr
    assert moved.returncode != 0 and "REFUSED: " in said, said
    assert "moving it would run it again" in said
    assert "has no verified results" not in said
    assert not [line for line in said.splitlines() if line.lstrip().startswith("push:")], said
    assert qf.queue_file("box2").read_text() == ""
