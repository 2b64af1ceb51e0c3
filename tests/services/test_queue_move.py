"""`queue move` over two loopback boxes: lines move between the hosts' queue files, names
unchanged, the source box skips a cell it holds, and every refusal changes nothing."""

from __future__ import annotations

import stat

import pytest
from support.cli import arun
from support.queues import GATE, SCRIPT_RUN, wait_view

from rgt_tui.cli.queue import format_view
from rgt_tui.domain.queue_state import DONE, FINISHED, RUNNING
from rgt_tui.services.queue.append import append_cells
from rgt_tui.services.queue.check import check_fleet_queues
from rgt_tui.services.queue.launch import launch, plan_launch
from rgt_tui.services.queue.move import (
    MoveError,
    apply_move,
    find_source,
    moved_texts,
    plan_move,
)
from rgt_tui.services.records import atomic_write_json, fleet_host_dir, verification_path

DAY = "2026-11-27"


async def move(qf, names, dest, *, source="box1"):
    """Plan and apply a move as the CLI does (the plan must be ok)."""
    transport = qf.transport(source)
    try:
        plan = await plan_move(qf.fleet, qf.host(source), names, dest, transport)
        assert plan.ok, plan.problems
        return plan, await apply_move(plan, qf.host(source), transport, today=DAY)
    finally:
        await transport.close()


async def refused(qf, names, dest, *, source="box1"):
    transport = qf.transport(source)
    try:
        plan = await plan_move(qf.fleet, qf.host(source), names, dest, transport)
    finally:
        await transport.close()
    assert not plan.ok
    with pytest.raises(MoveError):
        await apply_move(plan, qf.host(source), qf.transport(source))
    return "\n".join(plan.problems)


async def test_an_undeployed_cell_moves_and_every_other_byte_stays(make_queue_fleet):
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    box1 = "# box1 sweep\ncells/a.sh t 1\n\ncells/b.sh t   # default epochs\ncells/c.sh t 2"
    box2 = "# box2\r\ncells/x.sh t 1\r\n"  # CRLF, as a Windows editor leaves it
    qf.write_queue(box1, "box1")
    qf.write_queue(box2, "box2")
    qf.queue_file("box1").chmod(0o640)
    qf.queue_file("box2").chmod(0o600)
    assert find_source(qf.fleet, ["b", "c"]).name == "box1"

    plan, result = await move(qf, ["b", "c"], "box2")
    assert [(c.name, c.line, c.sent) for c in plan.cells] == [("b", 4, False), ("c", 5, False)]
    assert result.skipped == ()  # nothing on the box: nothing to skip
    # Lines the box never had are deleted with their newline; nothing else changes.
    assert qf.queue_file("box1").read_bytes() == b"# box1 sweep\ncells/a.sh t 1\n\n"
    assert (
        qf.queue_file("box2").read_bytes()
        == (
            box2
            + f"# moved from box1 on {DAY}\r\ncells/b.sh t   # default epochs\r\ncells/c.sh t 2\r\n"
        ).encode()
    )
    assert stat.S_IMODE(qf.queue_file("box1").stat().st_mode) == 0o640
    assert stat.S_IMODE(qf.queue_file("box2").stat().st_mode) == 0o600
    checked = check_fleet_queues(qf.fleet)
    assert checked.ok, checked.messages()
    assert [(c.name, c.file.rsplit("/", 1)[1]) for c in checked.cells] == [
        ("a", "box1.txt"), ("x", "box2.txt"), ("b", "box2.txt"), ("c", "box2.txt"),
    ]  # fmt: skip
    assert not list(qf.queue_file("box1").parent.glob(".*.tmp"))  # no temp file left


