"""Boxes set up to fail one preflight check each: a stand-in ``nvidia-smi`` replaying
real recorded output, a stand-in ``torch`` (only where a real GPU cannot exist here),
a torch-less interpreter, a PATH without tmux.

No GPU exists on the machine the tests run on. The stand-in ``nvidia-smi`` prints rows
rebuilt from the recordings in tests/fixtures/gpu (see SOURCES.txt) in the fields
preflight asks for, the way ``rgt_tui.demo.gpu_replay`` rebuilds the agent's; a command
no recording covers prints nothing and exits 2, as an unknown option does.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from rgt_tui.demo.gpu_replay import rebuild_rows

FIXTURES = Path(__file__).parents[1] / "fixtures" / "gpu"
GPU_FIELDS = ("index", "driver_version", "name")
APP_FIELDS = ("pid", "used_memory")


def recorded(name: str) -> str:
    return (FIXTURES / name).read_text()


def _script(folder: Path, answers: dict[str, tuple[str, int]]) -> Path:
    """``nvidia-smi`` in ``folder`` printing ``answers[pattern]`` (text, exit) for the
    first pattern its arguments match (a shell ``case`` pattern)."""
    folder.mkdir(parents=True, exist_ok=True)
    arms = []
    for i, (pattern, (text, code)) in enumerate(answers.items()):
        out = folder / f"answer{i}.txt"
        out.write_text(text)
        arms.append(f"  {pattern}) cat {shlex.quote(str(out))}; exit {code} ;;")
    script = folder / "nvidia-smi"
    script.write_text(
        "#!/bin/sh\n# rgt-tui tests: replays recorded nvidia-smi output; no GPU here.\n"
        'case "$*" in\n' + "\n".join(arms) + "\n  *) exit 2 ;;\nesac\n"
    )
    script.chmod(0o755)
    return script


def h100_smi(folder: Path, *, apps: str = "") -> Path:
    """The recorded H100 (driver 590.48.01, CUDA 13.1); ``apps``: the compute-apps rows
    (``busy_apps()`` for the recording's own, "" for an idle GPU)."""
    return _script(
        folder,
        {
            "*--query-gpu=*": (
                rebuild_rows(recorded("h100_idle_query_gpu.csv"), GPU_FIELDS),
                0,
            ),
            "--version": (recorded("h100_smi_version.txt"), 0),
            "*--query-compute-apps=*": (apps, 0),
        },
    )


def busy_apps() -> str:
    """The recording's three processes under load (memhog ×2, gpu_burn), pid and MiB."""
    return rebuild_rows(recorded("h100_load_query_compute_apps.csv"), APP_FIELDS)


def old_driver_smi(folder: Path) -> Path:
    """The recorded GeForce RTX 2080 on driver 440.64 (CUDA 10.2): its driver_version and
    name cells; that driver's nvidia-smi has no --version, so the mapping decides."""
    cells = [c.strip() for c in recorded("rtx2080_ricks_lab_query_gpu.txt").split(",")]
    row = f"0, {cells[5]}, {cells[6]}\n"
    return _script(folder, {"*--query-gpu=*": (row, 0), "*--query-compute-apps=*": ("", 0)})


def failed_driver_smi(folder: Path) -> Path:
    """nvidia-smi with no driver loaded: its recorded message for every query."""
    text = recorded("smi_driver_failure.txt")
    return _script(folder, {"*": (text, 9)})


# What a cu128 wheel of torch 2.7 reports (torch.cuda.get_arch_list()), and the
# recordings of older wheels: tests/fixtures/torch_arch (README.txt names the sources).
CU128_ARCHES = ("sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120")


def stand_in_torch(
    folder: Path,
    *,
    cuda: str,
    devices: int,
    arch_list: tuple[str, ...] = CU128_ARCHES,
    capability: tuple[int, int] = (9, 0),
    name: str = "NVIDIA H100 80GB HBM3",
    op_error: str | None = None,
) -> Path:
    """A ``torch`` package on ``folder`` reporting a CUDA build, ``devices`` GPUs of
    ``capability``, the build's ``arch_list``, and a tiny op that raises ``op_error``
    (torch's own words) or works: a fake only because no GPU (so no CUDA torch that
    would find one) exists here."""
    pkg = folder / "torch"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text(
        f'__version__ = "2.7.0+cu{cuda.replace(".", "")}"\nfrom torch import cuda, version\n\n'
        "class _T:\n"
        "    def __add__(self, other):\n"
        f"        if {op_error!r} is not None:\n"
        f"            raise RuntimeError({op_error!r})\n"
        "        return self\n"
        "    def sum(self):\n        return self\n"
        "    def item(self):\n        return 2.0\n\n"
        "def ones(n, device=None):\n    return _T()\n"
    )
    (pkg / "version.py").write_text(f"cuda = {cuda!r}\n")
    (pkg / "cuda.py").write_text(
        f"def is_available():\n    return {devices > 0}\n\n"
        f"def device_count():\n    return {devices}\n\n"
        f"def get_arch_list():\n    return {list(arch_list)!r} if {devices > 0} else []\n\n"
        f"def get_device_capability(i):\n    return {tuple(capability)!r}\n\n"
        f"def get_device_name(i):\n    return {name!r}\n"
    )
    return folder


def torchless_python(folder: Path) -> Path:
    """A real interpreter with no torch: a venv made without pip."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120
    )
    return folder / "bin" / "python"


# What preflight.sh and a python3 need from a PATH (tmux deliberately absent).
BOX_TOOLS = (
    "bash", "sh", "cat", "head", "tail", "tr", "grep", "sort", "find", "realpath",
    "readlink", "dirname", "df", "stat", "timeout", "python3", "env", "ls",
)  # fmt: skip


def path_without_tmux(folder: Path) -> Path:
    """A folder of links to the box's usual tools, but not tmux, to be a whole PATH."""
    folder.mkdir(parents=True, exist_ok=True)
    for tool in BOX_TOOLS:
        found = shutil.which(tool)
        assert found, f"{tool} is needed on this machine for the test box"
        (folder / tool).symlink_to(found)
    assert not (folder / "tmux").exists()
    return folder
