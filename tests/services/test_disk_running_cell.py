"""A running cell's output folder is never offered nor deleted (ux-d D1), over a real
loopback box whose queue runs a cell held at a gate: the disk audit reads the queue as
every view does, marks the cell's ``{out}`` and every folder holding it NOT OFFERED, and
``plan_delete`` (and ``rgt-tui disk --delete``) refuses it with the reason and the fix,
whatever is pulled: the folder is empty, so "every file pulled and verified" holds."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from support.cli import arun
from support.pulls import host_of
from support.queues import GATE, SCRIPT_RUN, wait_view
from support.waiting import wait_for

from rgt_tui.domain.queue_state import DONE, RUNNING
from rgt_tui.services.disk.audit import DiskError, audit_disk
from rgt_tui.services.disk.offer import not_offered
from rgt_tui.services.disk.reclaim import delete_planned, plan_delete
from rgt_tui.services.queue.launch import launch, plan_launch
from rgt_tui.transport import transport_for

RUNNING_WHY = "cell gated is running: stop or kill it first"
HOLDS_WHY = "holds the output folder of cell gated, which is running: stop or kill it first"


async def test_a_running_cells_output_folder_is_not_offered_and_its_delete_refused(
    make_queue_fleet, tmp_path: Path
) -> None:
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    gated = qf.cell_script("gated", f'mkdir -p "$2"\n{GATE}')
    qf.write_queue(f"{gated} t\n")
    host, local, transport = qf.host(), qf.fleet.results_dir, qf.transport()
    try:
        # This machine may lack torch, so "arch" cannot be checked: acknowledged as the
        # queue fleet acknowledges the checks a loopback box cannot pass.
        plan = await plan_launch(qf.fleet, host, transport, acks=("arch",))
        assert plan.ok, plan.problems
        await launch(plan, transport)
        await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="gated to run")
        out = qf.root() / "results" / "gated"
        await wait_for(out.is_dir, 30, "gated's output folder")
        audit = await audit_disk(host, transport, local, top=500)
        entries = {e.path: e for e in audit.entries()}
        assert not_offered(audit, entries[str(out)]) == RUNNING_WHY
        assert not_offered(audit, entries[str(out.parent)]) == HOLDS_WHY  # the pull root
        with pytest.raises(DiskError, match=f"is not offered: {RUNNING_WHY}"):
            await plan_delete(host, transport, local, audit, str(out))
        with pytest.raises(DiskError, match=f"is not offered: {HOLDS_WHY}"):
            await plan_delete(host, transport, local, audit, str(out.parent))
        # An audit that knew of no running cell (taken before the queue started): the
        # delete reads the queue again and refuses all the same.
        stale = dataclasses.replace(audit, running=())
        assert not_offered(stale, entries[str(out)]) is None
        with pytest.raises(DiskError, match=RUNNING_WHY):
            await plan_delete(host, transport, local, stale, str(out))
        assert out.is_dir()

        env = {"XDG_STATE_HOME": str(tmp_path / "state"), "RGT_HOSTS": str(qf.loopback.hosts_file)}
        cli = await arun(
            "disk", "box1", "--delete", str(out), "--confirm", str(out), "--top", "500",
            env=env, cwd=tmp_path,
        )  # fmt: skip
        assert cli.returncode == 1, cli.stdout + cli.stderr
        assert RUNNING_WHY in cli.stderr and out.is_dir()

        # The cell ended: its (empty) folder is offered, and goes.
        (qf.root() / "go").touch()
        await wait_view(qf, lambda v: v.cells[0].status == DONE, what="gated to finish")
        audit = await audit_disk(host, transport, local, top=500)
        entries = {e.path: e for e in audit.entries()}
        assert not_offered(audit, entries[str(out)]) is None
        await delete_planned(transport, await plan_delete(host, transport, local, audit, str(out)))
        assert not out.exists()
    finally:
        await transport.close()


async def test_an_unread_queue_offers_no_folder_under_the_durable_folder(
    make_loopback_fleet, tmp_path: Path
) -> None:
    from rgt_tui.services.disk.audit import with_running

    fleet = await make_loopback_fleet(1)
    host = host_of(fleet)
    results = fleet.box("box1").root / "results"
    (results / "old_cell").mkdir(parents=True)
    transport = transport_for(host)
    try:
        audit = await audit_disk(host, transport, tmp_path / "local", top=500)
        entries = {e.path: e for e in audit.entries()}
        assert not_offered(audit, entries[str(results / "old_cell")]) is None
        unread = with_running(audit, (), "the queue probe timed out")
        for folder in (results / "old_cell", results):
            why = not_offered(unread, entries[str(folder)])
            assert why and "the queue could not be read" in why, why
        assert any(
            "the queue could not be read (the queue probe timed out)" in n for n in unread.notes
        )
    finally:
        await transport.close()


async def test_a_cells_folder_it_is_queued_to_resume_from_is_not_offered(
    make_queue_fleet, tmp_path: Path
) -> None:
    """h551 #2: a killed cell queued to resume (`queue retry --resume`) had its folder,
    pulled and verified, offered and deleted: the cell then started over, its GPU hours
    to the checkpoint lost, while `queue show` still said "resumed"."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    ck = qf.cell_script("ck", f'mkdir -p "$2"; echo w > "$2/checkpoint.pt"\n{GATE}')
    hold = qf.cell_script("hold", 'while [ ! -e "$HOME/go2" ]; do sleep 0.05; done')
    qf.write_queue(f"{ck} t\n{hold} t\n")
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "RGT_HOSTS": str(qf.loopback.hosts_file)}
    host, local, transport = qf.host(), qf.fleet.results_dir, qf.transport()
    try:
        plan = await plan_launch(qf.fleet, host, transport, acks=("arch",))
        assert plan.ok, plan.problems
        await launch(plan, transport)
        out = qf.root() / "results" / "ck"
        await wait_for((out / "checkpoint.pt").exists, 30, "ck's checkpoint")
        killed = await arun(
            "queue", "kill", "box1", "--then", "next", "--yes", env=env, cwd=tmp_path
        )
        assert killed.returncode == 0, killed.stdout + killed.stderr
        await wait_view(qf, lambda v: v.cells[1].status == RUNNING, what="hold to run")
        retried = await arun(
            "queue", "retry", "box1", "ck", "--resume", "--yes", env=env, cwd=tmp_path
        )
        assert retried.returncode == 0, retried.stdout + retried.stderr
        await wait_view(qf, lambda v: v.cells[0].resume_pending, what="ck queued to resume")
        audit = await audit_disk(host, transport, local, top=500)
        entries = {e.path: e for e in audit.entries()}
        why = (
            "cell ck is queued to resume from it: let it run first, move it (rgt-tui queue "
            "move ck --to HOST), or have it start over instead (rgt-tui queue retry box1 ck "
            "sets its outputs aside)"
        )
        assert not_offered(audit, entries[str(out)]) == why
        cli = await arun(
            "disk", "box1", "--delete", str(out), "--confirm", str(out), "--top", "500",
            env=env, cwd=tmp_path,
        )  # fmt: skip
        assert cli.returncode == 1, cli.stdout + cli.stderr
        assert why in " ".join(cli.stderr.split()) and (out / "checkpoint.pt").exists()
    finally:
        (qf.root() / "go2").touch()
        (qf.root() / "go").touch()
        await transport.close()


async def test_a_stopped_queues_cell_never_started_locks_no_folder(
    make_queue_fleet, tmp_path: Path
) -> None:
    """Review h554 #3: a cell left pending by a stopped queue locked the results folder
    and the workdir (every folder "holding" the one it had not made), with a fix that a
    one-box fleet cannot follow. Only a running queue's pending cell, and only a folder it
    has, is kept off the list."""
    from support.queues import stopped_after_hold

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    later = qf.cell_script("later", 'mkdir -p "$2"')
    await stopped_after_hold(qf, f"{later} t\n")
    host, local, transport = qf.host(), qf.fleet.results_dir, qf.transport()
    try:
        audit = await audit_disk(host, transport, local, top=500)
    finally:
        await transport.close()
    entries = {e.path: e for e in audit.entries()}
    results = qf.root() / "results"
    assert str(results) in entries, sorted(entries)
    assert "later" not in (not_offered(audit, entries[str(results)]) or "")
    assert not any(name == "later" for name, _, _ in audit.running), audit.running
