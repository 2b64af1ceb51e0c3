"""Issue 42's preflight checks from replayed box output: ``arch`` (U28) from the box
program's own arch_facts fed a recorded RTX 5090 under a cu124 wheel, ``storage`` (U8)
from recorded and hand-written mountinfo/sysfs trees read by the box program's
storage_facts, the whole-queue disk budget (U6), CRLF kinds (U26) and the Slurm
signal lead (SLURM2)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from rgt_tui.domain.config import PREFLIGHT_CHECKS, Readiness, SlurmConfig
from rgt_tui.domain.crlf import crlf_check, crlf_kind
from rgt_tui.domain.preflight import BoxFacts, CheckContext
from rgt_tui.domain.preflight_arch import check_arch, runs_on
from rgt_tui.domain.preflight_checks import check_disk
from rgt_tui.domain.preflight_storage import check_storage
from rgt_tui.domain.run_interpreter import run_interpreter
from rgt_tui.profiles import profile
from rgt_tui.services.queue.slurm.sbatch import signal_lead_check

ROOT = Path(__file__).parents[2]
FIXTURES = ROOT / "tests" / "fixtures"


def box_program():
    """preflight_check.py, the program the box runs, imported for its functions."""
    path = ROOT / "rgt_tui" / "scripts" / "preflight_check.py"
    spec = importlib.util.spec_from_file_location("preflight_check", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class RecordedCuda:
    """torch.cuda as a recording says it answered (what TorchCuda asks of it)."""

    def __init__(self, recorded: dict) -> None:
        self.recorded = recorded

    def arch_list(self):
        return self.recorded["arch_list"]

    def device_count(self):
        return len(self.recorded["devices"])

    def capability(self, i):
        return list(self.recorded["devices"][i]["capability"])

    def name(self, i):
        return self.recorded["devices"][i]["name"]

    def tiny_op(self, i):
        error = self.recorded["devices"][i].get("op_error")
        if error:
            raise RuntimeError(error)
        return 2.0


def ctx(**changes) -> CheckContext:
    base = {
        "host": "box1", "profile": profile("generic-ssh"), "ready": Readiness(),
        "interpreter": run_interpreter(None, "/opt/conda/bin/python"), "workdir": "~/proj",
        "durable_dir": "~/results",
    }  # fmt: skip
    return CheckContext(**{**base, **changes})


def torch_answer(arch: dict, cuda: str = "12.4") -> BoxFacts:
    torch = {
        "importable": True, "version": "2.5.1+cu124", "cuda": cuda, "available": True,
        "device_count": len(arch["devices"]), "arch": arch,
    }  # fmt: skip
    gpu = ("0, 570.86.16, NVIDIA GeForce RTX 5090",)
    ver = ("CUDA Version : 12.8",)
    return BoxFacts(python={"version": "3.11"}, torch=torch, smi="/usr/bin/nvidia-smi",
                    gpu_lines=gpu, gpu_rc=0, version_lines=ver)  # fmt: skip


def test_an_rtx_5090_under_a_cu124_wheel_fails_arch_naming_card_sm_and_wheels():
    recorded = json.loads((FIXTURES / "torch_arch" / "rtx5090_cu124.json").read_text())
    arch = box_program().arch_facts(RecordedCuda(recorded))
    assert arch["devices"][0]["capability"] == [12, 0]
    assert "no kernel image is available" in arch["devices"][0]["op"]
    check = check_arch(torch_answer(arch), ctx())
    assert not check.ok
    assert "GPU 0 NVIDIA GeForce RTX 5090 is sm_120" in check.detail
    assert "has no kernels for (it has: sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90)" in check.detail
    assert (
        "sm_120 (Blackwell: RTX 50xx, RTX PRO 6000) needs torch ≥ 2.7 from the cu128+" in check.fix
    )
    assert "/opt/conda/bin/python -m pip install 'torch>=2.7' --index-url " in check.fix
    assert "https://download.pytorch.org/whl/cu128" in check.fix


def test_the_same_card_under_a_cu128_wheel_passes_and_a_newer_minor_runs_older_cubins():
    recorded = json.loads((FIXTURES / "torch_arch" / "rtx5090_cu124.json").read_text())
    recorded["arch_list"] = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"]
    recorded["devices"][0].pop("op_error")
    check = check_arch(torch_answer(box_program().arch_facts(RecordedCuda(recorded))), ctx())
    assert check.ok and "GPU 0 NVIDIA GeForce RTX 5090 sm_120: a CUDA op ran" in check.detail
    # Cubins run on the same major, same or newer minor (an L4, sm_89, on sm_86);
    # sm_90a only on 9.0; PTX JIT-compiles forward.
    assert runs_on(["sm_80", "sm_86"], (8, 9)) == "sm_86"
    assert runs_on(["sm_90a"], (9, 0)) == "sm_90a" and runs_on(["sm_90a"], (10, 0)) is None
    assert runs_on(["sm_80", "compute_90"], (12, 0)) == "PTX compute_90"
    assert runs_on(["sm_50", "sm_90"], (12, 0)) is None


def test_an_h100_whose_op_fails_for_another_reason_is_not_sent_to_the_wheels():
    arch = box_program().arch_facts(
        RecordedCuda(
            {
                "arch_list": ["sm_90"],
                "devices": [
                    {
                        "name": "NVIDIA H100",
                        "capability": [9, 0],
                        "op_error": "CUDA error: out of memory",
                    }
                ],
            }
        )  # fmt: skip
    )
    check = check_arch(torch_answer(arch), ctx())
    assert (
        not check.ok
        and "sm_90: one tiny CUDA op failed — RuntimeError: CUDA error: out of memory"
        in check.detail
    )
    assert "gpu-busy" in check.fix and "cu128" not in check.fix


def test_the_box_program_never_raises_on_a_broken_torch_cuda():
    class Broken(RecordedCuda):
        def capability(self, i):
            raise RuntimeError("CUDA driver initialization failed")

    arch = box_program().arch_facts(
        Broken({"arch_list": ["sm_90"], "devices": [{"name": "x", "capability": [9, 0]}]})
    )
    assert "CUDA driver initialization failed" in arch["devices"][0]["capability_error"]
    assert not check_arch(torch_answer(arch), ctx()).ok


def storage(tree: str, paths: list[tuple[str, str]]) -> dict:
    """A recorded box's mounts: its paths are there on that box, not on this machine."""
    root = FIXTURES / "storage" / tree
    return box_program().storage_facts(
        paths, str(root / "proc" / "mountinfo"), str(root / "sys"), lambda real: (True, True, True)
    )


