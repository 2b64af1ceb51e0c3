"""Controllers per resource (issue 38): the queue's stop and kill, VRAM, the disk and the
launch plan run their service work in Textual-free controllers; a screen asks and shows.
Each is driven here with no App at all (``support.controller_host.LoopHost``) over this
machine (``ssh = "local"``) with real files."""

from __future__ import annotations

from pathlib import Path

from support.controller_host import LoopHost
from support.fleet_files import write_hosts
from support.waiting import wait_for

from rgt_tui.controllers.queue_control import QueueControl
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.fleet.file import load_fleet


def local_fleet(tmp_path: Path):  # type: ignore[no-untyped-def]
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "q.txt").write_text("a: --lr 1\n")
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


async def test_stop_on_a_queue_never_launched_is_a_notice_naming_the_host(tmp_path: Path) -> None:
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
