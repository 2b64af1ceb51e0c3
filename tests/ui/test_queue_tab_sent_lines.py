"""A line already sent to the box, edited in the local queue file: the box runs its own
copy, and only `queue show` and a refused append said so; the Queue tab showed the cells
alone (hour s20c #7). Over a real loopback box: the tab says it, and stops saying it once
the line is put back. A line added after the sent ones is listed as not sent, with the
key that sends it (review s26 #2: the poller compared and threw that away)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from support.pilot import SIZE, make_app, open_queue_body, wait_for
from support.queues import SCRIPT_RUN, wait_view

from rgt_tui.domain.queue_state import RUNNING, USER_STOPPED
from rgt_tui.services.queue.launch import launch, plan_launch
from rgt_tui.services.runtime import queues as queues_module

NOTE = "differs from the copy on box1 in lines already sent: the box runs its copy"


async def test_the_queue_tab_says_a_sent_line_was_edited_here(
    make_queue_fleet: Any, tmp_path: Path
) -> None:
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    hold = qf.cell_script("hold", 'while [ ! -e "$HOME/go" ]; do sleep 0.05; done')
    after = qf.cell_script("after", "echo after")
    sent = f"{hold} t\n{after} t\n"
    qf.write_queue(sent)
    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, qf.host(), transport, preflight=False), transport)
    await transport.close()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="hold to run")
    qf.write_queue(f"{hold} t\n{after} t2\n")  # the pending cell's task, edited here
    app = make_app(tmp_path, fleet=qf.fleet, start_monitors=True, clock=time.time)
    try:
        async with app.run_test(size=SIZE) as pilot:
            body = await open_queue_body(app, pilot)
            await wait_for(
                lambda: NOTE in body(), 90, what="the sent-lines note on the Queue tab", pilot=pilot
            )
            assert "line 2 locally:    'cells/after.sh t2'" in body()  # both, as queue show
            assert "line 2 on the box: 'cells/after.sh t'" in body()
            qf.write_queue(sent)  # put back as the box has it: the note goes
            await wait_for(
                lambda: "hold" in body() and NOTE not in body(),
                90,
                what="the note to go once the line is back",
                pilot=pilot,
            )
            extra = qf.cell_script("extra", "echo extra")
            qf.write_queue(sent + f"{extra} t\n")  # a line added: not on the box yet
            added = "not sent: 1 cell of "
            await wait_for(lambda: added in body(), 90, what="the not-sent cell", pilot=pilot)
            assert "(line 3), not on the box yet: a (Append) sends it, and the running " in body()
            row = next(line for line in body().splitlines() if "extra" in line)
            assert row.split() == ["2", "extra", "not", "sent", "line", "3"]
            # A line added under a name the file already uses: append refuses it, so the
            # tab does not say "a sends it" without the fault first (a user's hour).
            qf.write_queue(sent + f"{hold} t\n")
            await wait_for(
                lambda: "1 line added to " in body(), 90, what="the name at fault", pilot=pilot
            )
            assert "once the lines at fault are put right, a (Append) sends it" in body()
            # Its row is that line: marked at fault, not counted again (h491 #7: "2 cells
            # … and 3 lines at fault" read as 5).
            assert "cannot run as written (listed above, at fault): rgt-tui queue check " in body()
            row = next(line for line in body().splitlines() if line.endswith("line 3"))
            assert row.split() == ["2", "hold", "at", "fault", "line", "3"], row
            qf.write_queue(sent)
            await wait_for(lambda: added not in body(), 90, what="the row to go", pilot=pilot)
    finally:
        (qf.root() / "go").touch()


async def test_a_queue_never_sent_lists_the_files_cells_with_the_key_that_launches_them(
    make_queue_fleet: Any, tmp_path: Path
) -> None:
    """A user's hour (session 29): box2's Queue tab read "queue not deployed · no cells on
    the box" while `rgt-tui queue show box2` listed the file's three cells. The tab
    lists them too, as not sent, with L."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    first, second = qf.cell_script("first", "echo 1"), qf.cell_script("second", "echo 2")
    qf.write_queue(f"{first} t\n{second} t\n")
    app = make_app(tmp_path, fleet=qf.fleet, start_monitors=True, clock=time.time)
    async with app.run_test(size=SIZE) as pilot:
        body = await open_queue_body(app, pilot)
        said = "(lines 1–2), none on the box yet: L (Launch) sends and runs them"
        await wait_for(lambda: said in body(), 90, what="the file's cells", pilot=pilot)
        rows = [line.split() for line in body().splitlines() if line.startswith("  ")]
        assert ["0", "first", "not", "sent", "line", "1"] in rows, body()
        assert ["1", "second", "not", "sent", "line", "2"] in rows, body()


