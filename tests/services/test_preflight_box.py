"""Preflight on loopback boxes, each set up to fail one check for its reason: a stand-in
nvidia-smi replaying recorded output, a torch-less venv, the project's real CPU torch, a
stand-in torch whose CUDA build is newer than the recorded driver, someone else's
process on the GPU, a disk budget that cannot fit, a RunPod durable dir off the volume."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from support.code_trees import add_code, git_tree
from support.machine import read_only_tmpfs
from support.preflight_box import (
    busy_apps,
    failed_driver_smi,
    h100_smi,
    old_driver_smi,
    stand_in_torch,
    torchless_python,
)

from rgt_tui.domain.config import HostConfig
from rgt_tui.services.code_sync import sync_code
from rgt_tui.services.preflight import PreflightReport, preflight


async def run_preflight(qf, host: HostConfig) -> PreflightReport:
    transport = qf.transport()
    await transport.connect()
    try:
        return await preflight(qf.fleet, host, transport)
    finally:
        await transport.close()


def with_gpu(qf, folder: Path) -> None:
    qf.loopback.box("box1").extra_path.append(folder)


def configured(qf, *, run: str, profile: str = "generic-ssh", **ready) -> HostConfig:
    """The host with this ``run`` template, whose interpreter preflight must use: the
    queue fleets' own ``python`` key (support/queues.py) is dropped unless given."""
    host = qf.host()
    ready = {"python": None, **ready}
    return dataclasses.replace(
        host, run=run, profile=profile, ready=dataclasses.replace(host.ready, **ready)
    )


def fake_torch_run(tmp: Path, *, cuda: str, devices: int = 1) -> str:
    path = stand_in_torch(tmp / "site", cuda=cuda, devices=devices)
    return f"cd . && PYTHONPATH={path} {sys.executable} train.py {{cfg}}"


def by_name(report: PreflightReport) -> dict:
    return {c.name: c for c in report.checks}


async def test_a_ready_box_passes_every_check(make_queue_fleet, tmp_path):
    qf = await make_queue_fleet(1)
    with_gpu(qf, h100_smi(tmp_path / "smi").parent)
    host = configured(qf, run=fake_torch_run(tmp_path, cuda="12.8"), checkpoint_gb=0.5)
    report = await run_preflight(qf, host)
    assert report.failed == (), report.to_json()
    checks = by_name(report)
    assert [c.name for c in report.checks] == [
        "python", "torch", "gpu", "driver", "arch", "gpu-busy", "disk", "storage", "durable",
        "tmux", "crlf", "syntax",
    ]  # fmt: skip
    assert "torch's CUDA 12.8 ≤ the driver 590.48.01, CUDA 13.1" in checks["driver"].detail
    assert "NVIDIA H100 80GB HBM3" in checks["gpu"].detail
    assert "GPU 0 NVIDIA H100 80GB HBM3 sm_90: a CUDA op ran on each" in checks["arch"].detail
    # No launch: one cell is budgeted, and the arithmetic is said (U6).
    assert (
        "1 cell (the queue's cells still to run are counted at launch) × keep_checkpoints 2 "
        "× 512M + 1 being written (512M) = 1.5G; size from checkpoint_gb 0.5"
    ) in checks["disk"].detail
    # The run template's set-up and interpreter ran it: PYTHONPATH reached the program.
    assert "the run template" in checks["python"].detail


async def test_a_torchless_interpreter_fails_torch_with_the_install_command(
    make_queue_fleet, tmp_path
):
    qf = await make_queue_fleet(1)
    with_gpu(qf, h100_smi(tmp_path / "smi").parent)
    python = torchless_python(tmp_path / "venv")
    report = await run_preflight(qf, configured(qf, run=f"{python} train.py {{cfg}}"))
    torch = by_name(report)["torch"]
    assert not torch.ok
    assert "No module named 'torch'" in torch.detail and str(python) in torch.detail
    # The driver's CUDA 13.1 picks the newest wheel index it can run.
    assert torch.fix.startswith(
        f"install it in the run's environment: {python} -m pip install torch"
    )
    assert "--index-url https://download.pytorch.org/whl/cu130" in torch.fix
    assert by_name(report)["python"].ok
    # ux-d #6: arch could not run without torch: not checked is not passed (as driver).
    arch = by_name(report)["arch"]
    assert not arch.ok, arch
    assert arch.detail == "not checked: torch does not import here (see torch)"
    # With the way on for a run that does not use torch (hour s19b #9: circular).
    assert arch.fix == (
        "fix torch first — or, for a run that does not use torch, acknowledge arch with torch"
    )