async def test_a_deployed_cell_of_a_running_queue_is_skipped_there_and_runs_on_the_other_host(
    make_queue_fleet,
):
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    gate = qf.cell_script("gate", GATE)
    moved_b = qf.cell_script("b", 'mkdir -p "$2"; echo "b ran on $HOME" > "$2/out"')
    after = qf.cell_script("c", "echo c")
    qf.cell_script("b", 'mkdir -p "$2"; echo "b ran on $HOME" > "$2/out"', name="box2")
    x = qf.cell_script("x", "echo x", name="box2")
    qf.write_queue(f"{gate} t 1\n{moved_b} t 1\n{after} t 1\n", "box1")
    qf.write_queue(f"{x} t 1\n", "box2")
    # b's outputs on box1 from an earlier run of its own: the move leaves them alone.
    old = qf.root("box1") / "results" / "b"
    old.mkdir(parents=True)
    (old / "keep.txt").write_text("earlier output\n")
    t1 = qf.transport("box1")
    await launch(await plan_launch(qf.fleet, qf.host("box1"), t1), t1)
    await t1.close()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="the gate cell to run")

    plan, result = await move(qf, ["b"], "box2")
    assert [(c.name, c.index, c.sent) for c in plan.on_box] == [("b", 1, True)]
    assert result.skipped == ("b",)
    assert qf.queue_file("box1").read_text() == (
        f"{gate} t 1\n#moved-to box2: {moved_b} t 1\n{after} t 1\n"
    )
    assert qf.queue_file("box2").read_text() == (
        f"{x} t 1\n# moved from box1 on {DAY}\n{moved_b} t 1\n"
    )
    assert "skip " in qf.state("b") and "moved to box2" in qf.state("b")
    assert check_fleet_queues(qf.fleet).ok
    shown = await wait_view(qf, lambda v: v.cells[1].label == "moved", what="b shown moved")
    assert "moved to box2" in format_view(shown).splitlines()[2]  # queue show's line for b

    # The source's append is not refused by the prefix check: d joins as cell 3.
    tail = qf.cell_script("d", "echo d")
    qf.append_queue(f"{tail} t 1\n", "box1")
    t1 = qf.transport("box1")
    appended = await append_cells(qf.fleet, qf.host("box1"), t1)
    await t1.close()
    assert [(c.index, c.name) for c in appended.added] == [(3, "d")]

    t2 = qf.transport("box2")
    plan2 = await plan_launch(qf.fleet, qf.host("box2"), t2)
    assert plan2.ok, plan2.problems
    await launch(plan2, t2)
    await t2.close()
    there = await wait_view(qf, lambda v: v.state == FINISHED, name="box2", what="box2's queue")
    assert [(c.name, c.status) for c in there.cells] == [("x", DONE), ("b", DONE)]
    assert (
        qf.root("box2") / "results" / "b" / "out"
    ).read_text() == f"b ran on {qf.root('box2')}\n"

    (qf.root("box1") / "go").touch()
    here = await wait_view(qf, lambda v: v.state == FINISHED, what="box1's queue")
    statuses = {c.name: c.status for c in here.cells}
    assert statuses["gate"] == statuses["c"] == statuses["d"] == DONE
    assert statuses["b"] != DONE and "start " not in qf.state("b")  # never run on box1
    assert sorted(p.name for p in old.iterdir()) == ["keep.txt"]  # box1's outputs untouched
    assert (old / "keep.txt").read_text() == "earlier output\n"
    # A later launch plan of box1 accepts the '#moved-to' line (cells keep their index)...
    t1 = qf.transport("box1")
    again = await plan_launch(qf.fleet, qf.host("box1"), t1, start_index=2)
    assert again.ok, again.problems
    assert [c.name for c in again.cells] == ["gate", "b", "c", "d"]
    # ...and a fresh one, which would send it as a new line, asks for it to go.
    fresh = await plan_launch(qf.fleet, qf.host("box1"), t1, fresh=True)
    await t1.close()
    assert any("marked '#moved-to box2'" in p and "delete that line" in p for p in fresh.problems)


