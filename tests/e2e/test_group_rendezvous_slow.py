"""The group preflight's rendezvous check with a box slow to log in (h617 #3), over two
real OpenSSH boxes on loopback: rank 0's shell sleeps in its ``.bashrc`` before its
one-shot listener starts (a rented box's slow login scripts), longer than the other rank
keeps dialling. The dial waits for rank 0 to say it listens, so the check passes; it
failed as "connection refused" with the master_addr fix though rank 0 then bound."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.machine import free_port
from support.queues import QUEUE_PREFLIGHT_ACK, QUEUE_PYTHON, QueueSshServer, started_boxes

from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.queue.group.preflight import CONNECT_S, group_preflight

SLOW_S = CONNECT_S + 2  # past the other rank's dialling window


class SlowListenerBox(QueueSshServer):
    """A box whose login shell sleeps before the rendezvous listener (only that command:
    the rest of the preflight is not made slower than the test needs)."""

    def _write_config(self) -> None:
        super()._write_config()
        (self.workdir / ".bashrc").write_text(
            f'case "$BASH_EXECUTION_STRING" in *" rdzv listen "*) sleep {SLOW_S};; esac\n'
        )


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[list[QueueSshServer]]:
    with started_boxes(tmp_path, ("box1", "box2"), SlowListenerBox) as made:
        yield made


def _fleet_file(tmp_path: Path, boxes: list[QueueSshServer]) -> Path:
    acks = ", ".join(f'"{n}"' for n in QUEUE_PREFLIGHT_ACK)
    text = f'[fleet]\nresults_dir = "{tmp_path / "results"}"\n\n'
    for box in boxes:
        text += box._hosts_toml() + "\n"
    queue = tmp_path / "queues" / "pair.txt"
    queue.parent.mkdir(parents=True, exist_ok=True)
    queue.write_text("cfg/a.toml fast 1\n")
    text += (
        "[[groups]]\n"
        'name = "pair"\n'
        'hosts = ["box1", "box2"]\n'
        f'queue = "{queue}"\n'
        "run = 'echo rank {node_rank} {out}'\n"
        'workdir = "~"\n'
        'durable_dir = "~/results"\n'
        'master_addr = "127.0.0.1"\n'
        f"master_port = {free_port()}\n"
        'nccl_socket_ifname = "lo"\n'
        f"preflight_ack = [{acks}]\n"
        f'python = "{QUEUE_PYTHON}"\n'
    )
    path = tmp_path / "hosts.toml"
    path.write_text(text)
    return path


@pytest.mark.timeout(180)
async def test_the_dial_waits_for_a_listener_slow_to_start(
    tmp_path: Path, pair: list[QueueSshServer]
) -> None:
    fleet = load_fleet(_fleet_file(tmp_path, pair))
    connections = FleetConnections(fleet.hosts)
    try:
        report = await group_preflight(fleet, fleet.host("pair"), connections.transport("pair"))
    finally:
        await connections.close_all()
    check = report.check("rendezvous")
    assert check is not None
    assert check.ok, (check.detail, check.fix)
    assert "rank 0 (box1) listened on 127.0.0.1" in check.detail
