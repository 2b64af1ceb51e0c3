"""A host that is a Slurm login node: its sbatch keys, checked where they are written."""

from __future__ import annotations

from pathlib import Path

import pytest

from rgt_tui.domain.config import ConfigError, SlurmConfig
from rgt_tui.domain.config_parse import parse_fleet

PROFILES = ["generic-ssh", "slurm", "runpod"]
HOST = '[[hosts]]\nname = "c"\nssh = "me@login:22"\npull = ["/scratch/runs"]\n'


def load(text: str):
    return parse_fleet(Path("/f/hosts.toml"), text, PROFILES)


def test_a_slurm_host_takes_the_slurm_profile_and_its_keys() -> None:
    host = load(
        HOST + 'scheduler = "slurm"\npartition = "gpu"\ngres = "gpu:1"\ntime = "1-04:00:00"\n'
        'mem = "32G"\ncpus_per_task = 8\nmax_parallel = 2\nsbatch_args = ["--qos=normal"]\n'
    ).hosts[0]
    assert host.profile == "slurm"
    assert host.slurm == SlurmConfig(
        partition="gpu", gres="gpu:1", time="1-04:00:00", mem="32G", cpus_per_task=8,
        max_parallel=2, sbatch_args=("--qos=normal",),
    )  # fmt: skip
    assert load(HOST).hosts[0].slurm is None
    assert load(HOST + 'scheduler = "slurm"\nprofile = "runpod"\n').hosts[0].profile == "runpod"


def test_slurm_keys_without_the_scheduler_and_bad_values_are_named() -> None:
    with pytest.raises(ConfigError) as caught:
        load(HOST + 'partition = "gpu"\n')
    assert ':5: partition: partition is a Slurm setting: add scheduler = "slurm"' in str(
        caught.value
    )
    with pytest.raises(ConfigError) as caught:
        load(
            HOST + 'scheduler = "slurm"\ntime = "forever"\nmem = "lots"\n'
            'sbatch_args = ["--array=0-3", "--qos normal"]\n'
        )
    text = str(caught.value)
    assert "time: 'forever' is not a Slurm time" in text
    assert "mem: 'lots' is not a Slurm mem" in text
    assert "sbatch_args: --array is set by rgt-tui itself" in text
    with pytest.raises(ConfigError, match="unknown scheduler 'pbs'"):
        load(HOST + 'scheduler = "pbs"\n')


def test_a_walltime_in_sbatch_args_is_refused_for_the_time_key() -> None:
    """``time = "00:10:00"`` beside ``sbatch_args = ["--time=00:02:00"]``: the signal
    lead was checked against the 10 minutes while Slurm ran 2, and every cell got its
    TERM in its first second (h531 #4)."""
    with pytest.raises(ConfigError) as caught:
        load(HOST + 'scheduler = "slurm"\ntime = "00:10:00"\nsbatch_args = ["--time=00:02:00"]\n')
    text = str(caught.value)
    assert "sbatch_args: '--time=00:02:00': give the walltime as the host's time key" in text
    # --time-min is another option (the least walltime a job accepts): still passed on.
    loaded = load(HOST + 'scheduler = "slurm"\nsbatch_args = ["--time-min=00:05:00"]\n')
    assert loaded.hosts[0].slurm.sbatch_args == ("--time-min=00:05:00",)
