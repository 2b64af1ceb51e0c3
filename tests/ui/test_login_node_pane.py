"""A Slurm login node's pane: no GPU there is its nature, not a fault (s35 Slurm hour #10
read "no GPU: no NVIDIA driver tools" as one); a box's pane still says why it has none."""

from __future__ import annotations

from support.cli import arun
from support.fleet_files import set_host_key
from support.samples import agent_sample, make_update

from rgt_tui.agent.probe.gpu_smi import SMI_NOT_FOUND
from rgt_tui.domain.health import Thresholds
from rgt_tui.widgets.host_pane import LOGIN_NODE_GPU, figure_lines


def test_a_login_node_says_where_its_cells_gpus_show_and_a_box_why_it_has_none() -> None:
    data = agent_sample("hpc", gpus=[], gpu_processes=[], gpu_unavailable_reason=SMI_NOT_FOUND)
    snap = make_update("hpc", data).snapshot
    assert snap is not None and not snap.gpus

    def first(login_node: bool) -> str:
        return figure_lines(snap, None, Thresholds(), 100, login_node=login_node)[0].plain

    assert first(True) == f"no GPU {LOGIN_NODE_GPU}"
    assert first(False) == f"no GPU: {SMI_NOT_FOUND}"


async def test_status_of_a_login_node_says_the_same(make_loopback_fleet, tmp_path) -> None:
    fleet = await make_loopback_fleet(1)
    hosts = fleet.hosts_file
    hosts.write_text(hosts.read_text().replace('profile = "generic-ssh"\n', ""))
    set_host_key(hosts, "scheduler", "slurm")
    said = await arun("status", "box1", "--hosts", hosts, cwd=tmp_path)
    assert "no GPU on the login node: its cells' GPUs are the cluster's" in said.stdout, (
        said.stdout + said.stderr
    )
    assert "no NVIDIA driver tools" not in said.stdout