def test_a_data_dir_that_is_not_there_fails_storage_before_the_first_batch(tmp_path):
    """s38 spot hour #5: a data_dir that did not exist read "ok storage … ext4"; the run's
    loader failed at its first batch. This machine's own mounts, real paths."""
    data = tmp_path / "datasets" / "imagenet"
    facts = box_program().storage_facts([("workdir", str(tmp_path)), ("data", str(data))])
    check = check_storage(BoxFacts(python={}, storage=facts), ctx())
    assert not check.ok
    assert check.detail == (
        f"the data_dir {data} does not exist on the box: the run's data loader fails there"
    )
    assert check.fix.startswith(f"copy the dataset to {data} on the box, or set data_dir for ")
    # Its folder above there, the data_dir not yet: a run that downloads its dataset at
    # its start (download=True) makes it; said, not failed (the review of s38).
    data.parent.mkdir(parents=True)
    facts = box_program().storage_facts([("workdir", str(tmp_path)), ("data", str(data))])
    soon = check_storage(BoxFacts(python={}, storage=facts), ctx())
    assert soon.ok and soon.detail.startswith(
        f"data_dir {data} does not exist yet: the run must create or download it; "
    ), soon
    data.mkdir()
    facts = box_program().storage_facts([("workdir", str(tmp_path)), ("data", str(data))])
    assert check_storage(BoxFacts(python={}, storage=facts), ctx()).ok


def test_this_machines_recorded_virtio_disk_is_named_not_failed():
    facts = storage("this_machine", [("workdir", "/work/main"), ("durable", "/dev/shm/x")])
    work, durable = facts["paths"]
    assert (work["mount"], work["fstype"], work["disk"], work["rotational"]) == (
        "/",
        "ext4",
        "vda",
        "1",
    )
    assert durable["fstype"] == "tmpfs" and "disk" not in durable
    check = check_storage(BoxFacts(python={}, storage=facts), ctx())
    assert check.ok, check
    assert "ext4 on vda, a virtual disk" in check.detail and "tmpfs, in memory" in check.detail


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ("/mnt/shared/imagenet", "nfs4, a network file system (10.0.0.5:/export/datasets)"),
        ("/mnt/s3/train", "fuse.s3fs, a fuse mount (s3fs)"),
        ("/mnt/my bucket/x", "fuse.juicefs, a fuse mount (JuiceFS:myjfs)"),
        ("/mnt/hdd/data", "xfs on sdb, a spinning disk (HDD)"),
    ],
)
def test_a_data_dir_on_network_fuse_or_hdd_fails_storage_with_the_staging_fix(data, words):
    facts = storage(
        "rented_box", [("workdir", "/root/proj"), ("durable", "/workspace/ckpt/r"), ("data", data)]
    )
    check = check_storage(BoxFacts(python={}, storage=facts), ctx())
    assert not check.ok
    assert (
        f"data_dir {data} is on {words}: reading training data from it starves the GPU (U8)"
        in check.detail
    )
    assert "checkpoints /workspace/ckpt/r: ext4 on nvme0n1, NVMe" in check.detail
    assert "overlay, the container's own layer" in check.detail  # the workdir
    assert "stage the data to the box's local NVMe" in check.fix
    # ux-d #15: words that fit the TUI (its plan's button) and the CLI (--ack), no flag.
    assert check.fix.endswith("acknowledge the storage check") and "--ack" not in check.fix


