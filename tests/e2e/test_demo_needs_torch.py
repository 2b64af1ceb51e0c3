"""The demo works from the README's words: `make demo` installs what its workload needs,
and `rgt-tui demo` run where torch is missing says so before anything starts, with the
one command that fixes it — instead of a demo whose every cell dies on screen.

The interpreter without torch is real: a venv of this machine's Python whose
site-packages holds every package of the project's venv but torch (symlinks).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

from support import ROOT

from rgt_tui.demo.preflight import CPU_INDEX, missing_torch_message, torch_fix


def venv_without_torch(folder: Path) -> Path:
    """A venv with every package of this one but torch; returns its python."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=60
    )
    python = folder / "bin" / "python"
    ours = Path(sysconfig.get_paths()["purelib"])
    theirs = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True, timeout=60,
        ).stdout.strip()
    )  # fmt: skip
    for entry in ours.iterdir():
        if not re.match(r"(torch|functorch)", entry.name):
            (theirs / entry.name).symlink_to(entry)
    return python


def test_demo_without_torch_names_the_fix_and_starts_nothing(tmp_path: Path) -> None:
    python = venv_without_torch(tmp_path / "venv")
    env = {
        **os.environ,
        "TMPDIR": str(tmp_path),  # where the demo's boxes would go
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "RGT_HOSTS": "",
    }
    check = subprocess.run(
        [str(python), "-c", "import rgt_tui, textual, asyncssh; import torch"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert "No module named 'torch'" in check.stderr  # rgt-tui is there, torch is not

    ran = subprocess.run(
        [str(python), "-m", "rgt_tui", "demo"],
        capture_output=True, text=True, env=env, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert ran.returncode == 1, ran.stderr
    assert "the demo's training runs need PyTorch" in ran.stderr
    assert str(python) in ran.stderr
    # Not this checkout's .venv: the fix is pip on that interpreter, the CPU build.
    assert f"{python} -m pip install 'torch>=2.6' --index-url {CPU_INDEX}" in ran.stderr
    assert ran.stdout == ""  # the TUI never opened
    assert not list(tmp_path.glob("rgt-demo-*")), "boxes were started"


def test_in_the_checkout_the_fix_is_make_demo(tmp_path: Path) -> None:
    venv = ROOT / ".venv"
    fix = torch_fix(str(venv / "bin" / "python"), str(venv), ROOT)
    assert fix == f"cd {ROOT} && make demo"
    message = missing_torch_message(str(venv / "bin" / "python"), str(venv), ROOT)
    assert message.endswith(f"  cd {ROOT} && make demo")
    # Another venv beside the checkout: `make demo` would fill .venv, not that one.
    other = tmp_path / "env"
    assert "make demo" not in torch_fix(str(other / "bin" / "python"), str(other), ROOT)


def test_make_demo_installs_torch_before_it_starts_the_demo() -> None:
    """The README's demo command: the Makefile's demo target needs the torch stamp."""
    dry = subprocess.run(
        ["make", "-n", "-W", "pyproject.toml", "demo"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    lines = dry.stdout.splitlines()
    torch_at = next(i for i, line in enumerate(lines) if "pip install -q torch==" in line)
    demo_at = next(i for i, line in enumerate(lines) if line.endswith("rgt-tui demo"))
    assert torch_at < demo_at
