"""`launch --yes` with no start never runs done cells again (h472 #2): on a finished
queue its default start is 0, and --yes ran every done cell into its {out} once more.
A start typed says the user means it. Real loopback box, real runner, the real CLI."""

from __future__ import annotations

from support.cli import arun
from support.queues import SCRIPT_RUN, wait_view

from rgt_tui.domain.queue_state import DONE, FINISHED


async def test_launch_yes_refuses_to_run_done_cells_again_unless_a_start_is_named(
    make_queue_fleet,
):  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    cells = [qf.cell_script(n, f"echo {n} >> $HOME/ran") for n in ("a", "b")]
    qf.write_queue("".join(f"{c} t\n" for c in cells))
    hosts = qf.loopback.hosts_file
    first = await arun("launch", "box1", "--hosts", hosts, "--yes")
    assert first.returncode == 0, first.stdout + first.stderr
    await wait_view(qf, lambda v: v.state == FINISHED, what="the first run")
    ran = qf.root() / "ran"
    assert ran.read_text() == "a\nb\n"

    again = await arun("launch", "box1", "--hosts", hosts, "--yes")
    said = " ".join(again.stderr.split())
    assert again.returncode != 0, again.stdout + again.stderr
    assert "not launched: cells 0, 1 are done and would run again into their {out}" in said, said
    assert "rgt-tui launch box1 --start 0 --yes" in said, said
    assert ran.read_text() == "a\nb\n"  # nothing ran

    meant = await arun("launch", "box1", "--hosts", hosts, "--yes", "--start", "1")
    assert meant.returncode == 0, meant.stdout + meant.stderr
    from support.waiting import wait_for

    await wait_for(lambda: ran.read_text() == "a\nb\nb\n", 60, "cell 1 to run again")
    view = await wait_view(qf, lambda v: v.state == FINISHED, what="the second run")
    assert [c.status for c in view.cells] == [DONE, DONE]