async def test_refused_moves_change_nothing(make_queue_fleet):
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    gate = qf.cell_script("gate", GATE)
    qf.write_queue(f"{gate} t 1\ncells/a.sh t 1\ncells/b.sh t 1\ncells/v.sh t 1\n", "box1")
    # b was box2's once: moved away, its records on box2's box bear the name.
    qf.write_queue("#moved-to box1: cells/b.sh t 1\ncells/y.sh t\n", "box2")
    folder = fleet_host_dir(qf.fleet, "box1")
    record = {"version": 1, "host": "box1", "ok": True, "checks": [],
              "roster": {"expected": ["v"], "present": ["v"], "missing": []}}  # fmt: skip
    atomic_write_json(verification_path(folder), record)
    t1 = qf.transport("box1")
    await launch(await plan_launch(qf.fleet, qf.host("box1"), t1), t1)
    await t1.close()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="the gate cell to run")
    # Now box2 also has a cell named a (a duplicate `queue check` reports).
    qf.append_queue("other/a.sh t 5\n", "box2")
    before = {h: qf.queue_file(h).read_bytes() for h in ("box1", "box2")}
    state_before = qf.state("a")

    used = await refused(qf, ["a"], "box2")
    assert "cell name 'a' is already used at" in used and "box2.txt:3" in used
    once = await refused(qf, ["b"], "box2")
    assert "'b' was box2's before" in once and "box2.txt:1" in once
    # What renaming costs, and where else it could go (no host here never had it).
    assert "so it cannot take it again — every other host with a queue file had it" in once
    assert "rename its config: a new name is a new {out}, so the run starts from scratch" in once
    running = await refused(qf, ["gate"], "box2")
    assert "gate is running on box1 now — stop or kill it first" in running
    verified = await refused(qf, ["v"], "box2")
    assert "v has verified results in" in verified and "moving it would run it again" in verified
    missing = await refused(qf, ["nosuch"], "box2")
    assert "no cell 'nosuch'" in missing
    nowhere = await refused(qf, ["a"], "box9")
    assert "no host named 'box9'" in nowhere
    here = await refused(qf, ["a"], "box1")
    assert here == "box1 is the host they are moved from — name another host"
    # A cell of box2's named in box1's dialog, to box1: not "on box1 already".
    foreign = await refused(qf, ["y"], "box1")
    assert "no cell 'y' in" in foreign and "moved from" not in foreign, foreign

    assert {h: qf.queue_file(h).read_bytes() for h in ("box1", "box2")} == before
    assert qf.state("a") == state_before and "skip" not in qf.state("gate")
    (qf.root("box1") / "go").touch()


async def test_a_file_changed_after_the_plan_is_not_overwritten(make_queue_fleet):
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    qf.write_queue("cells/a.sh t 1\ncells/b.sh t 1\n", "box1")
    qf.write_queue("cells/x.sh t 1\n", "box2")
    t1 = qf.transport("box1")
    plan = await plan_move(qf.fleet, qf.host("box1"), ["b"], "box2", t1)
    assert plan.ok
    qf.append_queue("cells/y.sh t 1\n", "box2")  # the user edits while the plan is shown
    with pytest.raises(MoveError, match="changed since the move was planned"):
        await apply_move(plan, qf.host("box1"), t1, today=DAY)
    assert qf.queue_file("box1").read_text() == "cells/a.sh t 1\ncells/b.sh t 1\n"
    assert qf.queue_file("box2").read_text() == "cells/x.sh t 1\ncells/y.sh t 1\n"
    # A launch since the plan sent b: deleting it as unsent would break the prefix.
    qf.write_queue("cells/x.sh t 1\n", "box2")
    plan = await plan_move(qf.fleet, qf.host("box1"), ["b"], "box2", t1)
    assert plan.ok and not plan.on_box
    await launch(await plan_launch(qf.fleet, qf.host("box1"), t1), t1)
    with pytest.raises(MoveError, match="queue on its box changed since the move was planned"):
        await apply_move(plan, qf.host("box1"), t1, today=DAY)
    assert qf.queue_file("box1").read_text() == "cells/a.sh t 1\ncells/b.sh t 1\n"
    # The texts alone: an unsent line goes with its newline, the rest stays.
    await t1.close()
    source, dest = moved_texts(plan, DAY)
    assert source == "cells/a.sh t 1\n" and dest.endswith(
        f"# moved from box1 on {DAY}\ncells/b.sh t 1\n"
    )


async def test_the_cli_asks_before_the_box_must_skip_and_moves_with_yes(make_queue_fleet):
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    gate = qf.cell_script("gate", GATE)
    qf.write_queue(f"{gate} t 1\ncells/b.sh t 1\n", "box1")
    qf.write_queue("cells/x.sh t 1\n", "box2")
    t1 = qf.transport("box1")
    await launch(await plan_launch(qf.fleet, qf.host("box1"), t1), t1)
    await t1.close()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="the gate cell to run")
    hosts = qf.loopback.hosts_file

    asked = await arun("queue", "move", "b", "--to", "box2", "--hosts", hosts)
    assert asked.returncode == 2, asked.stderr
    assert "box1's box holds b and must skip it" in asked.stderr and "--yes" in asked.stderr
    assert "b" not in qf.queue_file("box2").read_text().split("x.sh")[1]
    assert "skip" not in qf.state("b")

    used = await arun("queue", "move", "b", "--to", "box1", "--hosts", hosts)
    assert used.returncode == 1 and "box1 is the host they are moved from" in used.stdout

    done = await arun("queue", "move", "b", "--to", "box2", "--yes", "--hosts", hosts)
    assert done.returncode == 0, done.stderr
    assert "moved b from box1 to box2" in done.stdout and "box1's box skips b" in done.stdout
    # Where it lands: after box2's one cell (a plan that did not say left it to count).
    assert "box1's box skips cell 1; it becomes box2's cell 1" in done.stdout
    # box2 was never launched: `queue append` would refuse it there, so launch is named.
    assert "run it: rgt-tui queue append box2 if a queue runs there, else rgt-tui launch box2" in (
        done.stdout
    )
    assert qf.queue_file("box1").read_text().splitlines()[1] == "#moved-to box2: cells/b.sh t 1"
    assert "moved to box2" in qf.state("b")
    (qf.root("box1") / "go").touch()


