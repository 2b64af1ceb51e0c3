"""A command whose reader went away (`rgt-tui queue check | head -0`) ends quietly with
SIGPIPE's status, 141, as other tools do: no BrokenPipeError traceback on stderr, and
not exit 1 for a command that worked."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from support.cli import RGT_TUI, cli_env


def run_into_a_closed_pipe(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the installed `rgt-tui` with stdout a pipe whose read end is already closed:
    its first write fails (EPIPE) whatever the timing, unlike a real `| head`."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [str(RGT_TUI), *args], stdout=write_end, stderr=subprocess.PIPE, text=True,
            env=cli_env(), cwd=cwd, timeout=120, check=False,
        )  # fmt: skip
    finally:
        os.close(write_end)


def test_a_closed_pipe_ends_the_command_quietly(tmp_path: Path) -> None:
    (tmp_path / "q.txt").write_text("configs/a.yaml t 1\nconfigs/b.yaml t 2\n")
    (tmp_path / "hosts.toml").write_text(
        '[[hosts]]\nname = "box1"\nssh = "root@10.0.0.5:22"\nqueue = "q.txt"\n'
        'run = "python train.py {cfg}"\n'
    )
    done = run_into_a_closed_pipe("queue", "check", "--hosts", "hosts.toml", cwd=tmp_path)
    assert done.returncode == 141, done.stderr
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
