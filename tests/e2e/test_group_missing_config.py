"""A group's queue line whose config the code tree lacks (ux-h #16), over two real
OpenSSH boxes on loopback: the launch plan refuses it once, for every rank (it is one
line of the group's one queue file, not one per box), and ``rgt-tui preflight GROUP``
names it and does not say ready, since the launch will refuse it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli import rgt
from support.machine import free_port
from support.queues import QueueSshServer, started_boxes
from test_group_preflight import _fleet_file, _tree

from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.queue.backends import backend_for


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[list[QueueSshServer]]:
    with started_boxes(tmp_path, ("box1", "box2")) as made:
        yield made


async def test_a_missing_config_is_refused_once_and_preflight_is_not_ready(
    tmp_path: Path, pair: list[QueueSshServer]
) -> None:
    local = tmp_path / "code"
    _tree(local)
    for box in pair:
        _tree(box.workdir / "proj")
    path = _fleet_file(tmp_path, pair, free_port(), local)
    text = path.read_text().replace("{master_port} {out}", "{master_port} {cfg} {out}")
    path.write_text(text)
    (tmp_path / "queues" / "pair.txt").write_text("cfg.yaml fit 1\nconfigs/nosuch.yaml big 1\n")
    fleet = load_fleet(path)
    connections = FleetConnections(fleet.hosts)
    backend = backend_for(fleet.host("pair"), connections)
    try:
        plan = await backend.plan_launch(fleet, connections.transport("pair"))
    finally:
        await connections.close_all()
    about = [p for p in plan.problems if "configs/nosuch.yaml" in p]
    assert len(about) == 1, plan.problems
    assert about[0].startswith("every rank: ") and ":2: configs/nosuch.yaml is not in" in about[0]
    assert not any(p.startswith("rank ") for p in plan.problems), plan.problems

    env: dict[str, str | None] = {"RGT_HOSTS": str(path)}
    done = rgt("preflight", "pair", env=env, timeout=300)
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stdout.splitlines()
    assert not any(line.startswith("ready") for line in lines), done.stdout
    assert any(":2: configs/nosuch.yaml is not in" in line for line in lines), done.stdout
    assert lines[-1].startswith("not ready: every check passed or is acknowledged, but a launch")

    data = json.loads(rgt("preflight", "pair", "--json", env=env, timeout=300).stdout)
    assert data["blocking"] == [] and len(data["queue_problems"]) == 1

    # A credential this machine cannot read: the launch refuses it, so preflight names
    # it too (hour s18b #5: it said nothing of credentials).
    path.write_text(
        path.read_text() + '\n[groups.credentials]\nTOK = { env = "RGT_TEST_UNSET_TOKEN" }\n'
    )
    env["RGT_TEST_UNSET_TOKEN"] = None
    data = json.loads(rgt("preflight", "pair", "--json", env=env, timeout=300).stdout)
    (cred,) = [p for p in data["queue_problems"] if "RGT_TEST_UNSET_TOKEN" in p]
    assert cred.startswith("cannot read "), cred
