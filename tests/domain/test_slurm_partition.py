"""The ``partition`` preflight check (hour s22b #7): a partition the cluster does not have
fails before anything is sent, naming the partitions that exist and the fleet file."""

from __future__ import annotations

from rgt_tui.domain.slurm_partition import partition_check

SINFO = "debug*|up|0/1/0/1\ngpu-a100|up|2/6/0/8\ngpu-a100|up|0/0/1/1\n"
WHERE = "hosts.toml:12 (hpc's block)"


def test_a_partition_the_cluster_lacks_fails_naming_those_it_has() -> None:
    check = partition_check("hpc", "gpu", SINFO, WHERE)
    assert not check.ok and check.certain  # sbatch refuses it: no --ack lets it go
    assert "hpc's cluster has no partition gpu" in check.detail
    assert "Its partitions: debug (the default), gpu-a100" in check.detail  # once each
    assert check.fix.startswith("set partition in hosts.toml:12 (hpc's block) to one of them")
    assert 'partition = "debug"' in check.fix


def test_every_partition_of_a_list_must_exist() -> None:
    assert partition_check("hpc", "debug,gpu-a100", SINFO, WHERE).ok
    check = partition_check("hpc", "debug, nope", SINFO, WHERE)
    assert not check.ok and "no partition nope:" in check.detail


def test_no_key_passes_and_an_unread_sinfo_is_not_run_not_passed() -> None:
    assert partition_check("hpc", None, None, WHERE).ok
    unread = partition_check("hpc", "gpu", "", WHERE, "sinfo: command not found")
    assert unread.ok and not unread.ran and "sinfo: command not found" in unread.detail


def test_the_clusters_text_is_made_printable() -> None:
    hostile = "evil\x1b]52;c;AAAA\x07*|up|0/1/0/1\n"
    check = partition_check("hpc", "gpu", hostile, WHERE)
    assert not check.ok and "\x1b" not in check.detail and "\x07" not in check.detail
