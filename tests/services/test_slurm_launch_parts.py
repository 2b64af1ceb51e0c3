"""The pure parts of a Slurm launch: the sbatch command a host's keys make, its quoting
on the way to the box, the array, the node-local refusal (SLURM5), the lead (SLURM2)."""

from __future__ import annotations

import shlex

import pytest

from rgt_tui.domain.config import SlurmConfig
from rgt_tui.domain.node_local import NODE_LOCAL_FIX, node_local_reason
from rgt_tui.services.queue.launch import LaunchPlan, QueueError, launch
from rgt_tui.services.queue.slurm.launch import parse_slurm_probe
from rgt_tui.services.queue.slurm.sbatch import (
    array_spec,
    held_append_problems,
    live_problems,
    sbatch_command,
    signal_lead_check,
    time_seconds,
)

HOME = "/home/ann"


def command(slurm: SlurmConfig, workdir: str = f"{HOME}/proj") -> tuple[str, ...]:
    return sbatch_command(
        slurm,
        job_name="rgt-a100",
        array="0-3%2",
        workdir=workdir,
        queue_dir=f"{HOME}/.rgt/queue",
        script=f"{HOME}/.rgt/bin/slurm_task.0123456789ab.sh",
        script_args=(f"{HOME}/.rgt/queue", f"{HOME}/.rgt/bin/run_one.ba9876543210.sh", workdir),
    )


def test_every_key_of_the_host_becomes_one_option_after_rgt_tuis_own():
    slurm = SlurmConfig(
        partition="gpu", account="my-lab", gres="gpu:1", time="04:00:00", mem="32G",
        cpus_per_task=8, max_parallel=2, signal_lead_s=420,
        sbatch_args=("--qos=normal", "--constraint=a100"),
    )  # fmt: skip
    assert command(slurm) == (
        "sbatch", "--parsable", "--array=0-3%2", "--job-name=rgt-a100",
        "--signal=B:USR1@420", "--requeue", f"--chdir={HOME}/proj",
        f"--output={HOME}/.rgt/queue/slurm/%A_%a.out", "--open-mode=append",
        "--partition=gpu", "--account=my-lab", "--gres=gpu:1", "--time=04:00:00",
        "--mem=32G", "--cpus-per-task=8", "--qos=normal", "--constraint=a100",
        f"{HOME}/.rgt/bin/slurm_task.0123456789ab.sh", f"{HOME}/.rgt/queue",
        f"{HOME}/.rgt/bin/run_one.ba9876543210.sh", f"{HOME}/proj",
    )  # fmt: skip


def test_unset_keys_are_left_to_the_cluster_and_the_lead_defaults_to_300():
    argv = command(SlurmConfig())
    assert "--signal=B:USR1@300" in argv
    assert not [a for a in argv if a.split("=")[0] in ("--partition", "--mem", "--gres")]


def test_each_argument_reaches_the_box_whole_however_it_is_spelled():
    # A workdir with a space, a quote and a dollar: one argument each, never expanded.
    odd = f"{HOME}/my proj/it's $HOME"
    argv = command(SlurmConfig(partition="gpu a100"), workdir=odd)
    assert shlex.split(" ".join(shlex.quote(a) for a in argv)) == list(argv)
    assert f"--chdir={odd}" in argv and "--partition=gpu a100" in argv


@pytest.mark.parametrize(
    ("indices", "limit", "spec"),
    [
        ([0, 1, 2, 3], 2, "0-3%2"),
        ([2, 3], None, "2-3"),
        ([4], 2, "4%2"),
        ([5, 1, 3, 4], 3, "1,3-5%3"),
    ],
)
def test_the_array_names_exactly_the_indices(indices, limit, spec):
    assert array_spec(indices, limit) == spec


@pytest.mark.parametrize(
    ("durable", "real", "tmpdir", "rule"),
    [
        ("/tmp/ckpt", "/tmp/ckpt", "", "/tmp"),
        ("/scratch/local/ann/ckpt", "/scratch/local/ann/ckpt", "", "/scratch/local"),
        ("/local/ckpt", "/local/ckpt", "", "/local"),
        ("/dev/shm/ckpt", "/dev/shm/ckpt", "", "/dev/shm"),
        ("/jobtmp/123/ckpt", "/jobtmp/123/ckpt", "/jobtmp/123", "$TMPDIR (/jobtmp/123)"),
        ("$TMPDIR/ckpt", "$TMPDIR/ckpt", "/jobtmp/1", "$TMPDIR"),
        # A link on the shared filesystem into node-local storage: the real path counts.
        ("/scratch/ann/ckpt", "/dev/shm/ckpt", "", "/dev/shm"),
        ("/nvme/ann", "/nvme/ann", "", "/nvme"),  # the profile's durable_not_under
    ],
)
def test_a_durable_dir_on_node_local_storage_is_refused(durable, real, tmpdir, rule):
    problem = node_local_reason("a100", durable, real, tmpdir, ("/nvme",), HOME)
    assert problem is not None
    assert problem.startswith(f"durable_dir {durable} on a100 is under {rule}: node-local")
    assert "SLURM5" in problem and "/scratch/$USER" in NODE_LOCAL_FIX


