"""A queue's runner seen running, then gone without its done record (killed from
outside): the TUI tells it once, as watch does (a toast, listed under n), not only as a
line under the pane's "✓ no alerts". Real loopback box, real views read from it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from support.pilot import make_app, wait_for
from support.queues import SCRIPT_RUN, launched_holding, wait_view

from rgt_tui.controllers.notices import notices_of
from rgt_tui.domain.queue_state import FINISHED, STOPPED
from rgt_tui.services.fleet.file import load_fleet


async def test_a_runner_gone_is_told_once(make_queue_fleet, tmp_path: Path) -> None:
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    running = await launched_holding(qf, f"{qf.cell_script('next', 'echo hi')} t\n")
    app = make_app(tmp_path, fleet=qf.fleet)
    async with app.run_test(notifications=True) as pilot:
        await pilot.pause()
        app.runtime.queue_viewed("box1", running)
        qf.kill_session()  # the runner and its cell, from outside: no done record
        gone = await wait_view(qf, lambda v: v.state == STOPPED, what="the runner gone")
        app.runtime.queue_viewed("box1", gone)
        title = "box1: the queue stopped: its runner is gone"

        def told() -> list[str]:
            return [n.title for n in notices_of(app).items() if n.title.startswith(title)]

        await wait_for(told, pilot=pilot)
        app.runtime.queue_viewed("box1", gone)  # read again: nothing new to tell
        await pilot.pause()
        assert len(told()) == 1
        notice = next(n for n in notices_of(app).items() if n.title.startswith(title))
        assert "rgt-tui diagnose box1" in notice.text and "resume from cell 0" in notice.text


async def test_a_queue_that_finishes_is_told_once(make_queue_fleet, tmp_path: Path) -> None:
    """Hour s24b #5: a queue ended with two failed cells and the TUI said nothing — no
    toast, nothing under n — while its box idled and billed on. Told as watch tells it."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    running = await launched_holding(qf, f"{qf.cell_script('broke', 'exit 3')} t\n")
    app = make_app(tmp_path, fleet=qf.fleet)
    async with app.run_test(notifications=True) as pilot:
        await pilot.pause()
        app.runtime.queue_viewed("box1", running)
        (qf.root() / "go").touch()  # the held cell ends; the next one fails
        ended = await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to end")
        app.runtime.queue_viewed("box1", ended)
        title = "box1: queue finished: 1/2 done, 1 failed"

        def told() -> list[str]:
            return [n.title for n in notices_of(app).items() if n.title.startswith(title)]

        await wait_for(told, pilot=pilot)
        app.runtime.queue_viewed("box1", ended)  # read again: nothing new to tell
        await pilot.pause()
        assert len(told()) == 1, told()
        notice = next(n for n in notices_of(app).items() if n.title.startswith(title))
        assert "broke" in notice.text


async def test_a_groups_runner_gone_is_told_by_the_group_not_by_each_box(
    make_queue_fleet, tmp_path: Path
) -> None:
    """A box's records of a group's job (it ran as a rank) stay quiet: the group's own
    view tells the job's news once (a user's hour: three notifications for one job)."""
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    running = await launched_holding(qf, f"{qf.cell_script('next', 'echo hi')} t\n")
    queue = tmp_path / "pair.txt"
    queue.write_text("")
    with qf.loopback.hosts_file.open("a") as f:
        f.write(
            f'\n[[groups]]\nname = "pair"\nhosts = ["box1", "box2"]\nqueue = "{queue}"\n'
            "run = 'bash {cfg} {node_rank} {out}'\n"
        )
    fleet = load_fleet(qf.loopback.hosts_file)
    app = make_app(tmp_path, fleet=fleet)
    async with app.run_test(notifications=True) as pilot:
        await pilot.pause()
        qf.kill_session()
        gone = await wait_view(qf, lambda v: v.state == STOPPED, what="the runner gone")
        as_rank = replace(running, group_job=True), replace(gone, group_job=True)
        for view in as_rank:  # read running, then gone (a view replaces one not yet read)
            for host in ("box1", "pair"):  # rank 0's records; the group's view of the same
                app.runtime.queue_viewed(host, view)
            await pilot.pause()

        def told() -> list[str]:
            return [n.title for n in notices_of(app).items() if "runner is gone" in n.title]

        await wait_for(told, pilot=pilot)
        await pilot.pause()
        assert told() == [
            "pair: the queue stopped: its runner is gone (0/2 done, 1 interrupted, 1 not run)"
        ], told()


async def test_a_groups_own_stop_is_told_once_in_the_notices(tmp_path: Path) -> None:
    """The TUI told a queue's end only for "finished" or "runner gone": a group stopped
    because a rank failed ("stopped: a rank failed") was told nothing at all, while the
    boxes idled and billed (a groups hour, s39 #2). Told once, naming the rank."""
    from support.group_views import stopped_group_view
    from support.pilot import write_fleet

    from rgt_tui.domain.queue_state import Q_RUNNING

    fleet = write_fleet(
        tmp_path,
        '[[hosts]]\nname = "b1"\nssh = "root@10.0.0.1"\n\n[[hosts]]\nname = "b2"\n'
        'ssh = "root@10.0.0.2"\n\n[[groups]]\nname = "pair"\nhosts = ["b1", "b2"]\n'
        "run = 'bash {cfg} {node_rank} {out}'\n",
    )
    app = make_app(tmp_path, fleet=fleet)
    view = stopped_group_view()
    async with app.run_test(notifications=True) as pilot:
        app.runtime.queue_viewed("pair", replace(view, state=Q_RUNNING))
        await pilot.pause()
        app.runtime.queue_viewed("pair", view)

        def told() -> list[str]:
            return [n.title for n in notices_of(app).items() if n.title.startswith("pair:")]

        await wait_for(told, pilot=pilot)
        app.runtime.queue_viewed("pair", view)  # read again: nothing new to tell
        await pilot.pause()
        assert told() == ["pair: queue stopped: a rank failed: 0/2 done, 1 failed, 1 not run"], (
            told()
        )
        notice = next(n for n in notices_of(app).items() if n.title.startswith("pair:"))
        assert "rank 1 (b2) failed first in cell 0 (fit)" in notice.text