async def test_with_no_python_on_the_box_the_checks_it_runs_are_not_checked_not_passed(
    make_queue_fleet, tmp_path
):
    """ux-a #10: the run's python is not on the box, so it never ran: every
    check that needed it says so and fails (arch used to read as passed). gpu-busy asks
    nvidia-smi, not python: with none on the box it passes for its own reason."""
    qf = await make_queue_fleet(1)
    host = configured(qf, run="python train.py {cfg}", python="/no/such/bin/python")
    report = await run_preflight(qf, host)
    checks = by_name(report)
    assert not checks["python"].ok
    for name in ("torch", "arch", "storage"):
        assert not checks[name].ok, name
        assert checks[name].detail == "not checked: the run's python did not answer", name
        assert checks[name].fix == "fix python first", name
    assert not checks["driver"].ok
    assert checks["gpu-busy"].ok and "no nvidia-smi on the box" in checks["gpu-busy"].detail


async def test_cpu_torch_on_a_gpu_box_fails_gpu_u31(make_queue_fleet, tmp_path):
    """The project's own interpreter: the real CPU torch build, beside a recorded H100."""
    qf = await make_queue_fleet(1)
    with_gpu(qf, h100_smi(tmp_path / "smi").parent)
    report = await run_preflight(qf, configured(qf, run=f"{sys.executable} -u train.py {{cfg}}"))
    gpu, driver = by_name(report)["gpu"], by_name(report)["driver"]
    assert not gpu.ok and "torch sees no GPU (a CPU-only torch build)" in gpu.detail
    assert "nvidia-smi lists 1 (NVIDIA H100 80GB HBM3) (U31)" in gpu.detail
    assert "whl/cu130" in gpu.fix
    assert not driver.ok and "CPU-only build" in driver.detail


async def test_torch_built_for_a_newer_cuda_than_the_driver_fails_driver_u28(
    make_queue_fleet, tmp_path
):
    qf = await make_queue_fleet(1)
    with_gpu(qf, old_driver_smi(tmp_path / "smi").parent)
    report = await run_preflight(qf, configured(qf, run=fake_torch_run(tmp_path, cuda="12.8")))
    driver = by_name(report)["driver"]
    assert not driver.ok
    assert "built for CUDA 12.8, newer than the driver 440.64, CUDA 10.2" in driver.detail
    assert "CUDA ≤ 10.2" in driver.fix and "newer driver (≥ 570.26 for CUDA 12.8)" in driver.fix
    assert by_name(report)["gpu"].ok  # torch (the stand-in) sees the one GPU listed


async def test_no_driver_and_no_nvidia_smi_fail_gpu(make_queue_fleet, tmp_path):
    qf = await make_queue_fleet(1)
    run = f"{sys.executable} train.py {{cfg}}"
    report = await run_preflight(qf, configured(qf, run=run))
    gpu = by_name(report)["gpu"]
    assert not gpu.ok and gpu.detail.startswith("no GPU: nvidia-smi is not on the box's PATH")
    assert 'preflight_ack = ["gpu"]' in gpu.fix
    assert by_name(report)["gpu-busy"].ok

    with_gpu(qf, failed_driver_smi(tmp_path / "smi").parent)
    gpu = by_name(await run_preflight(qf, configured(qf, run=run)))["gpu"]
    assert not gpu.ok and "couldn't communicate with the NVIDIA driver" in gpu.detail