async def test_the_queue_tab_says_cells_still_to_run_run_the_box_s_older_code(
    make_queue_fleet: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    """s37 dev-loop #2: a config edited here while the queue runs is in none of the cells
    still to run (sync is refused then); the tab listed them pending, unsaid. While the
    tab is open it looks, as `queue show` does, and names the keys that run the edit."""
    from support.code_trees import add_code, write

    from rgt_tui.services.code_sync import sync_code
    from rgt_tui.services.fleet.file import load_fleet

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    code = tmp_path / "proj"
    write(code, "cells/hold.sh", 'while [ ! -e "$HOME/go" ]; do sleep 0.05; done\n')
    write(code, "cells/next.sh", "echo next\n")
    write(code, "configs/next.yaml", "lr: 0.1\n")
    add_code(qf.loopback.hosts_file, code)
    fleet = load_fleet(qf.loopback.hosts_file)
    qf.write_queue("cells/hold.sh t\ncells/next.sh t\n")
    transport = qf.transport()
    try:
        await sync_code(fleet.host("box1"), transport, method="sftp")
        plan = await plan_launch(fleet, fleet.host("box1"), transport, preflight=False)
        await launch(plan, transport)
    finally:
        await transport.close()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="hold to run")
    write(code, "configs/next.yaml", "lr: 0.01  # the fix\n")
    app = make_app(tmp_path, fleet=fleet, start_monitors=True, clock=time.time)
    try:
        async with app.run_test(size=SIZE) as pilot:
            body = await open_queue_body(app, pilot)
            note = "1 cell still to run (next) will run the code on box1"
            await wait_for(lambda: note in body(), 90, what="the code note", pilot=pilot)
            flat = " ".join(body().split())
            assert "differs from the local tree in 1 file (configs/next.yaml)" in flat, flat
            assert "then launch (it goes on from the first cell not run) (S, then y, then L)" in (
                flat
            )
            # A stop asked for: no cell is still to run, and the note goes with the next
            # poll, not with the next look at the code (a user's hour, s42: it told the
            # user to stop the queue they had stopped, and named cells done since).
            from rgt_tui.services.queue.control import stop_queue

            transport = qf.transport()
            try:
                await stop_queue(fleet.host("box1"), transport)
            finally:
                await transport.close()
            stopped = "not run: a stop was asked for, the queue ends after the current cell"
            await wait_for(
                lambda: stopped in " ".join(body().split()), 60, what="the stop", pilot=pilot
            )
            assert "still to run" not in body(), body()

            # Stopped, synced, launched again: the look of the first launch (the file
            # differed then) says nothing of this one, whatever its age (h481 #6: it was
            # shown after a sync that sent the file, until the next look).
            monkeypatch.setattr(queues_module, "CODE_NOTE_S", 3600.0)  # no timed look
            first = app.runtime.queues.views["box1"].launch
            (qf.root() / "go").touch()
            await wait_view(qf, lambda v: v.state == USER_STOPPED, what="the queue to stop")
            (qf.root() / "go").unlink()
            transport = qf.transport()
            try:
                await sync_code(fleet.host("box1"), transport, method="sftp")

                plan = await plan_launch(
                    fleet, fleet.host("box1"), transport, start_index=0, preflight=False
                )
                await launch(plan, transport)
            finally:
                await transport.close()
            queues = app.runtime.queues

            def relaunched() -> bool:
                view = queues.views.get("box1")
                return (
                    view is not None and view.launch != first
                    and view.cells[0].status == RUNNING
                )  # fmt: skip

            await wait_for(relaunched, 90, what="the relaunch seen", pilot=pilot)

            def looked_now() -> bool:  # a look made under this launch
                kept = queues.code_notes.get("box1")
                launch = queues.views["box1"].launch
                return kept is not None and kept[-1] == (launch.ts, launch.boot_id)

            await wait_for(looked_now, 60, what="a look of this launch", pilot=pilot)
            assert queues.code_notes["box1"][1] == ""  # the sync sent the fix
            await wait_for(lambda: "still to run" not in body(), 60, pilot=pilot)
    finally:
        (qf.root() / "go").touch()
