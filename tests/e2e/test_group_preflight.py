"""A group's preflight over two real OpenSSH boxes on loopback (issue 41): the checks
across the boxes refuse the launch, each by name with its fix, and are acknowledgeable.

Both boxes are this machine (127.0.0.1), so what differs between them is made so for
real: a port rank 0's listener cannot take because another process holds it (the other
box then reaches that process, not rank 0's listener), a code tree edited on one box, a
clock read through a ``date`` on box2's PATH that runs five seconds ahead. The network
and fabric checks see this machine's own ``ip`` answers (lo, named by
``nccl_socket_ifname``) and no nvidia-smi.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli import rgt
from support.machine import free_port
from support.queues import QUEUE_PREFLIGHT_ACK, QUEUE_PYTHON, QueueSshServer, started_boxes

from rgt_tui.domain.preflight import PreflightReport
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.queue.backends import backend_for
from rgt_tui.services.queue.group.preflight import group_preflight

GROUP_CHECKS = ("same-code", "same-stack", "rendezvous", "nic", "mtu", "fabric", "clocks")


class SkewedBox(QueueSshServer):
    """A box whose ``date`` (first on its PATH) answers five seconds ahead."""

    def _write_config(self) -> None:
        fake = self.base_dir / "fakebin"
        fake.mkdir(parents=True, exist_ok=True)
        date = fake / "date"
        date.write_text('#!/bin/sh\necho "$(( $(/bin/date +%s) + 5 )).$(/bin/date +%N)"\n')
        date.chmod(0o755)
        super()._write_config()
        # sshd keeps only the first SetEnv line: PATH joins the one that sets HOME.
        text = self.config.read_text()
        path = f"SetEnv PATH={fake}:/usr/local/bin:/usr/bin:/bin "
        self.config.write_text(text.replace("SetEnv HOME=", path + "HOME=", 1))


@pytest.fixture
def pair(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[list[QueueSshServer]]:
    second = getattr(request, "param", QueueSshServer)
    with started_boxes(tmp_path, ("box1", "box2"), QueueSshServer, second) as made:
        yield made


def _tree(root: Path, text: str = "print('train')\n") -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "train.py").write_text(text)
    (root / "cfg.yaml").write_text("lr: 0.1\n")


def _fleet_file(tmp_path: Path, boxes: list[QueueSshServer], port: int, code: Path) -> Path:
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
        "run = 'echo rank {node_rank} of {nnodes} at {master_addr}:{master_port} {out}'\n"
        'workdir = "~/proj"\n'
        'durable_dir = "~/results"\n'
        'master_addr = "127.0.0.1"\n'
        f"master_port = {port}\n"
        'nccl_socket_ifname = "lo"\n'
        f'code = "{code}"\n'
        f"preflight_ack = [{acks}]\n"
        f'python = "{QUEUE_PYTHON}"\n'
    )
    path = tmp_path / "hosts.toml"
    path.write_text(text)
    return path


def _checks(plan: object) -> dict[str, object]:
    report = plan.preflight  # type: ignore[attr-defined]
    assert report is not None
    return {c.name: c for c in report.checks}


async def preflight_of(path: Path) -> PreflightReport:
    """The group ``pair``'s preflight, read from the fleet file at ``path``."""
    fleet = load_fleet(path)
    connections = FleetConnections(fleet.hosts)
    try:
        return await group_preflight(fleet, fleet.host("pair"), connections.transport("pair"))
    finally:
        await connections.close_all()


async def test_a_port_rank_0_cannot_take_is_refused_by_name_and_acknowledgeable(
    tmp_path: Path, pair: list[QueueSshServer]
) -> None:
    local = tmp_path / "code"
    _tree(local)
    for box in pair:
        _tree(box.workdir / "proj")
    port = free_port()
    fleet = load_fleet(_fleet_file(tmp_path, pair, port, local))
    group = fleet.host("pair")
    connections = FleetConnections(fleet.hosts)
    backend = backend_for(group, connections)
    transport = connections.transport("pair")
    try:
        plan = await backend.plan_launch(fleet, transport)
        checks = _checks(plan)
        for name in GROUP_CHECKS:
            assert checks[name].ok, (name, checks[name])  # type: ignore[attr-defined]
        assert plan.ok, plan.problems
        assert "rank 0 (box1) listened on 127.0.0.1" in checks["rendezvous"].detail  # type: ignore[attr-defined]

        # Something else holds master_port on rank 0's address (a torchrun left over).
        holder = socket.socket()
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # the check's TIME_WAITs
        holder.bind(("127.0.0.1", port))
        holder.listen(4)
        try:
            refused = await backend.plan_launch(fleet, transport)
            acked = await backend.plan_launch(fleet, transport, acks=["rendezvous"])
        finally:
            holder.close()
        check = _checks(refused)["rendezvous"]
        assert not check.ok  # type: ignore[attr-defined]
        assert f"rank 0 (box1) cannot listen on 127.0.0.1:{port}" in check.detail  # type: ignore[attr-defined]
        assert "rank 1 (box2) cannot reach" in check.detail  # type: ignore[attr-defined]
        assert "master_port" in check.fix  # type: ignore[attr-defined]
        assert not refused.ok and refused.unacknowledged == ("rendezvous",)
        assert any(p.startswith("preflight check 'rendezvous' failed") for p in refused.problems)
        assert acked.ok, acked.problems
        assert any(
            "'rendezvous' failed (acknowledged for this launch)" in w for w in acked.warnings
        )
    finally:
        await connections.close_all()


