"""The roster line never offers to accept as missing a cell whose results may still
come (h618 #1), over a real loopback box and the real command line: a cell appended to
a queue that runs, waiting behind a running one, read "one not wanted: `rgt-tui teardown
box1 --ack-missing cellD`", and that command was refused ("cellD is pending on box1, in
a queue that runs … nothing was acknowledged", exit 2). The line says what works: wait
for it and pull, or stop its queue first; then accepting it goes through."""

from __future__ import annotations

from pathlib import Path

from support.cli import arun
from support.queues import GATE, SCRIPT_RUN, QueueFleet, wait_view
from support.unfinished import METRICS, launch_queue, pull_and_verify

from rgt_tui.domain.queue_state import RUNNING
from rgt_tui.services.queue.append import append_cells


async def _cli(qf: QueueFleet, tmp_path: Path, *args: str):  # type: ignore[no-untyped-def]
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "RGT_HOSTS": str(qf.loopback.hosts_file)}
    return await arun(*args, env=env, cwd=tmp_path)


def _roster_fix(out: str) -> str:
    lines = out.splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("  [ ] roster"))
    return " ".join(lines[at + 1].split())


async def test_a_cell_waiting_in_a_running_queue_is_not_offered_as_missing(
    make_queue_fleet, tmp_path: Path
) -> None:
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    held = qf.cell_script("cellG", GATE)
    qf.write_queue(f"{qf.cell_script('cellA', METRICS)} t\n{held} t\n")
    await launch_queue(qf)
    await wait_view(qf, lambda v: v.cells[1].status == RUNNING, what="cellG to run")
    await pull_and_verify(qf)
    qf.append_queue(f"{qf.cell_script('cellD', METRICS)} t\n")
    transport = qf.transport()
    try:
        assert (await append_cells(qf.fleet, qf.host(), transport)).added  # after cellG
    finally:
        await transport.close()

    check = await _cli(qf, tmp_path, "teardown", "box1", "--check", "--ack-running", "cellG")
    out = check.stdout
    assert check.returncode == 1, out + check.stderr
    said = _roster_fix(out)
    assert "one not wanted" not in said, out
    assert said == (
        "→ cellD waits to run in a queue that runs, so its results may still come: wait "
        "for it to end, then `rgt-tui pull box1` and `rgt-tui verify box1`, which count "
        "it; to go without them, stop its queue before it (`rgt-tui queue stop box1`), "
        "then accept it as missing (`rgt-tui teardown box1 --ack-missing cellD`)"
    ), out

    # The fix, followed: the queue stopped before cellD, its acknowledgement goes through.
    stopped = await _cli(qf, tmp_path, "queue", "stop", "box1", "--yes")
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    (qf.root() / "go").touch()  # cellG ends; the stopped queue does not start cellD
    await wait_view(qf, lambda v: v.cells[1].status != RUNNING, what="cellG to end")
    acked = await _cli(qf, tmp_path, "teardown", "box1", "--check", "--ack-missing", "cellD")
    assert acked.returncode != 2, acked.stdout + acked.stderr
    assert "recorded for this box in the journal: cellD accepted as missing" in acked.stdout