# ".train": a name the queue accepts, a dot file on the box its glob missed (h583 #1).
@pytest.mark.parametrize("name", ["train", ".train"])
async def test_another_process_on_the_gpu_fails_gpu_busy_but_a_cells_does_not(
    make_queue_fleet, tmp_path, name
):
    qf = await make_queue_fleet(1)
    # A running cell of this host's queue (its state file as run_one.sh writes it), whose
    # child holds the GPU: that one is the queue's own, not someone else's.
    cell = await asyncio.create_subprocess_exec(
        "bash", "-c", "sleep 300 & echo $!; wait", stdout=asyncio.subprocess.PIPE
    )
    child = None
    try:
        assert cell.stdout is not None
        child = int(await cell.stdout.readline())
        box = qf.loopback.box("box1")
        boot = box.boot_id_file.read_text().strip()
        cells = qf.qdir() / "cells"
        cells.mkdir(parents=True)
        (cells / f"{name}.state").write_text(
            f"start {int(time.time())} {boot} {cell.pid}\ncode tree={'a' * 64} commit=- dirty=0\n"
        )
        apps = f"{child}, 1542\n" + busy_apps()
        with_gpu(qf, h100_smi(tmp_path / "smi", apps=apps).parent)
        report = await run_preflight(qf, configured(qf, run=fake_torch_run(tmp_path, cuda="12.4")))
    finally:
        if child is not None:
            os.kill(child, signal.SIGTERM)
        cell.terminate()
        await cell.wait()
    busy = by_name(report)["gpu-busy"]
    assert not busy.ok
    assert "3 process(es) not of this queue hold GPU memory" in busy.detail
    assert "pid 11345" in busy.detail and "15690 MiB" in busy.detail
    assert f"pid {child} " not in busy.detail
    assert "CUDA_VISIBLE_DEVICES" in busy.fix
    # rgt-tui does kill a listed holder, after the PID is typed: the fix says how
    assert f"rgt-tui vram {report.host} --kill PID" in busy.fix and "x on the GPU tab" in busy.fix


async def test_disk_budget_from_config_or_the_newest_checkpoint(make_queue_fleet, tmp_path):
    qf = await make_queue_fleet(1)
    run = f"{sys.executable} train.py {{cfg}}"
    report = await run_preflight(qf, configured(qf, run=run, checkpoint_gb=1e9))
    disk = by_name(report)["disk"]
    assert not disk.ok and "not enough room" in disk.detail
    assert "× keep_checkpoints 2 × " in disk.detail and "checkpoint_gb 1e+09" in disk.detail
    assert "keep_checkpoints" in disk.fix

    # No checkpoint_gb: the newest checkpoint under the durable dir decides; a symlink
    # to a bigger one elsewhere is never followed.
    results = qf.root() / "results" / "run1"
    results.mkdir(parents=True)
    (results / "old.pt").write_bytes(b"x" * 1000)
    os.utime(results / "old.pt", (1, 1))
    (results / "last.ckpt").write_bytes(b"x" * 3000)
    outside = tmp_path / "huge.pt"
    outside.write_bytes(b"x" * 5000)
    (results / "link.pt").symlink_to(outside)
    disk = by_name(await run_preflight(qf, configured(qf, run=run, keep_checkpoints=3)))["disk"]
    assert disk.ok, disk
    assert "keep_checkpoints 3 × 2.9K + 1 being written (2.9K)" in disk.detail
    assert "size from the newest checkpoint" in disk.detail and "last.ckpt" in disk.detail
    assert "; at least 1.0G" in disk.detail


async def test_runpod_durable_dir_off_the_volume_fails_durable(make_queue_fleet, tmp_path):
    qf = await make_queue_fleet(1)
    run = f"{sys.executable} train.py {{cfg}}"
    durable = by_name(await run_preflight(qf, configured(qf, run=run, profile="runpod")))["durable"]
    assert not durable.ok
    assert durable.detail.startswith(str(qf.root() / "results"))
    assert "only a Network Volume" in durable.detail
    assert durable.fix == "set durable_dir for box1 to a path under /workspace"
    generic = by_name(await run_preflight(qf, configured(qf, run=run)))["durable"]
    # ux-d #17: a pass with no mount to prefer says that only a pull keeps the results,
    # not as if "nothing on the box" surviving were the pass.
    assert generic.ok, generic
    assert "Bare SSH box (generic-ssh) has no path rule to check: its teardown (manual" in (
        generic.detail
    )
    assert generic.detail.endswith(
        "keeps nothing on the box, so results are safe once pulled (the teardown gate "
        "waits for that)"
    )


