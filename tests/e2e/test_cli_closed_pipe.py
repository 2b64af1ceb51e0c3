"""A command whose reader went away (`rgt-tui queue check | head -0`) ends quietly with
SIGPIPE's status, 141, as other tools do: no BrokenPipeError traceback on stderr, and
not exit 1 for a command that worked."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

from support.cli import RGT_TUI, arun, cli_env
from support.teardown_ui import results_on_box


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


async def test_a_pull_whose_reader_went_away_ends_with_141_and_keeps_what_it_has(
    loopback_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """`rgt-tui pull box1 2>&1 | head -1`: both streams a closed pipe. The pull ends as
    SIGPIPE would (141), quietly, not as a failed pull (1); nothing is marked pulled
    that was not, and the same pull run again completes."""
    results_on_box(loopback_fleet.box("box1").root)
    env = {"RGT_HOSTS": str(loopback_fleet.hosts_file)}
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = await asyncio.to_thread(
            subprocess.run,
            [str(RGT_TUI), "pull", "box1"], stdout=write_end, stderr=write_end,
            env=cli_env(env), cwd=tmp_path, timeout=120, check=False,
        )  # fmt: skip
    finally:
        os.close(write_end)
    assert done.returncode == 141
    again = await arun("pull", "box1", env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    verified = await arun("verify", "box1", env=env)
    assert verified.returncode == 0, verified.stdout + verified.stderr
