"""Issue 42's preflight checks over real loopback boxes running the real box script:
``arch`` with this machine's CPU torch (no GPU: said, passed) and a stand-in torch that
answers as a cu124 wheel on an RTX 5090 (refusing the launch until acknowledged),
``storage`` naming this machine's real mounts, ``crlf`` over real files of a code tree
and the queue file (and ``rgt-tui sync`` warning of them), and the disk check budgeting
the cells a launch will run (U6)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

from support.code_trees import add_code, git_tree
from support.preflight_box import h100_smi, stand_in_torch
from support.queues import QUEUE_PREFLIGHT_ACK, SCRIPT_RUN, wait_view

from rgt_tui.domain.config import Readiness
from rgt_tui.domain.preflight import CheckContext, parse_box_facts
from rgt_tui.domain.preflight_arch import check_arch
from rgt_tui.domain.queue_state import FINISHED
from rgt_tui.domain.run_interpreter import run_interpreter
from rgt_tui.profiles import profile
from rgt_tui.services.preflight import check_program, preflight
from rgt_tui.services.queue.launch import launch, plan_launch

FIXTURES = Path(__file__).parents[1] / "fixtures"
NO_KERNEL = json.loads((FIXTURES / "torch_arch" / "rtx5090_cu124.json").read_text())


def by_name(report) -> dict:
    return {c.name: c for c in report.checks}


def test_the_box_program_on_this_machines_cpu_torch_says_there_is_no_gpu_to_compare():
    """A real run of preflight_check.py in this interpreter (torch's CPU build)."""
    out = subprocess.run(
        [sys.executable, "-"], input=check_program(), capture_output=True, text=True,
        timeout=300, check=True, env={"PATH": "/usr/bin:/bin", "RGT_PREFLIGHT_PATHS": "workdir\t/"},
    )  # fmt: skip
    facts = parse_box_facts("".join(f"py\t{line}\n" for line in out.stdout.splitlines()))
    assert facts.torch is not None and facts.torch["arch"] == {"arch_list": [], "devices": []}
    assert facts.storage is not None and facts.storage["paths"][0]["mount"] == "/"
    ctx = CheckContext(
        "local", profile("generic-ssh"), Readiness(), run_interpreter(None), "~", "~"
    )
    check = check_arch(facts, ctx)
    assert check.ok and check.detail == (
        "no GPU torch can use (a CPU-only build): no architecture to compare (U28)"
    )


async def test_a_card_the_wheel_has_no_kernels_for_refuses_the_launch_until_acked(
    make_queue_fleet, tmp_path
):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.loopback.box("box1").extra_path.append(h100_smi(tmp_path / "smi").parent)
    device = NO_KERNEL["devices"][0]
    site = stand_in_torch(
        tmp_path / "site", cuda="12.4", devices=1, arch_list=tuple(NO_KERNEL["arch_list"]),
        capability=tuple(device["capability"]), name=device["name"],
        op_error=device["op_error"],
    )  # fmt: skip
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nPYTHONPATH={site} exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    qf.write_queue(f"{qf.cell_script('one', 'echo one')} t\n")
    qf.set_preflight_ack(tuple(n for n in QUEUE_PREFLIGHT_ACK if n != "arch"))  # this test's
    host = qf.host()
    host = dataclasses.replace(host, ready=dataclasses.replace(host.ready, python=str(python)))
    transport = qf.transport()
    try:
        await transport.connect()
        plan = await plan_launch(qf.fleet, host, transport)
        arch = next(p for p in plan.problems if p.startswith("preflight check 'arch'"))
        assert not plan.ok
        assert "GPU 0 NVIDIA GeForce RTX 5090 is sm_120" in arch and "no kernel image" in arch
        assert "whl/cu128" in arch and "--ack arch" in arch
        plan = await plan_launch(qf.fleet, host, transport, acks=["arch"])
        assert not [p for p in plan.problems if "'arch'" in p], plan.problems
        assert any("preflight check 'arch' failed (acknowledged" in w for w in plan.warnings)
    finally:
        await transport.close()


async def test_storage_names_this_machines_mounts_and_a_data_dir(make_queue_fleet, tmp_path):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    host = dataclasses.replace(qf.host(), data_dir="/dev/shm")
    transport = qf.transport()
    await transport.connect()
    try:
        report = await preflight(qf.fleet, host, transport)
    finally:
        await transport.close()
    storage = by_name(report)["storage"]
    assert storage.ok, storage
    assert storage.detail.startswith("data /dev/shm: tmpfs, in memory; workdir ")
    assert "checkpoints " in storage.detail


async def test_crlf_files_of_the_tree_and_the_queue_fail_crlf_by_name(make_queue_fleet, tmp_path):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    tree = tmp_path / "code"
    git_tree(tree)
    (tree / "run.sh").write_bytes(b"#!/bin/bash\r\nset -e\r\necho hi\r\n")
    (tree / "configs").mkdir()
    (tree / "configs" / "a.yaml").write_bytes(b"lr: 0.1\r\n")
    (tree / "train.py").write_bytes(b"print(1)\r\n")  # python reads CRLF fine: not named
    (tree / "ok.sh").write_bytes(b"echo fine\n")
    qf.write_queue(f"{qf.cell_script('one', 'echo one')} t\r\n")
    add_code(qf.loopback.hosts_file, tree)
    qf._fleet = None  # reloaded with the code key
    host = qf.host()
    transport = qf.transport()
    await transport.connect()
    try:
        crlf = by_name(await preflight(qf.fleet, host, transport))["crlf"]
    finally:
        await transport.close()
    assert not crlf.ok
    assert "3 files with Windows (CRLF) line endings" in crlf.detail
    assert "configs/a.yaml (config file)" in crlf.detail and "run.sh (shell script)" in crlf.detail
    assert f"{host.queue} (queue file)" in crlf.detail
    assert "train.py" not in crlf.detail and "ok.sh" not in crlf.detail
    assert "dos2unix configs/a.yaml run.sh" in crlf.fix


async def test_a_launch_budgets_the_disk_for_every_cell_still_to_run(make_queue_fleet):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.write_queue(
        "".join(f"{qf.cell_script(n, 'echo ' + n)} t\n" for n in ("one", "two", "three"))
    )
    host = qf.host()
    host = dataclasses.replace(host, ready=dataclasses.replace(host.ready, checkpoint_gb=2.0))
    transport = qf.transport()
    try:
        await transport.connect()
        plan = await plan_launch(qf.fleet, host, transport)
        assert plan.preflight is not None
        disk = by_name(plan.preflight)["disk"]
        assert "3 cells still to run × keep_checkpoints 2 × 2.0G + 1 being written" in disk.detail
        plan = await plan_launch(qf.fleet, host, transport, start_index=2)
        assert plan.preflight is not None
        assert "1 cell still to run × keep_checkpoints 2" in by_name(plan.preflight)["disk"].detail
        # Done, then planned from 0 again: the runner runs done cells again, and the
        # budget counts them (a user's hour read "0 cells" beside "3 of 3 cells to run").
        acks = plan.unacknowledged  # no GPU here: acknowledged, as a user would
        plan = await plan_launch(qf.fleet, host, transport, start_index=2, acks=acks)
        assert plan.ok, plan.problems
        await launch(plan, transport)
        await wait_view(qf, lambda v: v.state == FINISHED, what="three to run")
        plan = await plan_launch(qf.fleet, host, transport, start_index=2, acks=acks)
        assert any("will run again" in w for w in plan.warnings), plan.warnings
        assert plan.preflight is not None
        assert "1 cell still to run × keep_checkpoints 2" in by_name(plan.preflight)["disk"].detail
    finally:
        await transport.close()
