"""Whether a running cell voids the manifest is its start time against the manifest's
(h618 #2), over a real loopback box and the real command line, each check a process of
its own.

A cell running since before the pull is in its listing: the first check to see it
running said "no valid manifest (cell started: cellG)" and the next, with no pull
between, opened that line on the same manifest. A cell started after the pull voids it
on every check, not only the first: the second re-read the same pull as valid, and its
roster then offered `--ack-missing` of the running cell, which is refused (h618 #1);
meanwhile a failed cell's line said none of it was pulled and verified, though its
metrics.json was (h618 #3)."""

from __future__ import annotations

from pathlib import Path

from support.cli import arun
from support.queues import GATE, SCRIPT_RUN, QueueFleet, wait_view
from support.unfinished import FAILING, METRICS, launch_queue, pull_and_verify

from rgt_tui.domain.queue_state import RUNNING
from rgt_tui.services.queue.append import append_cells


async def _cli(qf: QueueFleet, tmp_path: Path, *args: str):  # type: ignore[no-untyped-def]
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "RGT_HOSTS": str(qf.loopback.hosts_file)}
    return await arun(*args, env=env, cwd=tmp_path)


def _line(out: str, key: str) -> str:
    found = [x for x in out.splitlines() if x.startswith("  [") and x[6:].split()[0] == key]
    assert found, out
    return found[0]


async def test_a_cell_running_since_before_the_pull_keeps_its_manifest_valid(
    make_queue_fleet, tmp_path: Path
) -> None:
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    alpha = qf.cell_script("cellA", METRICS)
    gated = qf.cell_script("cellG", GATE)  # writes nothing while it waits
    qf.write_queue(f"{alpha} t\n{gated} t\n")
    await launch_queue(qf)
    await wait_view(qf, lambda v: v.cells[1].status == RUNNING, what="cellG to run")
    # No check between the launch and the pull: the first check sees cellG running.
    await pull_and_verify(qf)

    acked = await _cli(qf, tmp_path, "teardown", "box1", "--check", "--ack-running", "cellG")
    out = acked.stdout
    assert "cell started" not in out, out
    assert _line(out, "manifest").startswith("  [x] manifest"), out
    assert _line(out, "idle").startswith("  [x] idle"), out
    again = await _cli(qf, tmp_path, "teardown", "box1", "--check")
    assert _line(again.stdout, "manifest") == _line(out, "manifest"), again.stdout


async def test_a_cell_started_after_the_pull_voids_it_on_every_check(
    make_queue_fleet, tmp_path: Path
) -> None:
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    held = qf.cell_script("cellH", GATE)
    failing = qf.cell_script("cellC", FAILING)  # leaves metrics.json, then fails
    qf.write_queue(f"{qf.cell_script('cellA', METRICS)} t\n{failing} t\n{held} t\n")
    await launch_queue(qf)
    await wait_view(qf, lambda v: v.cells[2].status == RUNNING, what="cellH to run")
    await pull_and_verify(qf)
    # Appended to the running queue after the pull: it starts once cellH ends.
    qf.append_queue(f"{qf.cell_script('cellD', GATE.replace('/go', '/go2'))} t\n")
    transport = qf.transport()
    try:
        assert (await append_cells(qf.fleet, qf.host(), transport)).added
    finally:
        await transport.close()
    # cellD starts past the pull's second: one started in the second the scan began
    # counts as before it (whole seconds), and a quick run started it there (CI).
    import json
    import time

    from support.waiting import wait_for

    taken = json.loads((qf.fleet.results_dir / "box1" / ".rgt" / "manifest.json").read_text())
    await wait_for(lambda: time.time() >= int(taken["taken_at"]) + 1.2, 10, "the next second")
    (qf.root() / "go").touch()
    await wait_view(qf, lambda v: v.cells[3].status == RUNNING, what="cellD to run")

    for _ in range(2):  # the same pull, read again by each check
        check = await _cli(qf, tmp_path, "teardown", "box1", "--check")
        out = check.stdout
        assert check.returncode == 1, out + check.stderr
        assert "no valid manifest (cell started: cellD)" in _line(out, "manifest"), out
        assert "--ack-missing" not in out, out
        # cellC/metrics.json was pulled and verified: its line does not deny it (h618 #3).
        unfinished = _line(out, "unfinished")
        assert "cellC failed" in unfinished and "nothing of it is pulled" not in unfinished
        assert "none of it counts as pulled and verified while no manifest is valid" in (
            unfinished
        ), out
