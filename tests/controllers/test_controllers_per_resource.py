"""Controllers per resource (issue 38): the queue's stop and kill, VRAM, the disk and the
launch plan run their service work in Textual-free controllers; a screen asks and shows.
Each is driven here with no App at all (``support.controller_host.LoopHost``) over this
machine (``ssh = "local"``) with real files."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.controller_host import LoopHost
from support.disk_box import build_box
from support.disk_box import tmpfs as tmpfs  # noqa: F401  (the fixture)
from support.fleet_files import write_hosts
from support.pulls import host_of
from support.vram_box import HeldDevices, vram_smi
from support.waiting import wait_for

from rgt_tui.controllers.disk import DiskControl
from rgt_tui.controllers.launch_plan import LaunchControl
from rgt_tui.controllers.move import MoveControl
from rgt_tui.controllers.queue_control import QueueControl
from rgt_tui.controllers.vram import VramControl
from rgt_tui.domain.queue_state import FAILED, CellView
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.queue.move import MovePlan
from rgt_tui.services.queue.resume_preflight import ResumeDialogPlan


def local_fleet(tmp_path: Path):  # type: ignore[no-untyped-def]
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "q.txt").write_text("configs/lr.yaml 1\n")
    return load_fleet(
        write_hosts(
            tmp_path,
            f"""
[[hosts]]
name = "box1"
ssh = "local"
workdir = "{work}"
queue = "q.txt"
run = "python train.py {{cfg}}"
""",
        )
    )


async def test_stop_on_a_queue_never_launched_is_a_notice_naming_the_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The local box's ~/.rgt of its own: this machine's may hold a queue someone launched.
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    fleet = local_fleet(tmp_path)
    host = LoopHost()
    connections = FleetConnections(fleet.hosts)
    try:
        QueueControl(host, connections).request(fleet.host("box1"), "stop", None, "stop")
        await wait_for(lambda: host.notices, what="the stop's outcome")
        ((message, title, severity),) = host.notices
        assert title == "box1: stop" and severity == "error", host.notices
        assert "not running" in message and "nothing to stop" in message, host.notices
        assert list(host.workers) == ["queue-control:box1"]
    finally:
        await host.drain()
        await connections.close_all()


@pytest.fixture
def held(tmp_path: Path):  # type: ignore[no-untyped-def]
    holder = HeldDevices(tmp_path / "dev")
    yield holder
    holder.stop()


async def test_vram_reads_the_holders_kills_one_and_reads_the_list_after(
    make_queue_fleet, tmp_path: Path, held: HeldDevices
) -> None:  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(1)
    box = qf.loopback.box("box1")
    box.extra_path.append(vram_smi(tmp_path / "smi", held.pid).parent)
    box.extra_env["RGT_NVIDIA_DEV_PREFIX"] = held.prefix
    connections = FleetConnections(qf.fleet.hosts)
    try:
        vram = VramControl(connections)
        read = await vram.read("box1")
        assert read.error == "" and read.evidence is not None
        assert [h.pid for h in read.evidence.holders] == [held.pid]
        refused = await vram.kill(read.evidence, held.pid + 100000)  # not a holder
        assert refused.note.startswith("not killed: ") and not refused.killed
        assert not held.ended()
        after = await vram.kill(read.evidence, held.pid)
        assert after.killed and after.evidence is not None, after
        await wait_for(held.ended, 10, "the holder to exit")
    finally:
        await connections.close_all()


async def test_disk_audits_refuses_what_is_not_offered_and_deletes_what_is(
    make_loopback_fleet, tmp_path: Path, tmpfs: Path
) -> None:  # type: ignore[no-untyped-def]
    fleet = await make_loopback_fleet(1)
    paths = build_box(fleet.box("box1").root, tmpfs)
    results = str(tmpfs / "results")
    host = host_of(fleet, mounts=(str(tmpfs),), pull=(results,), durable_dir=results)
    connections = FleetConnections((host,))
    try:
        disk = DiskControl(connections, host, tmp_path / "res")
        first = await disk.audit()
        assert first.audit is not None and first.kind == "", first
        refused = await disk.delete(first.audit, str(paths["hog"]))
        assert refused.kind == "error" and refused.audit is None, refused
        assert paths["hog"].exists()
        done = await disk.delete(first.audit, "org/a")
        assert done.kind == "success" and "deleted" in done.status, done
        assert not paths["model"].exists() and paths["big"].exists()
        assert done.audit is not None and done.audit.find("org/a") is None
    finally:
        await connections.close_all()


async def test_the_launch_plan_is_made_again_with_what_the_user_acknowledged(
    tmp_path: Path, home: Path
) -> None:
    # The local box's ~/.rgt of its own (``home``): this machine's may hold a queue someone
    # launched (a run beside a user's demo planned from its start index 2, with no cells).
    fleet = local_fleet(tmp_path)
    connections = FleetConnections(fleet.hosts)
    try:
        control = LaunchControl(fleet, fleet.host("box1"), connections)
        plan, error = await control.plan_launch(None, ())
        assert error == "" and plan is not None and plan.start_index == 0
        assert not plan.ok and plan.unacknowledged, plan.problems  # this machine: no GPU
        first = plan.unacknowledged[0]
        again, _ = await control.plan_launch(None, (first,))
        assert again is not None and first not in again.unacknowledged
        cell = CellView(0, "never-ran", FAILED)
        retry, why = await control.plan_retry(cell, (), launch_acks=True)
        assert why == "" and retry is not None and not retry.ok, retry
        (problem,) = retry.problems
        assert problem.startswith("no cell named never-ran in the box's queue; its cells: ")
    finally:
        await connections.close_all()


async def test_move_plans_a_plain_move_of_cells_and_a_resume_of_one(
    tmp_path: Path, home: Path
) -> None:
    for name in ("w1", "w2"):
        (tmp_path / name).mkdir()
    (tmp_path / "q1.txt").write_text("configs/lr.yaml 1\n")
    (tmp_path / "q2.txt").write_text("")
    hosts = "".join(
        f'[[hosts]]\nname = "box{i}"\nssh = "local"\nworkdir = "{tmp_path}/w{i}"\n'
        f'queue = "q{i}.txt"\nrun = "python train.py {{cfg}}"\n\n'
        for i in (1, 2)
    )
    fleet = load_fleet(write_hosts(tmp_path, hosts))
    connections = FleetConnections(fleet.hosts)
    try:
        control = MoveControl(fleet, fleet.host("box1"), connections)
        plan, error = await control.plan(["nope", "nah"], "box2", from_scratch=False, acks=())
        assert error == "" and isinstance(plan, MovePlan) and not plan.ok
        assert any("no cell 'nope'" in p and "q1.txt" in p for p in plan.problems), plan
        one, error = await control.plan(["nope"], "box2", from_scratch=False, acks=())
        assert error == "" and isinstance(one, ResumeDialogPlan) and not one.ok
    finally:
        await connections.close_all()