async def test_a_durable_dir_that_can_hold_nothing_fails_durable_with_the_reason(
    make_queue_fleet, tmp_path
):
    """ux-d #7: a durable_dir under a regular file can never be created, one on /proc is
    the kernel's view, one on a read-only mount cannot be written: each fails, naming the
    path and why, and disk does not tell the user to free space on /proc."""
    qf = await make_queue_fleet(1)
    run = f"{sys.executable} train.py {{cfg}}"
    afile = tmp_path.resolve() / "afile"
    afile.write_text("a file, not a folder\n")
    host = dataclasses.replace(configured(qf, run=run), durable_dir=str(afile / "ckpts"))
    checks = by_name(await run_preflight(qf, host))
    durable = checks["durable"]
    assert not durable.ok
    assert durable.detail == (
        f"{afile}/ckpts can never be created: {afile} is there and is not a folder"
    )
    assert durable.fix == (
        "set durable_dir for box1 to a folder on the box's disk that this login can write, "
        f"or move {afile} aside on the box"
    )

    host = dataclasses.replace(host, durable_dir="/proc/rgt-no-such/ckpts")
    checks = by_name(await run_preflight(qf, host))
    durable, disk = checks["durable"], checks["disk"]
    assert not durable.ok
    assert durable.detail.startswith("/proc/rgt-no-such/ckpts (mount /proc, proc) is on proc, ")
    assert "a kernel pseudo file system, not storage" in durable.detail
    assert not disk.ok and "free space" not in disk.fix, disk
    assert disk.detail == (
        "not checked: /proc is on proc, a pseudo file system with no disk to measure (see durable)"
    )
    assert disk.fix == "fix durable_dir first (see durable)"

    with read_only_tmpfs(tmp_path / "ro") as ro:
        host = dataclasses.replace(host, durable_dir=str(ro / "ckpts"))
        durable = by_name(await run_preflight(qf, host))["durable"]
        assert not durable.ok
        assert durable.detail.startswith(f"{ro}/ckpts (mount {ro}, tmpfs) does not exist, ")
        assert f"and this login cannot create it in {ro} (a read-only mount" in durable.detail
        host = dataclasses.replace(host, durable_dir=str(ro))
        durable = by_name(await run_preflight(qf, host))["durable"]
        assert not durable.ok and "is not writable by this login" in durable.detail
        assert durable.fix.endswith("or make it writable on the box (chown / chmod)")


async def test_code_check_passes_in_sync_and_fails_on_a_file_changed_on_the_box(
    make_queue_fleet, tmp_path
):
    qf = await make_queue_fleet(1)
    code = tmp_path / "proj"
    head = git_tree(code)
    add_code(qf.loopback.hosts_file, code)
    host = configured(qf, run=f"{sys.executable} train.py {{cfg}}")
    transport = qf.transport()
    try:
        await sync_code(host, transport, method="sftp")
        report = await preflight(qf.fleet, host, transport)
        check = by_name(report)["code"]
        assert check.ok and check.detail.startswith("box1 holds the local tree ")
        assert "tree tree" not in check.detail  # ux-a #17: said once
        # The identity a launch records: the box's tree, named with the local commit.
        assert report.code is not None and report.code.commit == head
        (qf.root() / "src" / "train.py").write_text("print('edited on the box')\n")
        changed = await preflight(qf.fleet, host, transport)
    finally:
        await transport.close()
    check = by_name(changed)["code"]
    assert not check.ok and "src/train.py" in check.detail
    assert check.fix == "rgt-tui sync box1"
    # A launch acknowledging the drift records the box's own tree (what really runs),
    # with no commit: no local commit describes it.
    assert changed.code is not None and changed.code.commit == ""
    assert changed.code.tree != report.code.tree


async def test_a_login_node_without_the_workdir_fails_preflight(make_queue_fleet, tmp_path):
    """hour s22b #6: a Slurm login node's preflight said "ready: every check passed", and
    the launch then refused the missing workdir (the check lived in the python check,
    which a login node does not run). A loopback box stands in for the login node."""
    from rgt_tui.domain.config import SlurmConfig

    qf = await make_queue_fleet(1)
    login = dataclasses.replace(qf.host(), slurm=SlurmConfig(), workdir=str(qf.root() / "nope"))
    report = await run_preflight(qf, login)
    code = by_name(report)["code"]
    assert not code.ok
    assert code.detail == (
        f"the workdir {qf.root() / 'nope'} does not exist on box1, so no task can start there"
    )
    there = dataclasses.replace(login, workdir=str(qf.root()))
    # No code key: the workdir is still checked, and said (the note names ``code`` among
    # the checks run, and no line said it: s35 Slurm hour #10).
    report = await run_preflight(qf, there)
    assert "code" in (report.note or "")
    code = by_name(report)["code"]
    assert code.ok and code.ran
    assert code.detail == f"the workdir {qf.root()} is there (no code key to compare)"
