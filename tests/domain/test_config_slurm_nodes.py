"""A Slurm host with ``nodes = N`` (issue 41): its keys and run template as the fleet file
is read, and the sbatch command, task arguments and template they make (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rgt_tui.domain.config import ConfigError, SlurmConfig
from rgt_tui.domain.config_parse import parse_fleet
from rgt_tui.services.queue.slurm.sbatch import (
    nodes_template,
    nproc_per_node,
    sbatch_command,
    task_args,
)

PROFILES = ["generic-ssh", "slurm"]
HOST = '[[hosts]]\nname = "c"\nssh = "me@login:22"\npull = ["/scratch/runs"]\n'
SLURM = HOST + 'scheduler = "slurm"\n'
TORCHRUN = (
    "torchrun --nnodes {nnodes} --node-rank {node_rank} --nproc-per-node {nproc_per_node} "
    "--rdzv-backend c10d --rdzv-endpoint {master_addr}:{master_port} train.py --out {out}"
)


def load(text: str):
    return parse_fleet(Path("/f/hosts.toml"), text, PROFILES)


def error(text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        load(text)
    return str(caught.value)


def test_nodes_keys_load_and_the_group_placeholders_are_allowed_with_them() -> None:
    host = load(
        SLURM + f'nodes = 2\nnproc_per_node = 4\nmaster_port = 29511\nrun = "{TORCHRUN}"\n'
    ).hosts[0]
    assert host.slurm == SlurmConfig(nodes=2, nproc_per_node=4, master_port=29511)
    assert host.run == TORCHRUN
    assert load(SLURM + "nodes = 3\n").hosts[0].slurm == SlurmConfig(nodes=3)


def test_nodes_mistakes_are_named_at_their_line() -> None:
    assert ":6: nodes: nodes = 1: a cell on one node is the default" in error(SLURM + "nodes = 1\n")
    assert ":5: nodes: nodes is a Slurm setting" in error(HOST + "nodes = 2\n")
    assert "or, for one job over several boxes, a [[groups]] key" in (
        error(HOST + "master_port = 29500\n")
    )
    assert ":6: nproc_per_node: nproc_per_node is for a cell over several nodes: add nodes" in (
        error(SLURM + "nproc_per_node = 8\n")
    )
    assert ":7: master_port: master_port = 70000 is more than 65535" in (
        error(SLURM + "nodes = 2\nmaster_port = 70000\n")
    )
    # Without nodes, a group placeholder is still refused, pointing at both ways.
    refused = error(SLURM + f'run = "{TORCHRUN}"\n')
    assert "{nnodes} is a [[groups]] placeholder" in refused and "nodes = N" in refused


def test_the_sbatch_command_asks_n_nodes_one_task_each_before_the_hosts_keys() -> None:
    slurm = SlurmConfig(nodes=2, gres="gpu:a100:4", sbatch_args=("--nodes=1",))
    argv = sbatch_command(
        slurm, job_name="rgt-c", array="0-1", workdir="/w", queue_dir="/q",
        script="/b/slurm_task.0123456789ab.sh", script_args=("/q", "/b/r.sh", "/w", *task_args(slurm)),
    )  # fmt: skip
    at = argv.index("--nodes=2")
    assert argv[at + 1] == "--ntasks-per-node=1"
    assert argv.index("--gres=gpu:a100:4") > at and argv.index("--nodes=1") > at
    assert argv[-2:] == ("4", "0")  # the gres count; port 0: from the job id, in the job
    plain = sbatch_command(
        SlurmConfig(), job_name="rgt-c", array="0", workdir="/w", queue_dir="/q",
        script="/b/t.sh", script_args=("/q", "/b/r.sh", "/w", *task_args(SlurmConfig())),
    )  # fmt: skip
    assert not any(a.startswith(("--nodes", "--ntasks")) for a in plain)
    assert plain[-3:] == ("/q", "/b/r.sh", "/w")


@pytest.mark.parametrize(
    ("slurm", "n"),
    [
        (SlurmConfig(nodes=2), 1),
        (SlurmConfig(nodes=2, gres="gpu"), 1),
        (SlurmConfig(nodes=2, gres="gpu:8"), 8),
        (SlurmConfig(nodes=2, gres="shard:2,gpu:h100:2"), 2),
        (SlurmConfig(nodes=2, gres="gpu:8", nproc_per_node=4), 4),
    ],
)
def test_nproc_per_node_is_the_key_else_the_gres_gpus(slurm: SlurmConfig, n: int) -> None:
    assert nproc_per_node(slurm) == n


def test_the_template_takes_the_jobs_values_and_keeps_the_cells_own() -> None:
    out = nodes_template(TORCHRUN + " {{literal}} [--epochs {epochs}]")
    assert out == (
        'torchrun --nnodes "$RGT_NNODES" --node-rank "$RGT_NODE_RANK" --nproc-per-node '
        '"$RGT_NPROC_PER_NODE" --rdzv-backend c10d --rdzv-endpoint '
        '"$RGT_MASTER_ADDR":"$RGT_MASTER_PORT" train.py --out {out} {{literal}} '
        "[--epochs {epochs}]"
    )