@pytest.mark.parametrize(
    ("durable", "home"),
    [
        ("/scratch/ann/proj", HOME),
        (f"{HOME}/results", HOME),
        ("/tmpfs-not/x", HOME),  # a name that starts like /tmp, not under it
        # A home mounted under /tmp (this machine's test boxes): the home is shared.
        ("/tmp/box/home/results", "/tmp/box/home"),
    ],
)
def test_a_durable_dir_on_the_shared_filesystem_is_not(durable, home):
    assert node_local_reason("a100", durable, durable, "/jobtmp/1", (), home) is None


def test_tmpdir_refuses_even_inside_the_home():
    problem = node_local_reason("a100", f"{HOME}/t/x", f"{HOME}/t/x", f"{HOME}/t", (), HOME)
    assert problem is not None and f"$TMPDIR ({HOME}/t)" in problem


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("30", 1800),
        ("1:30", 90),
        ("04:00:00", 14400),
        ("2-0", 172800),
        ("1-2:03:04", 93784),
        ("x", None),
    ],
)
def test_slurm_time_in_seconds(value, seconds):
    assert time_seconds(value) == seconds


def test_a_lead_past_the_walltime_or_inside_the_slack_fails_the_check():
    # A lead inside the slack, and one not shorter than the walltime (hour s18b #5: only
    # warned of, and each cell got TERM in its first second): signal_lead_check refuses.
    short = signal_lead_check("a100", SlurmConfig(signal_lead_s=45))
    assert not short.ok and "up to 60 s late" in short.detail and "SLURM2" in short.detail
    past = signal_lead_check("a100", SlurmConfig(time="5", signal_lead_s=300))
    assert not past.ok and "not shorter than time = 5 (300 s)" in past.detail, past
    assert "raise time" in past.fix
    assert signal_lead_check("a100", SlurmConfig(time="04:00:00")).ok


def test_the_probe_answer_names_live_arrays_and_squeue_errors():
    facts = parse_slurm_probe(
        "tmpdir\t/jobtmp/1\ndurable_real\t/scratch/ann\nsbatch\t/usr/bin/sbatch\n"
        "live\t12\tRUNNING\nlive\t12\tPENDING\nlive\t12\tRUNNING\n"
    )
    assert (facts.tmpdir, facts.durable_real, facts.sbatch) == (
        "/jobtmp/1",
        "/scratch/ann",
        "/usr/bin/sbatch",
    )
    assert facts.live == {"12": ("RUNNING", "PENDING", "RUNNING")} and not facts.squeue_error
    assert parse_slurm_probe("squeue_error\tSocket timed out\n").squeue_error == "Socket timed out"


def test_held_tasks_are_named_in_the_refusal_with_the_release():
    facts = parse_slurm_probe(
        "live\t12\tRUNNING\t12_1\tNone\nlive\t12\tPENDING\t12_3\tJobHeldUser\n"
        "live\t12\tPENDING\t12_2\tJobHeldUser\nlive\t12\tPENDING\t12_4;x\tJobHeldUser\n"
    )
    assert facts.held == {"12": ("12_2", "12_3")}  # in order; a task id that is not one, dropped
    [problem] = live_problems("hpc", facts.live, "", facts.held)
    assert "2 of its tasks are held by a stop (12_2 12_3)" in problem
    assert "scontrol release 12_2 12_3" in problem and "scancel 12_2 12_3" in problem
    [plain] = live_problems("hpc", {"12": ("RUNNING",)}, "", {})
    # A running cell of it is ended by that cancel: said before it is typed (h501 #8).
    assert "wait for it" in plain and "(scancel 12, which ends its running cells too)" in plain
    [waiting] = live_problems("hpc", {"12": ("PENDING",)}, "", {})
    assert "(scancel 12)" in waiting


def test_an_append_while_a_stop_holds_tasks_is_refused():
    """``queue append`` submitted its new cells at once after ``queue stop``, where a
    launch is refused (hour s22b #8)."""
    facts = parse_slurm_probe("live\t8\tRUNNING\t8_6\tNone\nlive\t8\tPENDING\t8_7\tJobHeldUser\n")
    [problem] = held_append_problems("hpc", facts.live, facts.held)
    assert problem.startswith("the queue on hpc is stopped: 1 of its tasks are held (8_7)")
    assert "scontrol release 8_7" in problem
    running = parse_slurm_probe("live\t8\tRUNNING\t8_6\tNone\n")
    assert held_append_problems("hpc", running.live, running.held) == []  # appends as ever


async def test_a_slurm_plan_with_problems_submits_nothing():
    plan = LaunchPlan(
        host="a100", cells=(), start_index=0, detach="slurm", session="rgt-a100",
        box_queue_dir="", workdir="~", problems=("durable_dir … SLURM5",),
        sbatch=("sbatch", "--array=0"),
    )  # fmt: skip
    # No transport at all: refused before any connection is made.
    with pytest.raises(QueueError, match="the launch plan has problems"):
        await launch(plan, transport=None)  # type: ignore[arg-type]