async def test_a_cell_that_ran_since_the_plan_is_not_moved_as_pending(make_queue_fleet):
    """The queue goes on while a move dialog is open: a cell planned as pending that ran
    to its end before Move was pressed is refused, and nothing moves (a user's hour moved
    a just-finished cell, to run again on the other box)."""
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    gate = qf.cell_script("gate", GATE)
    quick = qf.cell_script("quick", "echo quick ran")
    qf.write_queue(f"{gate} t 1\n{quick} t 1\n", "box1")
    qf.write_queue("cells/x.sh t 1\n", "box2")
    t1 = qf.transport("box1")
    try:
        await launch(await plan_launch(qf.fleet, qf.host("box1"), t1), t1)
        await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="the gate cell to run")
        plan = await plan_move(qf.fleet, qf.host("box1"), ["quick"], "box2", t1)
        assert plan.ok and [c.status for c in plan.on_box] == ["pending"], plan
        before = (qf.queue_file("box1").read_text(), qf.queue_file("box2").read_text())
        (qf.root("box1") / "go").touch()  # the gate opens: quick runs to its end
        await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to finish")
        with pytest.raises(MoveError) as late:
            await apply_move(plan, qf.host("box1"), t1, today=DAY)
    finally:
        await t1.close()
    assert "quick is done on box1 now (the plan saw it pending)" in str(late.value)
    assert (qf.queue_file("box1").read_text(), qf.queue_file("box2").read_text()) == before
    assert "skip" not in qf.state("quick")


async def test_the_hosts_a_refusal_offers_leave_out_one_recorded_as_torn_down(make_queue_fleet):
    """hour s17a #14: 'move it to a host that never had it (gpuB)' named a host recorded
    as torn down, where a launch is refused."""
    import time

    from rgt_tui.domain.box_identity import BoxIdentity
    from rgt_tui.services.journal import TeardownRecord, journal_for

    qf = await make_queue_fleet(3, run=SCRIPT_RUN)
    qf.write_queue("cells/b.sh t 1\n", "box1")
    qf.write_queue("#moved-to box1: cells/b.sh t 1\n", "box2")  # b was box2's once
    qf.write_queue("", "box3")
    offered = await refused(qf, ["b"], "box2")
    assert "move it to a host that never had it (box3)" in offered, offered
    box = "0123456789abcdef0123456789abcdef"
    journal = journal_for(qf.fleet)
    journal.observe_box("box3", BoxIdentity(box, None), time.time() - 60)
    journal.add_teardown("box3", TeardownRecord(time.time(), None, None, "", True, box, True))
    after = await refused(qf, ["b"], "box2")
    assert "never had it (box3)" not in after, after
    assert "every other host with a queue file had it too" in after, after


