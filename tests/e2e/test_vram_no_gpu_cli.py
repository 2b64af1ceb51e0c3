"""`rgt-tui vram` on a box with no GPU (ux-d D13): a loopback box has no nvidia-smi and no
/dev/nvidia* (no GPU exists where the tests run). One line says so (it said "nvidia-smi
missing" and then "nvidia-smi lists none"), and `--kill` says there is nothing to kill."""

from __future__ import annotations

from support.cli import arun

NO_GPU = "box1 has no NVIDIA GPU: nvidia-smi is not on the box's PATH"


async def test_vram_on_a_box_without_a_gpu_says_so_once(make_loopback_fleet) -> None:
    fleet = await make_loopback_fleet(1)
    hosts = ("--hosts", fleet.hosts_file)
    listed = await arun("vram", "box1", *hosts)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.strip() == NO_GPU, listed.stdout
    kill = await arun("vram", "box1", "--kill", "1", "--yes", *hosts)
    assert kill.returncode == 1, kill.stdout + kill.stderr
    assert (
        "box1: no NVIDIA GPU on the box (nvidia-smi is not on its PATH): there is nothing to kill"
        in kill.stderr
    ), kill.stderr
    assert kill.stderr.count("box1") == 1, kill.stderr  # the host once (h612 #8)
    assert NO_GPU not in kill.stdout, kill.stdout  # said once, not listed first (h555 #6)
