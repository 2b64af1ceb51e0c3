"""A group's code goes to every box (docs/groups.md; ux-c #2): ``rgt-tui sync GROUP`` and
the TUI's ``y`` push the group's tree to every rank's workdir and report each box, over
two real OpenSSH boxes on loopback, each with its own HOME. A box whose sync fails is
named, the others are still synced, and the exit status says so.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.cli import arun
from support.machine import free_port
from support.queues import QUEUE_PREFLIGHT_ACK, QueueSshServer, started_boxes

from rgt_tui.controllers.ready_jobs import sync_job
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.fleet.file import load_fleet


@pytest.fixture
def boxes(tmp_path: Path) -> Iterator[tuple[QueueSshServer, QueueSshServer]]:
    with started_boxes(tmp_path, ("box1", "box2")) as made:
        yield made[0], made[1]


def _fleet_file(tmp_path: Path, boxes: tuple[QueueSshServer, ...], code: Path) -> Path:
    """The group sets ``code`` (and so the tree); the boxes set none."""
    acks = ", ".join(f'"{n}"' for n in QUEUE_PREFLIGHT_ACK)
    text = f'[fleet]\nresults_dir = "{tmp_path / "results"}"\n\n'
    for box in boxes:
        text += box._hosts_toml() + "\n"
    queue = tmp_path / "queues" / "pair.txt"
    queue.parent.mkdir(parents=True, exist_ok=True)
    queue.write_text("cfg.yaml t 1\n")
    text += (
        "[[groups]]\n"
        'name = "pair"\n'
        'hosts = ["box1", "box2"]\n'
        f'queue = "{queue}"\n'
        "run = 'echo {node_rank} {cfg} {out}'\n"
        'workdir = "~/work"\n'
        'durable_dir = "~/results"\n'
        'master_addr = "127.0.0.1"\n'
        f"master_port = {free_port()}\n"
        f'code = "{code}"\n'
        f"preflight_ack = [{acks}]\n"
    )
    path = tmp_path / "hosts.toml"
    path.write_text(text)
    return path


def _tree(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "train.py").write_text("print('train')\n")
    (root / "cfg.yaml").write_text("lr: 0.1\n")
    return root


async def test_sync_group_pushes_the_tree_to_every_box_and_names_one_that_fails(
    tmp_path: Path, boxes: tuple[QueueSshServer, QueueSshServer]
) -> None:
    box1, box2 = boxes
    hosts = _fleet_file(tmp_path, boxes, _tree(tmp_path / "code"))

    synced = await arun("sync", "pair", "--hosts", hosts, timeout=180)
    assert synced.returncode == 0, synced.stdout + synced.stderr
    for box in boxes:
        assert (box.workdir / "work" / "train.py").read_text() == "print('train')\n"
    lines = synced.stdout.splitlines()
    assert any(line.startswith("pair: rank 0 (box1): sent 2 of 2 files") for line in lines), lines
    assert any(line.startswith("pair: rank 1 (box2): sent 2 of 2 files") for line in lines), lines

    checked = await arun("sync", "pair", "--check", "--hosts", hosts, timeout=180)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "pair: rank 1 (box2): in sync (2 files)" in checked.stdout

    # box2's copy edited by hand: --check names that box and exits 1.
    (box2.workdir / "work" / "train.py").write_text("print('edited on box2')\n")
    differs = await arun("sync", "pair", "--check", "--hosts", hosts, timeout=180)
    assert differs.returncode == 1, differs.stdout
    assert "pair: rank 0 (box1): in sync" in differs.stdout
    assert "pair: 1 of 2 boxes in sync; not in sync: rank 1 (box2)" in differs.stdout

    # box2's workdir cannot be made (a file stands there): box1 is still synced.
    (tmp_path / "code" / "train.py").write_text("print('v2')\n")
    shutil.rmtree(box2.workdir / "work")
    (box2.workdir / "work").write_text("not a folder\n")
    failed = await arun("sync", "pair", "--hosts", hosts, timeout=180)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert (box1.workdir / "work" / "train.py").read_text() == "print('v2')\n"
    assert "pair: rank 1 (box2):" in failed.stderr
    assert "pair: 1 of 2 boxes synced; failed: rank 1 (box2)" in failed.stdout


async def test_y_on_a_group_syncs_every_box(
    tmp_path: Path, boxes: tuple[QueueSshServer, QueueSshServer]
) -> None:
    fleet = load_fleet(_fleet_file(tmp_path, boxes, _tree(tmp_path / "code")))
    group = fleet.host("pair")
    states: list[dict[str, Any]] = []
    connections = FleetConnections(fleet.hosts)
    try:
        await sync_job(fleet, group, connections.transport("pair"), lambda **c: states.append(c))
    finally:
        await connections.close_all()
    for box in boxes:
        assert (box.workdir / "work" / "train.py").is_file(), box.host_name
    progress = [s["sync_progress"][2] for s in states if s.get("sync_progress")]
    assert any(p.startswith("rank 1 (box2): ") for p in progress), progress
    result = next(s["sync_result"] for s in states if s.get("sync_result"))
    assert result.files_sent == 4  # two files to each box
    assert "rank 0 (box1), rank 1 (box2)" in result.method