async def test_a_move_warns_of_a_config_the_target_box_lacks(make_queue_fleet, tmp_path):
    """h471 #11: a move of cells whose config the target's box lacks passed its plan; the
    source box skipped them, and only the append or launch on the target said the config
    was missing. The plan asks the target's box and warns, naming the file and the sync;
    a config the box holds is not named. A warning: a plain move runs nothing."""
    from support.code_trees import add_code, git, git_tree, write

    from rgt_tui.services.code_sync import sync_code
    from rgt_tui.services.fleet.file import load_fleet

    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    code = tmp_path / "code"
    git_tree(code)
    add_code(qf.loopback.hosts_file, code)  # box2's, the last [[hosts]] block
    fleet = load_fleet(qf.loopback.hosts_file)
    t2 = qf.transport("box2")
    try:
        await sync_code(fleet.host("box2"), t2)
    finally:
        await t2.close()
    write(code, "src/new.sh", "echo new\n")  # committed here, never synced to box2
    git(code, "add", "-A")
    git(code, "commit", "-q", "-m", "new cell")
    qf.write_queue("run.sh t 1\nsrc/new.sh t 1\n", "box1")
    qf.write_queue("", "box2")

    # The TUI's Move dialog plans through the controller: its plan warns the same.
    from rgt_tui.controllers.move import MoveControl
    from rgt_tui.services.connections import FleetConnections

    connections = FleetConnections(fleet.hosts)
    try:
        control = MoveControl(fleet, fleet.host("box1"), connections)
        plan, error = await control.plan(["run", "new"], "box2", from_scratch=False, acks=())
    finally:
        await connections.close_all()
    assert plan is not None and not error and plan.ok, (error, plan)
    (warned,) = [w for w in plan.warnings if "is not on box2" in w]
    assert warned.startswith("src/new.sh is not on box2"), plan.warnings

    moved = await arun("queue", "move", "run", "new", "--to", "box2", "--hosts", qf.loopback.hosts_file)  # fmt: skip
    assert moved.returncode == 0, moved.stdout + moved.stderr
    said = " ".join(moved.stdout.split())
    assert "src/new.sh is not on box2" in said and "rgt-tui sync box2" in said, said
    assert "run.sh is not on box2" not in said, said
    assert "moved run, new from box1 to box2" in said

    # One cell that never ran goes the resume move's way: warned the same (h482 #8).
    qf.write_queue("src/new.sh t 2\n", "box1")
    qf.write_queue("", "box2")
    one = await arun("queue", "move", "new", "--to", "box2", "--hosts", qf.loopback.hosts_file)  # fmt: skip
    assert one.returncode == 0, one.stdout + one.stderr
    said = " ".join(one.stdout.split())
    assert "src/new.sh is not on box2" in said and "moved new from box1 to box2" in said, said


async def test_a_move_to_a_host_with_no_code_tree_asks_its_box_for_the_configs(make_queue_fleet):
    """h612 #2 and #3: with no `code` key, nothing asked the target's box for the moved
    cells' configs (each failed at its start there, paid time spent), nor did its launch
    plan; and a cell that had failed moved among others with no word that it starts over
    (a one-cell move refuses it without --from-scratch). Both plans now warn."""
    import os
    import re
    import signal

    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    first = qf.cell_script("first", GATE)  # on box1's workdir only
    later = qf.cell_script("later", "echo later")
    qf.write_queue(f"{first} t\n")
    qf.write_queue("", "box2")
    transport = qf.transport()
    try:
        await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
    finally:
        await transport.close()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="the cell to start")
    pid = int(re.findall(r"^start \d+ \S+ (\d+)$", qf.state("first"), re.M)[-1])
    os.kill(pid, signal.SIGKILL)
    await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to end")
    qf.append_queue(f"{later} t\n")

    moved = await arun("queue", "move", "first", "later", "--to", "box2", "--yes", "--hosts", qf.loopback.hosts_file)  # fmt: skip
    assert moved.returncode == 0, moved.stdout + moved.stderr
    said = " ".join(moved.stdout.split())
    assert "cells/first.sh is not on box2" in said and "cells/later.sh is not on box2" in said
    assert "copy it to the box (no code tree is set for box2 to sync" in said, said
    assert "rgt-tui sync box2" not in said, said
    assert "first did not finish on box1 (failed): on box2 it starts over" in said, said
    assert "later did not finish" not in said, said  # it never ran

    transport = qf.transport("box2")
    try:
        plan = await plan_launch(qf.fleet, qf.host("box2"), transport)
    finally:
        await transport.close()
    warned = [w for w in plan.warnings if "is not on box2" in w]
    assert len(warned) == 2 and warned[0].startswith("cells/first.sh is not on box2"), warned

    # A {cfg} that is a name, not a file (Hydra's --config-name exp1): never asked after
    # as a missing file (review h620 #4).
    qf.append_queue("exp1 t\n", "box2")
    transport = qf.transport("box2")
    try:
        plan = await plan_launch(qf.fleet, qf.host("box2"), transport)
    finally:
        await transport.close()
    assert not any(w.startswith("exp1 is not on box2") for w in plan.warnings), plan.warnings
