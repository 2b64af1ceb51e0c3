"""The launch plan refuses a cell whose config the host's `code` tree does not hold
(ux-d #2, ux-f #8): that cell would fail on the box, paid time spent. Named by cell and
file:line; only the cells the launch runs; nothing said for a host without `code`.
Loopback boxes."""

from __future__ import annotations

from support.queues import SCRIPT_RUN

from rgt_tui.services.queue.launch import plan_launch


async def _plan(qf, name: str, start: int = 0):
    transport = qf.transport(name)
    try:
        return await plan_launch(qf.fleet, qf.host(name), transport, start_index=start)
    finally:
        await transport.close()


def _config_problems(plan) -> list[str]:
    return [p for p in plan.problems if " would fail on " in p]


async def test_a_config_missing_from_the_code_tree_refuses_the_plan(make_queue_fleet, tmp_path):
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    proj = tmp_path / "proj"
    (proj / "cells").mkdir(parents=True)
    for stem in ("a", "b"):
        (proj / "cells" / f"{stem}.sh").write_text("echo ok\n")
    with qf.loopback.hosts_file.open("a") as f:  # the last [[hosts]] block: box2's
        f.write(f'code = "{proj}"\n')
    qf.write_queue("cells/a.sh t 1\ncells/gone.sh t 1\ncells/b.sh t 1\n", "box2")
    qf.write_queue("cells/x.sh t 1\ncells/only_on_box.sh t 1\n", "box1")  # box1: no code

    plan = await _plan(qf, "box2")
    assert not plan.ok
    where = f"{qf.queue_file('box2')}:2"
    assert _config_problems(plan) == [
        f"{where}: cells/gone.sh is not in {proj} (box2's code tree, which sync sends to "
        "its workdir): cell gone would fail on box2 — fix the path on this line, or add "
        "the file to the tree (then sync it: y, or rgt-tui sync)"
    ], plan.problems
    assert plan.queue_append == ""  # refused: nothing would be sent

    # From cell 2 on, the missing config is not one the launch runs.
    assert _config_problems(await _plan(qf, "box2", start=2)) == []
    # box1 has no code tree: its configs may live only on the box.
    assert _config_problems(await _plan(qf, "box1")) == []


async def test_an_appended_cell_whose_config_is_missing_is_refused(make_queue_fleet, tmp_path):
    import pytest

    from rgt_tui.services.box_ctl import QueueError
    from rgt_tui.services.queue.append import against_box, append_cells
    from rgt_tui.services.queue.launch import launch

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    proj = tmp_path / "proj"
    (proj / "cells").mkdir(parents=True)
    (proj / "cells" / "a.sh").write_text("echo ok\n")
    with qf.loopback.hosts_file.open("a") as f:
        f.write(f'code = "{proj}"\n')
    qf.write_queue("cells/a.sh t 1\n")
    transport = qf.transport()
    try:
        plan = await plan_launch(qf.fleet, qf.host(), transport, preflight=False)
        assert plan.ok, plan.problems
        await launch(plan, transport)
        qf.append_queue("cells/gone.sh t 1\n")
        # What `queue show` and the Queue tab say of it first: a line at fault, never
        # "a (Append) sends it" (a user's hour: the append then refused it).
        compared = await against_box(qf.host(), transport, fleet=qf.fleet)
        assert compared.not_sent is not None, compared
        assert [c.name for _, c in compared.not_sent.cells] == ["gone"]
        assert compared.not_sent.problems == 1
        with pytest.raises(QueueError) as refused:
            await append_cells(qf.fleet, qf.host(), transport)
    finally:
        await transport.close()
    assert "cells/gone.sh is not in" in str(refused.value)
    assert "cell gone would fail on box1" in str(refused.value)


