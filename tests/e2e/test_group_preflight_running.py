"""A group's preflight while its own cell runs (ux-h #7), over two real OpenSSH boxes on
loopback: the running torchrun's rendezvous store holds master_port on rank 0, and the
``rendezvous`` check says so (the cell by name, preflight again once it ends) instead of
failing and telling the user to end what holds the port.

The job is the group tests' own (tests/support/ddp_train.py under the project's
torchrun, CPU torch with gloo): its ``hold`` mode keeps rank 0's worker asleep after step
2, so the cell runs while preflight looks.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.queues import QueueSshServer, started_boxes
from support.waiting import wait_for
from test_group_torchrun import _fleet_file

from rgt_tui.domain.queue_state import RUNNING
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.queue.backends import backend_for
from rgt_tui.services.queue.group.preflight import group_preflight


@pytest.fixture
def boxes(tmp_path: Path) -> Iterator[tuple[QueueSshServer, QueueSshServer]]:
    with started_boxes(tmp_path, ("box1", "box2")) as made:
        yield made[0], made[1]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


# One torchrun launch of two boxes on a shared two-core machine, and two preflights.
@pytest.mark.timeout(600)
async def test_the_groups_own_running_cell_holding_the_port_is_no_problem(
    tmp_path: Path, boxes: tuple[QueueSshServer, QueueSshServer]
) -> None:
    box1, _ = boxes
    path = _fleet_file(tmp_path, boxes)
    # Only the cell that holds: it runs while preflight looks.
    (tmp_path / "queues" / "pair.txt").write_text("cfg/crash.toml hold 4\n")
    fleet = load_fleet(path)
    group = fleet.host("pair")
    assert group.group is not None
    port = group.group.master_port
    connections = FleetConnections(fleet.hosts)
    backend = backend_for(group, connections)
    transport = connections.transport("pair")
    try:
        plan = await backend.plan_launch(fleet, transport)
        assert plan.ok, plan.problems
        await backend.launch(plan, transport)
        log = box1.workdir / ".rgt/queue/cells/crash.log"
        await wait_for(lambda: log.exists() and "holding" in log.read_text(), 240, "holding")
        assert _listening(port)  # the job's rendezvous store, on rank 0's address

        report = await group_preflight(fleet, group, transport, links=connections)
        check = next(c for c in report.checks if c.name == "rendezvous")
        assert check.ok, check
        assert check.detail == (
            f"not tested: pair's cell `crash` is running, and its torchrun holds "
            f"127.0.0.1:{port} on rank 0 (box1); preflight again once it ends"
        )
        assert "ss -ltnp" not in check.fix

        # The view still says the cell runs: the check's word was not a guess.
        view = await backend.read_view(transport)
        assert next(c.status for c in view.cells if c.name == "crash") == RUNNING
        await backend.kill(transport, "crash", then="stop")
    finally:
        await connections.close_all()