@pytest.mark.parametrize("pair", [SkewedBox], indirect=True)
async def test_a_tree_that_differs_on_one_box_and_a_skewed_clock_are_refused(
    tmp_path: Path, pair: list[QueueSshServer]
) -> None:
    local = tmp_path / "code"
    _tree(local)
    _tree(pair[0].workdir / "proj")
    _tree(pair[1].workdir / "proj", "print('edited on box2')\n")
    fleet_path = _fleet_file(tmp_path, pair, free_port(), local)
    fleet = load_fleet(fleet_path)
    connections = FleetConnections(fleet.hosts)
    backend = backend_for(fleet.host("pair"), connections)
    try:
        plan = await backend.plan_launch(fleet, connections.transport("pair"), acks=["code"])
    finally:
        await connections.close_all()
    checks = _checks(plan)
    same = checks["same-code"]
    assert not same.ok and "rank 1 (box2) holds" in same.detail  # type: ignore[attr-defined]
    assert "rgt-tui sync" in same.fix  # type: ignore[attr-defined]
    clocks = checks["clocks"]
    assert not clocks.ok and "rank 1 (box2)'s clock is" in clocks.detail  # type: ignore[attr-defined]
    # The box's own code check is folded in, naming the box (acknowledged here).
    assert "rank 1 (box2)" in checks["code"].detail  # type: ignore[attr-defined]
    assert set(plan.unacknowledged) == {"same-code", "clocks"}

    # `rgt-tui preflight GROUP` runs the same checks and exits 1.
    done = rgt("preflight", "pair", "--json", env={"RGT_HOSTS": str(fleet_path)}, timeout=300)
    assert done.returncode == 1, done.stderr

    data = json.loads(done.stdout)
    assert {"same-code", "clocks"} <= set(data["blocking"])
    assert {c["name"] for c in data["checks"]} >= set(GROUP_CHECKS)


async def test_before_the_first_launch_each_box_runs_its_own_python(
    tmp_path: Path, pair: list[QueueSshServer]
) -> None:
    """ux-c #3: a group never launched has no ``~/.rgt/group.env`` yet, and its preflight
    must not source it; a group with readiness keys but no ``python`` runs each box's
    own interpreter (each box names a different one here)."""
    local = tmp_path / "code"
    _tree(local)
    for box in pair:
        _tree(box.workdir / "proj")
    text = _fleet_file(tmp_path, pair, free_port(), local).read_text()
    text = text.replace(f'python = "{QUEUE_PYTHON}"\n', "")  # the group's
    own = {"box1": QUEUE_PYTHON, "box2": f"{QUEUE_PYTHON} -B"}
    for name, python in own.items():
        text = text.replace(f'name = "{name}"\n', f'name = "{name}"\npython = "{python}"\n')
    path = tmp_path / "hosts.toml"
    path.write_text(text)
    report = await preflight_of(path)
    for box in pair:
        assert not (box.workdir / ".rgt" / "group.env").exists()
    checks = {c.name: c for c in report.checks}
    python = checks["python"]
    assert python.ok, python
    assert "rank 0 (box1): Python" in python.detail and "-B" not in python.detail.split(";")[0]
    assert f"from {QUEUE_PYTHON} -B (the host's python key)" in python.detail
    assert checks["storage"].ok, checks["storage"]

    # No python key anywhere: the run template's own (here none: python3), not sourced.
    bare = text.replace(f'python = "{QUEUE_PYTHON}"\n', "").replace(
        f'python = "{QUEUE_PYTHON} -B"\n', ""
    )
    path.write_text(bare)
    report = await preflight_of(path)
    python = next(c for c in report.checks if c.name == "python")
    assert python.ok, python
    assert "group.env" not in python.detail
