"""The runner scripts on their own: thread caps from recorded cgroups, content-addressed
deployment that never overwrites, the demo workload's checkpoint resume."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest
from support import FIXTURES, ROOT
from support.queues import SCRIPT_RUN, wait_view
from support.waiting import wait_for

from rgt_tui.demo.workload_setup import DemoCell, install_workload, workload_run_template
from rgt_tui.domain.queue_state import DONE, FINISHED
from rgt_tui.services.box_ctl import deployed_name
from rgt_tui.services.box_script import script_text
from rgt_tui.services.queue.check import check_fleet_queues
from rgt_tui.services.queue.launch import QueueError, launch, plan_launch

RUN_ONE = ROOT / "rgt_tui" / "scripts" / "run_one.sh"


def run_one(tmp_path: Path, tree: str, extra_env: dict[str, str] | None = None) -> tuple[str, str]:
    """Run run_one.sh locally against a recorded cgroup tree; (cell log, .oom record)."""
    env = {
        "PATH": os.environ["PATH"], "HOME": str(tmp_path),
        "RGT_PROC_ROOT": str(FIXTURES / tree / "proc"), "RGT_SYS_ROOT": str(FIXTURES / tree / "sys"),
        **(extra_env or {}),
    }  # fmt: skip
    q = tmp_path / "q"
    command = 'echo "threads=$OMP_NUM_THREADS/$MKL_NUM_THREADS unbuffered=$PYTHONUNBUFFERED cell=$RGT_CELL_NAME"'
    out = subprocess.run(
        ["bash", str(RUN_ONE), str(q), "0", "cell", str(tmp_path), command],
        env=env, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return (q / "cells" / "cell.log").read_text(), (q / "cells" / "cell.oom").read_text()


def test_threads_are_capped_to_a_recorded_v2_quota_and_its_oom_counter_recorded(tmp_path):
    log, oom = run_one(tmp_path, "cgroup_v2_limited")  # cpu.max "200000 100000": 2 vCPUs
    assert "threads=2/2 unbuffered=1 cell=cell" in log and "(threads 2, cgroup CPU quota)" in log
    assert re.fullmatch(r"start \d+ 2\nend \d+ 2\n", oom)  # memory.events oom_kill 2


def test_no_quota_falls_back_to_nproc_and_a_smaller_user_cap_is_kept(tmp_path):
    nproc = subprocess.run(["nproc"], capture_output=True, text=True, check=True).stdout.strip()
    log, oom = run_one(tmp_path, "cgroup_v1")  # cfs_quota_us -1: no limit
    assert f"threads={nproc}/{nproc}" in log and "no CPU quota: nproc" in log
    assert re.fullmatch(r"start \d+ 0\nend \d+ 0\n", oom)  # the recorded v1 oom_control
    log, _ = run_one(tmp_path / "b", "cgroup_v2_limited", {"OMP_NUM_THREADS": "1"})
    assert "threads=1/1" in log


def test_scripts_are_lf_only_and_deployed_names_follow_their_content():
    for name in ("run_queue.sh", "run_one.sh", "queue_ctl.sh"):
        text = script_text(name)
        assert "\r" not in text and text.startswith("#!/usr/bin/env bash\n") and "set -u" in text
    assert re.fullmatch(r"run_queue\.[0-9a-f]{12}\.sh", deployed_name("run_queue.sh"))
    top = ROOT / "scripts"
    for name in ("run_queue.sh", "run_one.sh"):
        assert (top / name).read_bytes() == script_text(name).encode()


async def test_a_deployed_script_is_never_overwritten_even_when_it_was_tampered_with(
    make_queue_fleet,
):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.write_queue(f"{qf.cell_script('c0', 'echo 0')} t\n")
    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
    await wait_view(qf, lambda v: v.state == FINISHED)
    deployed = qf.root() / ".rgt" / "bin" / deployed_name("run_one.sh")
    inode = deployed.stat().st_ino
    with deployed.open("a") as f:
        f.write("# edited on the box\n")
    plan = await plan_launch(qf.fleet, qf.host(), transport)
    with pytest.raises(QueueError) as refused:
        await launch(plan, transport)
    await transport.close()
    assert refused.value.code == "corrupt" and str(deployed) in refused.value.message
    assert (
        deployed.read_text().endswith("# edited on the box\n") and deployed.stat().st_ino == inode
    )


async def test_fresh_moves_the_old_queue_aside(make_queue_fleet):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.write_queue(f"{qf.cell_script('old', 'echo old')} t\n")
    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
    await wait_view(qf, lambda v: v.state == FINISHED)
    qf.write_queue(f"{qf.cell_script('new', 'echo new')} t\n")
    refused = await plan_launch(qf.fleet, qf.host(), transport)
    assert any("line 1 on the box: 'cells/old.sh t'" in p for p in refused.problems)
    fresh = await plan_launch(qf.fleet, qf.host(), transport, fresh=True)
    assert fresh.ok and any("moved aside" in w for w in fresh.warnings)
    result = await launch(fresh, transport)
    await transport.close()
    assert result.archived and (Path(result.archived) / "cells" / "old.state").exists()
    view = await wait_view(qf, lambda v: v.state == FINISHED)
    assert [(c.name, c.status) for c in view.cells] == [("new", DONE)]


@pytest.mark.filterwarnings("ignore:Failed to initialize NumPy")  # torch without numpy
async def test_a_killed_training_cell_resumes_from_its_checkpoint(make_queue_fleet):
    qf = await make_queue_fleet(1, run=workload_run_template())
    config = {"steps_per_epoch": 10, "checkpoint_every": 2, "step_sleep_s": 0.04}
    cell = DemoCell("slow", "reconstruction", 4, config)  # 40 steps, a checkpoint every 2
    (name,) = install_workload(qf.root(), "box1", qf.queue_file(), (cell,))
    checkpoint = qf.root() / "results" / name / "checkpoint.pt"
    cell_log = qf.qdir() / "cells" / f"{name}.log"

    def logged(text: str) -> bool:
        return cell_log.exists() and text in cell_log.read_text()

    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
    # The epoch line at step 10 comes after the checkpoint of step 10 (every 2 steps).
    await wait_for(lambda: logged("epoch 1/4 step 10 "), timeout=30, what="epoch 1 to end")
    pid = int(re.findall(r"^start \d+ \S+ (\d+)$", qf.state(name), re.M)[-1])
    os.kill(pid, signal.SIGKILL)  # mid-run, between or during checkpoint writes
    view = await wait_view(qf, lambda v: v.state == FINISHED)
    assert view.cells[0].exit_code == 137

    plan = await plan_launch(qf.fleet, qf.host(), transport, start_index=0)
    await launch(plan, transport)
    await transport.close()
    view = await wait_view(qf, lambda v: v.state == FINISHED, timeout=30, what="the resumed cell")
    assert view.cells[0].status == DONE and view.cells[0].attempts == 2
    import torch  # only here: the rest of the suite should not pay for importing it

    state = torch.load(checkpoint, weights_only=True)
    assert state["step"] == 40 and len(state["losses"]) == 40
    assert len(state["starts"]) == 2 and state["starts"][0] == 0
    assert 10 <= state["starts"][1] < 40  # continued from the checkpoint, not restarted
    metrics = json.loads((checkpoint.parent / "metrics.json").read_text())
    assert metrics["steps"] == 40 and metrics["starts"] == state["starts"]
    assert logged(f"resumed from {checkpoint} at step {state['starts'][1]}/40")
    assert not list(checkpoint.parent.glob("*.tmp"))


async def test_the_demo_fleet_comes_with_a_queue_per_box_and_unique_names(make_queue_fleet):
    qf = await make_queue_fleet(3, workload=True)
    fleet = qf.fleet
    checked = check_fleet_queues(fleet)
    assert checked.ok, checked.messages()
    assert len(checked.cells) == 9 and len({c.name for c in checked.cells}) == 9
    for host in fleet.hosts:
        assert host.run is not None and "train.py" in host.run and host.queue is not None
        assert (qf.root(host.name) / "train.py").exists()
        assert {c.name for c in checked.cells if c.file.endswith(f"{host.name}.txt")} == {
            f"{host.name}_lr3e-4", f"{host.name}_lr1e-3", f"{host.name}_wide",
        }  # fmt: skip
