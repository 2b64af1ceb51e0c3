"""Preflight's pure parts: the run's interpreter read off the template, the profile's
durable-dir rules (Slurm's $TMPDIR, a Kubernetes pod's overlay root), the driver's CUDA
version from nvidia-smi or the driver table, and the box's answer parsed as hostile."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rgt_tui.domain.config import Readiness
from rgt_tui.domain.cuda_versions import driver_cuda
from rgt_tui.domain.preflight import BoxFacts, PreflightReport, parse_box_facts
from rgt_tui.domain.preflight_checks import CheckContext, check_durable, check_python
from rgt_tui.domain.run_interpreter import run_interpreter
from rgt_tui.profiles import ProfileError, parse_profile, profile


@pytest.mark.parametrize(
    ("run", "python", "command", "source"),
    [
        ("cd ~/proj && . .venv/bin/activate && python train.py {cfg}", None,
         "cd ~/proj && . .venv/bin/activate && python", "run template"),
        ("python3 -u train.py {cfg}", None, "python3", "run template"),
        ("/opt/conda/envs/x/bin/python3.11 train.py {cfg}", None,
         "/opt/conda/envs/x/bin/python3.11", "run template"),
        ("uv run python train.py {cfg}", None, "uv run python", "run template"),
        ("conda run -n dl python -m train {cfg}", None, "conda run -n dl python", "run template"),
        ("PATH=/x:$PATH .venv/bin/python train.py {cfg}", None,
         "PATH=/x:$PATH .venv/bin/python", "run template"),
        # A program before the first field (ux-h #2): the Python its shebang names, found
        # on the box after the set-up (preflight.sh's rgt_script_python).
        ("cd ~/p && . env/bin/activate && torchrun --nproc 8 train.py {cfg}", None,
         "cd ~/p && . env/bin/activate && rgt_script_python torchrun", "console script"),
        ("cd ~/p && PYTHONPATH=x ~/v/bin/accelerate launch t.py {cfg}", None,
         "cd ~/p && PYTHONPATH=x rgt_script_python ~/v/bin/accelerate", "console script"),
        # A shell runs a script whose Python no one can tell: the set-up, python3 after it.
        ("cd ~/p && bash run.sh {cfg}", None, "cd ~/p && python3", "run template's environment"),
        ("cd ~/p && ./run_{name}.sh", None, "cd ~/p && python3", "run template's environment"),
        ("bash {cfg} {name}", None, "python3", "default"),
        # A python word after the first field is the config's, not the interpreter.
        ("torchrun {cfg} python", None, "rgt_script_python torchrun", "console script"),
        (None, None, "python3", "default"),
        ("python train.py {cfg}", "/opt/conda/bin/python", "/opt/conda/bin/python", "python key"),
    ],
)  # fmt: skip
def test_run_interpreter(run, python, command, source):
    found = run_interpreter(run, python)
    assert (found.command, found.source) == (command, source)


@pytest.mark.parametrize(
    ("run", "python", "overridden"),
    [
        # The template starts its own Python by one word: the cells run that one.
        ("python3 train.py {cfg}", "/work/venv/bin/python", "python3"),
        ("/usr/bin/python3 t.py {cfg}", "/work/venv/bin/python", "/usr/bin/python3"),
        # Words before it that change no PATH (hour s22c #1).
        ("cd /tmp && python3 -u t.py {cfg}", "/work/venv/bin/python", "python3"),
        ("OMP_NUM_THREADS=4 python3 t.py {cfg}", "/work/venv/bin/python", "python3"),
        ("exec python3 t.py {cfg}", "/work/venv/bin/python", "python3"),
        # Ones that may: PATH set, or a path relative to where a cd went.
        ("PATH=/work/venv/bin:$PATH python3 t.py {cfg}", "/work/venv/bin/python", ""),
        ("cd ~/p && .venv/bin/python t.py {cfg}", "~/p/.venv/bin/python", ""),
        # The same one, a set-up that may make it the key's, or no Python word: no clash.
        ("/work/venv/bin/python t.py {cfg}", "/work/venv/bin/python", ""),
        ("cd ~/p && . .venv/bin/activate && python t.py {cfg}", "~/p/.venv/bin/python", ""),
        ("uv run python t.py {cfg}", "/x/bin/python", ""),
        ("torchrun t.py {cfg}", "/x/bin/python", ""),
        ("bash {cfg}", "/usr/bin/python3", ""),
        (None, "/x/bin/python", ""),
    ],
)  # fmt: skip
def test_a_python_key_that_the_template_overrides_is_named(run, python, overridden):
    assert run_interpreter(run, python).overridden == overridden


def test_the_python_check_fails_when_the_cells_start_another_python() -> None:
    """Preflight checked torch in the python key's interpreter while the run template
    started python3: it passed, and all six cells failed with ModuleNotFoundError (hour
    s22a #3)."""
    interpreter = run_interpreter("python3 train.py {cfg}", "/work/venv/bin/python")
    ctx = CheckContext("gpu-a", profile("generic-ssh"), Readiness(), interpreter, "~", "~/results")
    answered = {"version": "3.11.7", "executable": "/work/venv/bin/python"}
    check = check_python(BoxFacts(workdir_ok=True, python=answered), ctx)
    assert not check.ok
    assert check.detail == (
        "the python key names /work/venv/bin/python, but the run template starts python3: "
        "the cells run that one, and preflight checked the key's"
    )
    assert check.fix.startswith("make gpu-a's run template start /work/venv/bin/python")
    agreed = replace(ctx, interpreter=run_interpreter("/work/venv/bin/python t.py {cfg}",
                                                      "/work/venv/bin/python"))  # fmt: skip
    assert check_python(BoxFacts(workdir_ok=True, python=answered), agreed).ok


def _ctx(name: str) -> CheckContext:
    return CheckContext("h", profile(name), Readiness(), run_interpreter(None), "~", "~/results")


def _facts(real: str, mount: str, fstype: str = "ext2/ext3", tmpdir: str = "") -> BoxFacts:
    row = f"/dev/x 1000 10 990 1% {mount}"
    return BoxFacts(durable_real=real, df_bytes=row, fstype=fstype, tmpdir=tmpdir)


def test_slurm_durable_dir_under_tmpdir_fails():
    bad = check_durable(_facts("/tmp/job42/results", "/tmp", tmpdir="/tmp/job42"), _ctx("slurm"))
    assert not bad.ok and "$TMPDIR (/tmp/job42)" in bad.detail and "$HOME" in bad.fix
    assert check_durable(_facts("/home/u/results", "/home", tmpdir="/tmp/job42"), _ctx("slurm")).ok


def test_kubernetes_durable_dir_must_be_its_own_mount():
    bad = check_durable(_facts("/results", "/", fstype="overlayfs"), _ctx("kubernetes"))
    assert not bad.ok and "PersistentVolumeClaim" in bad.fix
    assert check_durable(_facts("/data/results", "/data", fstype="nfs"), _ctx("kubernetes")).ok
    # df names the container's layer "overlay" (stat -f said "overlayfs"): both are refused
    on_layer = check_durable(_facts("/data/results", "/data", fstype="overlay"), _ctx("kubernetes"))
    assert not on_layer.ok and "PersistentVolumeClaim" in on_layer.fix


def test_runpod_workspace_must_be_a_volume_not_the_container_disk():
    """A pod made without a volume disk has /workspace as a folder of its container
    disk, which RunPod wipes on every stop: preflight read it "ok" (h523 #1)."""
    bad = check_durable(_facts("/workspace/ck", "/", fstype="ext4"), _ctx("runpod"))
    assert not bad.ok, bad.detail
    assert "is on the container disk, not a volume mounted there" in bad.detail
    assert "RunPod wipes it on every stop" in bad.detail
    assert bad.fix.startswith("give the pod a volume disk or a Network Volume mounted at")
    assert bad.fix.endswith("then set durable_dir for h under it")
    assert check_durable(_facts("/workspace/ck", "/workspace", fstype="xfs"), _ctx("runpod")).ok
    # df gave nothing (a stale network volume): not known, and not said as the disk.
    unread = check_durable(BoxFacts(durable_real="/workspace/ck", fstype="?"), _ctx("runpod"))
    assert not unread.ok and "which mount holds it could not be read" in unread.detail
    assert "container disk" not in unread.detail and unread.fix.startswith("run df on that")


def test_durable_says_the_hosts_teardown_command_not_the_by_hand_verb():
    """A host with a teardown command is torn down by it: the durable line read
    "its teardown (manual (provider console or API))" beside one (h521 #11, h522 #7)."""
    facts = _facts("/home/u/results", "/home")
    by_hand = check_durable(facts, _ctx("generic-ssh"))
    assert by_hand.ok and "its teardown (manual (provider console or API)) keeps" in by_hand.detail
    command = check_durable(facts, replace(_ctx("generic-ssh"), teardown_command=True))
    assert command.ok and "its teardown (the host's teardown command) keeps" in command.detail
    assert "manual" not in command.detail
    lost = check_durable(_facts("/root/ck", "/"), replace(_ctx("lambda"), teardown_command=True))
    assert not lost.ok and "teardown (the host's teardown command)" in lost.detail


def test_durable_prefix_is_a_path_not_a_string_prefix():
    assert not check_durable(_facts("/workspace2/r", "/"), _ctx("runpod")).ok
    assert check_durable(_facts("/workspace/r", "/workspace"), _ctx("runpod")).ok
    assert check_durable(_facts("/lambda/nfs/fs1/r", "/lambda/nfs/fs1"), _ctx("lambda")).ok


def test_profile_durable_keys_are_checked():
    base = {
        k: "x"
        for k in ("name", "title", "teardown_verb", "destroys", "stop_survives", "meter_stop_survives", "spot_grace")
    }  # fmt: skip
    base |= {"irreversible": True, "keeps_billing": [], "danger_clocks": []}
    assert parse_profile({**base, "durable_under": ["/w"]}, "p").durable_under == ("/w",)
    with pytest.raises(ProfileError, match="durable_under must be a list of strings"):
        parse_profile({**base, "durable_under": "/w"}, "p.toml")
    with pytest.raises(ProfileError, match="durable_own_mount must be true or false"):
        parse_profile({**base, "durable_own_mount": "yes"}, "p.toml")
    with pytest.raises(ProfileError, match="durable_own_mount needs durable_mount_lost"):
        parse_profile({**base, "durable_own_mount": True}, "p.toml")


def test_driver_cuda_from_smi_or_the_driver_table():
    header = "| NVIDIA-SMI 550.54.14   Driver Version: 550.54.14   CUDA Version: 12.4     |"
    facts = BoxFacts(gpu_lines=("0, 550.54.14, NVIDIA A100",), version_lines=(header,))
    assert driver_cuda(facts) == ((12, 4), "550.54.14")
    assert driver_cuda(BoxFacts(gpu_lines=("0, 535.104.05, NVIDIA A10G",))) == (
        (12, 2),
        "535.104.05",
    )
    assert driver_cuda(BoxFacts(gpu_lines=("0, 390.1, old",))) == (None, "390.1")


def test_hostile_answer_is_parsed_without_failing():
    text = "\n".join(
        [
            "py\tRGT-PREFLIGHT python [1, 2]",  # not an object: ignored
            "py\tRGT-PREFLIGHT torch {not json",
            "py\tTraceback: \x1b[31m" + "y" * 5000,
            "anc\tnotapid\tx\t1 2",
            "app\tabc, 12",
            "app\t77, lots",
            # No whole number: unknown, never read by its first digits (h503 #5).
            "app\t78, 1e308",
            "app\t79, 99999999999",
            "app\t80, 1308 MiB",
            "ckpt\tnan-ish 12 /r/a.pt",
            "end\t1",
        ]
    )
    facts = parse_box_facts(text)
    assert facts.ended and facts.python is None and facts.torch is None
    assert len(facts.py_tail[0]) <= 300 and "\x1b" not in facts.py_tail[0]
    assert [(h.pid, h.used_mib) for h in facts.holders] == [
        (77, None),
        (78, None),
        (79, None),
        (80, 1308.0),
    ]
    assert facts.checkpoint is None


def test_report_acknowledgements_and_json():
    facts = parse_box_facts("workdir\t0\nend\t1\n")
    from rgt_tui.domain.preflight_checks import box_checks

    report = PreflightReport("h", box_checks(facts, _ctx("generic-ssh")))
    failed = {c.name for c in report.failed}
    assert {"python", "torch", "gpu", "tmux"} <= failed
    left = {c.name for c in report.unacknowledged(["gpu", "tmux"])}
    assert left == failed - {"gpu", "tmux"}
    data = report.to_json()
    assert data["ok"] is False and data["code"] is None
    assert data["checks"][0]["name"] == "python" and data["checks"][0]["fix"]


def test_a_durable_dir_in_memory_fails_on_an_interruptible_box_and_is_said_elsewhere():
    """``durable_dir = "/dev/shm/results"`` passed as "results are safe once pulled" on an
    interruptible vast.ai box, whose preemption empties it with the checkpoint a resume
    needs (s36 acts hour #2)."""
    shm = _facts("/dev/shm/results", "/dev/shm", fstype="tmpfs")
    spot = replace(_ctx("vastai"), interruptible=True)
    bad = check_durable(shm, spot)
    assert not bad.ok
    assert "/dev/shm/results (mount /dev/shm, tmpfs) is in memory" in bad.detail, bad.detail
    assert bad.fix == "set durable_dir for h to a folder on the box's disk"
    # A box that is not preempted: passed, and said to be in memory.
    kept = check_durable(shm, _ctx("vastai"))
    assert kept.ok and kept.detail.endswith("; in memory: a reboot empties it, so pull often")
    assert check_durable(_facts("/root/r", "/", fstype="ext4"), spot).ok  # a disk


def test_a_python_that_hung_is_said_to_have_hung_not_to_have_failed_to_run() -> None:
    """h503 #8: a `python` that hung until preflight.sh's 120 s timeout read "did not run
    (exit 124)"."""
    from rgt_tui.domain.preflight_checks import check_python

    hung = check_python(BoxFacts(py_rc=124, py_tail=("ZZZ",), workdir_ok=True), _ctx("generic-ssh"))
    assert not hung.ok and "started but did not answer within 120 s" in hung.detail, hung
    failed = check_python(
        BoxFacts(py_rc=127, py_tail=("not found",), workdir_ok=True), _ctx("generic-ssh")
    )
    assert "did not run (exit 127)" in failed.detail, failed


def test_a_python_that_floods_is_said_to_have_been_cut_off() -> None:
    """h512 #4: a `python` that printed 300 KB read "did not run (exit 141)": the exit was
    the closed pipe's (preflight.sh reads 64 KiB), not the interpreter's."""
    from rgt_tui.domain.preflight_checks import check_python

    flood = check_python(
        BoxFacts(py_rc=141, py_tail=("AAAA",), workdir_ok=True), _ctx("generic-ssh")
    )
    assert not flood.ok and "printed more than the 64 KiB the check reads" in flood.detail, flood
    assert "did not run" not in flood.detail