async def test_a_running_queue_refuses_a_cell_whose_config_the_box_lacks_or_holds_older(
    make_queue_fleet, tmp_path
):
    """A running queue runs an appended cell on the box's code as it is, and sync never
    rewrites a running queue's files: a config the box lacks (or holds an older copy of)
    would fail the cell, or run the old config. Refused, naming the file, the cell and the
    way on; a config the box holds as it is here is appended."""
    import pytest
    from support.cli import arun
    from support.queues import wait_view

    from rgt_tui.domain.queue_state import RUNNING
    from rgt_tui.services.box_ctl import QueueError
    from rgt_tui.services.queue.append import append_cells
    from rgt_tui.services.queue.launch import launch

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    proj = tmp_path / "proj"
    (proj / "cells").mkdir(parents=True)
    gate = 'while [ ! -e "$HOME/go" ]; do sleep 0.1; done'
    for stem, here, on_box in (
        ("gate", gate, gate),
        ("same", "echo same", "echo same"),
        ("older", "echo v2", "echo v1"),
        ("new", "echo new", None),
    ):
        (proj / "cells" / f"{stem}.sh").write_text(here + "\n")
        if on_box is not None:
            qf.cell_script(stem, on_box)
    with qf.loopback.hosts_file.open("a") as f:
        f.write(f'code = "{proj}"\n')
    qf.write_queue("cells/gate.sh t 1\n")
    transport = qf.transport()
    try:
        plan = await plan_launch(qf.fleet, qf.host(), transport, preflight=False)
        assert plan.ok, plan.problems
        await launch(plan, transport)
        await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="the gate cell")
        sent = qf.queue_file().read_text()
        for stem in ("new", "older"):
            qf.append_queue(f"cells/{stem}.sh t 1\n")
            # `queue show` says what the append will answer (h462 #5: it promised "append
            # sends it, and the running queue runs it", and the append refused).
            shown = await arun("queue", "show", "box1", "--hosts", str(qf.loopback.hosts_file))
            said = " ".join(shown.stdout.split())
            assert f"cells/{stem}.sh is not on box1 as here" in said, said
            assert "rgt-tui queue append box1 refuses it now" in said, said
            assert "the running queue runs it" not in said, said
            # The Queue tab says the same (h471 #6: it promised "a (Append) sends it").
            tab = await _queue_tab_not_sent(qf)
            assert f"cells/{stem}.sh is not on the box as here" in tab, tab
            assert "a (Append) refuses it now" in tab and "runs it after" not in tab, tab
            with pytest.raises(QueueError) as refused:
                await append_cells(qf.fleet, qf.host(), transport)
            said = str(refused.value)
            assert refused.value.code == "stale-config"
            assert f"cells/{stem}.sh (cell {stem}) not on box1 as it is here" in said, said
            assert "rgt-tui sync box1" in said and "rgt-tui queue stop box1" in said
            qf.write_queue(sent)  # the refused line taken back
        qf.append_queue("cells/same.sh t 1\n")
        shown = await arun("queue", "show", "box1", "--hosts", str(qf.loopback.hosts_file))
        assert "rgt-tui queue append box1 sends it, and the running queue runs it" in " ".join(
            shown.stdout.split()
        ), shown.stdout
        added = await append_cells(qf.fleet, qf.host(), transport)
        assert added.running and [c.name for c in added.added] == ["same"]
        (qf.root() / "go").touch()
        await wait_view(qf, lambda v: not v.runner_alive, what="the queue to end")
        # Ended: a launch refuses the stale config until a sync, so the line says the sync
        # first (h493 #2: "L (Launch) sends and runs it", and L was refused).
        qf.append_queue("cells/older.sh t 1\n")
        shown = await arun("queue", "show", "box1", "--hosts", str(qf.loopback.hosts_file))
        said = " ".join(shown.stdout.split())
        assert (
            "cells/older.sh is not on box1 as here: rgt-tui sync box1 first, then rgt-tui "
            "launch box1 sends and runs it"
        ) in said, said
        # One poller across a sync, as the TUI keeps it: the note goes once the box's copy
        # is the local one (review h494 #1: it was kept from the poll before).
        from rgt_tui.content.queue_text import not_sent_lines
        from rgt_tui.services.connections import FleetConnections
        from rgt_tui.services.runtime.queues import QueuePoller

        connections = FleetConnections(qf.fleet.hosts)
        poller = QueuePoller(
            connections, on_view=lambda h, v: None, is_live=lambda h: True, fleet=lambda: qf.fleet
        )

        async def tab() -> str:
            view = await poller.poll_once(qf.host())
            assert view is not None
            return " ".join(" ".join(line.plain for line in not_sent_lines(view)).split())

        try:
            said = await tab()
            assert "cells/older.sh is not on the box as here: y (Sync) first, then L" in said
            qf.cell_script("older", "echo v2")  # what a sync writes: the box's copy as here
            said = await tab()
            assert "not on the box as here" not in said and "L (Launch) sends and runs it" in said
        finally:
            await connections.close_all()
    finally:
        await transport.close()


async def _queue_tab_not_sent(qf) -> str:  # type: ignore[no-untyped-def]
    """The Queue tab's not-sent lines for box1, as the TUI's poller reads them (its own
    connection, the fleet as the file says)."""
    from rgt_tui.content.queue_text import not_sent_lines
    from rgt_tui.services.connections import FleetConnections
    from rgt_tui.services.runtime.queues import QueuePoller

    connections = FleetConnections(qf.fleet.hosts)
    try:
        poller = QueuePoller(
            connections, on_view=lambda h, v: None, is_live=lambda h: True, fleet=lambda: qf.fleet
        )
        view = await poller.poll_once(qf.host())
    finally:
        await connections.close_all()
    assert view is not None
    return " ".join(" ".join(line.plain for line in not_sent_lines(view)).split())
