"""U39, the path half: the box's TensorBoard reads one folder, the runs write events in
another — said with the fix. A real process named ``tensorboard`` on the loopback box
(this machine), an events file under a cell's ``{out}`` folder."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

from support.machine import free_port
from support.pulls import host_of
from support.waiting import wait_for

from rgt_tui.domain.tensorboard import (
    BoxTensorBoard,
    TensorBoardProcess,
    parse_process,
    tensorboard_advice,
)
from rgt_tui.services.box.tensorboard import check_tensorboard, read_tensorboard
from rgt_tui.services.connections import FleetConnections


@contextlib.contextmanager
def fake_tensorboard(bin_dir: Path, *args: str, cwd: Path | None = None) -> Iterator[int]:
    """A process whose command line is ``bash …/tensorboard ARGS`` (as python's
    ``…/bin/tensorboard`` script shows in ps); yields its pid, killed afterwards."""
    script = bin_dir / "tensorboard"
    if not script.exists():
        bin_dir.mkdir(parents=True, exist_ok=True)
        script.write_text("#!/bin/bash\nsleep 600 &\nwait\n")
        script.chmod(0o755)
    proc = subprocess.Popen([str(script), *args], cwd=cwd, start_new_session=True)
    try:
        yield proc.pid
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


async def test_a_tensorboard_reading_another_folder_is_named_with_the_fix(
    make_loopback_fleet, tmp_path
):
    fleet = await make_loopback_fleet(1)
    host = host_of(fleet)
    results = fleet.box("box1").root / "results"
    events = results / "cell_a" / "tb" / "events.out.tfevents.1712345678.box.1"
    events.parent.mkdir(parents=True)
    events.write_bytes(b"\x00" * 16)
    port = free_port()  # this test's own: no other TensorBoard on the machine counts
    connections = FleetConnections([host])
    transport = await connections.connected("box1")
    try:
        with fake_tensorboard(tmp_path / "bin", "--logdir", "/wrong", "--port", str(port)) as pid:

            async def seen() -> bool:
                box = await read_tensorboard(host, transport)
                return any(p.pid == pid for p in box.processes)

            await wait_for(seen, what="the fake tensorboard in /proc")
            advice = await check_tensorboard(host, transport, port)
            assert advice == (
                f"TensorBoard on box1 reads /wrong; your runs write events under {results} — "
                f"start it with --logdir {results}"
            )
            # Another port: the one that runs is named, with the command to tunnel it.
            other = await check_tensorboard(host, transport, free_port())
            assert other is None or f"listens on {port}" in other.replace(", ", " ")

        # Started the right way (relative to its cwd, as `cd ~ && tensorboard --logdir
        # results` would): nothing to say.
        box_home = fleet.box("box1").root
        started = fake_tensorboard(
            tmp_path / "bin", "--logdir=results", f"--port={port}", cwd=box_home
        )
        with started as pid:

            async def seen_right() -> bool:
                box = await read_tensorboard(host, transport)
                return any(p.pid == pid for p in box.processes)

            await wait_for(seen_right, what="the second fake tensorboard in /proc")
            assert await check_tensorboard(host, transport, port) is None
    finally:
        await connections.close_all()


def test_tensorboard_command_lines_are_told_from_others():
    assert parse_process(
        7, "/root", ["/usr/bin/python3", "/usr/local/bin/tensorboard", "--logdir", "runs"]
    ) == TensorBoardProcess(7, ("/root/runs",), 6006)
    spec = parse_process(
        8, "/", ["python", "-m", "tensorboard.main", "--logdir_spec=a:/x/a,b:/y", "--port", "6010"]
    )
    assert spec == TensorBoardProcess(8, ("/x/a", "/y"), 6010)
    # A training script that merely mentions it is not one.
    assert parse_process(9, "/", ["python", "train.py", "--logger", "tensorboard"]) is None


def test_no_tensorboard_on_the_port_says_how_to_start_one_without_bind_all():
    box = BoxTensorBoard((), ("/data/runs/c1",), "/data/runs")
    advice = tensorboard_advice("gpu1", 6006, box)
    assert advice is not None and "no TensorBoard runs on gpu1" in advice
    assert "tensorboard --logdir /data/runs --port 6006 --host 127.0.0.1" in advice
    assert "--bind_all" in advice and "needs no" in advice
    # A port that is not TensorBoard's: nothing to say about TensorBoard.
    assert tensorboard_advice("gpu1", 8888, box) is None


def test_box_paths_in_the_advice_are_printable():
    hostile = "/tmp/\x1b]52;c;aGk=\x07x"
    box = BoxTensorBoard((TensorBoardProcess(1, (hostile,), 6006),), ("/r/c1",), "/r")
    advice = tensorboard_advice("gpu1", 6006, box)
    assert advice is not None and "\x1b" not in advice and "\x07" not in advice
    assert "\\x1b]52" in advice
