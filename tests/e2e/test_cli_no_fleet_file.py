"""A command run where no fleet file is found says so (hour s17b #9): a plain `status`
or `queue check` in the wrong folder, or in a project's subfolder, read as a clean fleet
of this machine alone, exit 0. It still runs on this machine, and a hosts.toml in a
folder above is named with the way to use it. The real command line, in real folders."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "RGT_HOSTS"}
    return subprocess.run(
        [sys.executable, "-m", "rgt_tui", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_a_subfolder_of_the_project_names_the_fleet_file_above(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "configs").mkdir(parents=True)
    (project / "hosts.toml").write_text('[[hosts]]\nname = "gpu1"\nssh = "u@127.0.0.1:1"\n')
    done = _run(project / "configs", "queue", "check")
    assert done.returncode == 0, done.stderr  # this machine alone: nothing to check
    assert (
        f"rgt-tui queue check: no fleet file: no hosts.toml in {project / 'configs'}"
    ) in done.stderr, done.stderr
    assert (
        f"{project / 'hosts.toml'} is one: run from {project}, or pass --hosts ../hosts.toml"
    ) in done.stderr, done.stderr


def test_the_wrong_folder_says_this_machine_stands_in(tmp_path: Path) -> None:
    done = _run(tmp_path, "queue", "check")
    assert "no fleet file" in done.stderr and "this machine stands in" in done.stderr
    shown = _run(tmp_path, "queue", "check", "--hosts", str(tmp_path / "missing.toml"))
    assert "no fleet file:" not in shown.stderr  # a named file that is missing: its own error


def test_a_copied_example_with_every_block_commented_out_says_so(tmp_path: Path) -> None:
    """h581 #7: `cp hosts.example.toml hosts.toml; rgt-tui status` showed `local`, exit 0,
    and nothing on stderr."""
    example = Path(__file__).resolve().parents[2] / "hosts.example.toml"
    (tmp_path / "hosts.toml").write_text(example.read_text())
    done = _run(tmp_path, "queue", "check")
    assert done.returncode == 0, done.stderr
    assert (
        f"rgt-tui queue check: {tmp_path / 'hosts.toml'} names no [[hosts]] entry (every "
        "block commented out?): this machine stands in, as 'local'"
    ) in done.stderr, done.stderr