def test_a_data_dir_on_local_nvme_passes_and_without_one_the_workdir_is_the_data_path():
    facts = storage("rented_box", [("workdir", "/mnt/shared/proj"), ("data", "/workspace/data")])
    check = check_storage(BoxFacts(python={}, storage=facts), ctx())
    assert check.ok and "data /workspace/data: ext4 on nvme0n1, NVMe" in check.detail
    facts = storage("rented_box", [("workdir", "/mnt/shared/proj"), ("durable", "/workspace/r")])
    check = check_storage(BoxFacts(python={}, storage=facts), ctx())
    assert not check.ok and check.detail.startswith("workdir /mnt/shared/proj is on nfs4")


def test_the_disk_budget_is_the_whole_queue_with_its_arithmetic():
    row = "/dev/x 100000000000 0 30000000000 1% /workspace"
    facts = BoxFacts(df_bytes=row, df_inodes="/dev/x 1000000 0 900000 1% /workspace")
    ready = Readiness(checkpoint_gb=4, keep_checkpoints=2)
    three = check_disk(facts, ctx(ready=ready, cells=3))
    assert not three.ok  # 3 × 2 × 4G + 4G = 28G needs more than 27.9G free
    assert (
        "3 cells still to run × keep_checkpoints 2 × 4.0G + 1 being written (4.0G) = 28G"
        in three.detail
    )
    # The old budget (one checkpoint × keep) fits: the queue is what overflows (U6).
    assert check_disk(facts, ctx(ready=ready, cells=1)).ok
    assert "lower keep_checkpoints / checkpoint_gb, or pick a bigger disk" in three.fix


def test_below_the_one_gib_floor_the_disk_fix_does_not_offer_a_smaller_budget():
    """s38 spot hour #6: checkpoint_gb 0.0001 and 1 MiB free: "1.0G needed (… at least
    1.0G)", and the fix said to lower checkpoint_gb again, which frees nothing."""
    row = "/dev/x 100000000 0 1048576 1% /workspace"
    facts = BoxFacts(df_bytes=row, df_inodes="/dev/x 1000000 0 900000 1% /workspace")
    tiny = check_disk(facts, ctx(ready=Readiness(checkpoint_gb=0.0001, keep_checkpoints=1)))
    assert not tiny.ok and "at least 1.0G" in tiny.detail
    assert "checkpoint_gb" not in tiny.fix and tiny.fix.endswith("or pick a bigger disk")


def test_crlf_kinds_and_the_check_names_each_file_with_the_fix():
    assert crlf_kind("scripts/run.sh", b"ec") == "shell script"
    assert crlf_kind("bin/train", b"#!") == "script (#! line)"
    assert crlf_kind("configs/a.YAML", b"ep") == "config file"
    assert crlf_kind("train.py", b"im") == ""  # python reads CRLF fine
    check = crlf_check("box1", [("run it.sh", "shell script")], "the code tree")
    assert not check.ok and "run it.sh (shell script)" in check.detail and "U26" in check.detail
    assert "dos2unix 'run it.sh'" in check.fix and "git config core.autocrlf input" in check.fix
    assert "bash fails with $'\\r'" in check.detail
    # A queue file or a config alone: no bash error said of them (h553 #1).
    queue = crlf_check("box1", [("q.txt", "queue file")], "the queue file q.txt")
    assert "bash" not in queue.detail and "carries a \\r into its last value" in queue.detail


def test_a_signal_lead_inside_the_write_time_and_slurms_slack_fails_signal_lead():
    short = signal_lead_check("cluster", SlurmConfig(signal_lead_s=100, checkpoint_write_s=90))
    assert (
        not short.ok
        and "shorter than checkpoint_write_s 90 s (configured; none observed yet) + Slurm's "
        "slack 60 s"
        in short.detail
    )
    assert "set signal_lead_s = 150 or more" in short.fix
    assert signal_lead_check("cluster", SlurmConfig()).ok  # 300 ≥ 60 + 60
    assert {"arch", "storage", "crlf", "signal-lead"} <= set(PREFLIGHT_CHECKS)
