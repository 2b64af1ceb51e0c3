"""The queue commands end to end: the real console entry point, exit codes, JSON."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import signal
import subprocess
import sys
from pathlib import Path

from queue_support import SCRIPT_RUN, wait_view

from rgt_tui.domain.queue_state import FINISHED, RUNNING

RGT = [sys.executable, "-m", "rgt_tui"]
GATE = 'while [ ! -e "$HOME/go" ]; do sleep 0.05; done'


def rgt(
    *args: str, cwd: Path | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*RGT, *args], capture_output=True, text=True, timeout=60, cwd=cwd, input=stdin,
        env={**os.environ, "RGT_HOSTS": ""},
    )  # fmt: skip


async def arun(*args: str, **kwargs) -> subprocess.CompletedProcess:
    # The loopback servers live in this test's event loop, so the CLI runs off-loop.
    return await asyncio.to_thread(rgt, *args, **kwargs)


def test_queue_check_exit_codes_json_and_duplicates(tmp_path):
    (tmp_path / "queues").mkdir()
    (tmp_path / "queues" / "a.txt").write_text(
        "# sweep\nconfigs/ablation/baseline.yaml reconstruction 20\nconfigs/x/no_aug.yaml recon\n"
    )
    (tmp_path / "queues" / "b.txt").write_text("configs/det/baseline.yaml detection 50\n")
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        '[fleet]\ndefault_epochs = 30\n\n[[hosts]]\nname = "a"\nssh = "u@a.example"\nqueue = "queues/a.txt"\n'
        'run = "python t.py {cfg}"\nepochs = 12\n'
    )
    clean = rgt("queue", "check", "--hosts", str(hosts), "--json", cwd=tmp_path)
    assert clean.returncode == 0, clean.stderr
    cells = json.loads(clean.stdout)
    assert [(c["name"], c["epochs"], c["line"], c["host"]) for c in cells] == [
        ("baseline", 20, 2, "a"), ("no_aug", 12, 3, "a"),
    ]  # fmt: skip
    assert set(cells[0]) >= {"file", "line", "name", "cfg", "task", "epochs"}
    assert (
        cells[0]["file"] == "queues/a.txt" and cells[0]["cfg"] == "configs/ablation/baseline.yaml"
    )

    dup = rgt("queue", "check", "--hosts", str(hosts), "queues/b.txt", cwd=tmp_path)
    assert dup.returncode == 1
    assert "'baseline' is used 2 times: queues/a.txt:2 and queues/b.txt:1" in dup.stderr
    assert "3 cells in 2 queue files" in dup.stdout

    (tmp_path / "bad.txt").write_text("x.yaml recon 2 3\ny.yaml\n")
    bad = rgt("queue", "check", "--hosts", str(hosts), "bad.txt", cwd=tmp_path)
    assert bad.returncode == 1
    assert "bad.txt:1: too many fields" in bad.stderr and "bad.txt:2: missing task" in bad.stderr
    broken = tmp_path / "broken.toml"
    broken.write_text("[[hosts]\n")
    assert rgt("queue", "check", "--hosts", str(broken), cwd=tmp_path).returncode == 2


async def test_launch_show_append_and_diagnose_from_the_command_line(make_queue_fleet):
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    hosts = str(qf.loopback.hosts_file)
    qf.write_queue(f"{qf.cell_script('gate', GATE)} t\n")

    asked = await arun("launch", "box1", "--hosts", hosts)  # no terminal, no --yes
    assert asked.returncode == 2 and "pass --yes" in asked.stderr
    assert "Launch plan for box1" in asked.stdout and "cells/gate.sh gate" in asked.stdout
    assert not (qf.qdir() / "runner.state").exists()

    launched = await arun("launch", "box1", "--hosts", hosts, "--yes")
    assert launched.returncode == 0, launched.stderr
    assert (
        "launched on box1: runner pid" in launched.stdout
        and "tmux session rgt-box1" in launched.stdout
    )
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING)

    again = await arun("launch", "box1", "--hosts", hosts, "--yes")
    assert again.returncode == 1 and "REFUSED: the queue on box1 is already running" in again.stdout

    qf.append_queue(f"{qf.cell_script('next_one', 'echo next')} t 2\n")
    appended = await arun("queue", "append", "box1", "--hosts", hosts)
    assert appended.returncode == 0, appended.stderr
    assert "appended 1 cell" in appended.stdout and "next_one" in appended.stdout

    shown = await arun("queue", "show", "box1", "--hosts", hosts, "--json")
    assert shown.returncode == 0
    view = json.loads(shown.stdout)
    assert view["state"] == "running" and [c["status"] for c in view["cells"]] == [
        "running",
        "pending",
    ]

    (qf.root() / "go").touch()
    await wait_view(qf, lambda v: v.state == FINISHED)
    calm = await arun("diagnose", "box1", "--hosts", hosts)
    assert calm.returncode == 0 and "nothing vanished" in calm.stdout
    unknown = await arun("diagnose", "nope", "--hosts", hosts)
    assert unknown.returncode == 2 and "no host named 'nope'" in unknown.stderr
    fresh_box = await arun("queue", "show", "box2", "--hosts", hosts)
    assert fresh_box.returncode == 0 and "box2: not deployed · 0/0 done" in fresh_box.stdout
    qf.write_queue("cells/other.sh t\n", "box2")
    await qf.loopback.box("box2").stop()
    down = await arun("launch", "box2", "--hosts", hosts, "--yes")
    assert down.returncode == 1 and "box2 is unreachable" in down.stdout


class _Prompted:
    """`rgt-tui launch` under a pseudo-terminal, so it asks as it would a person."""

    def __init__(self, *args: str) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            [*RGT, *args], stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={**os.environ, "RGT_HOSTS": ""},
        )  # fmt: skip
        os.close(slave)
        self.out = b""

    async def wait_for(self, text: str) -> None:
        assert self.proc.stdout is not None
        while text.encode() not in self.out:
            chunk = await asyncio.wait_for(
                asyncio.to_thread(os.read, self.proc.stdout.fileno(), 4096), 60
            )
            assert chunk, f"exited before {text!r}: {self.out.decode()}"
            self.out += chunk

    async def finish(self, timeout: float = 30) -> tuple[int, str, str]:
        try:
            out, err = await asyncio.to_thread(self.proc.communicate, timeout=timeout)
        finally:
            os.close(self.master)
            if self.proc.returncode is None:
                self.proc.kill()
        return self.proc.returncode, (self.out + out).decode(), err.decode()


async def test_launch_asks_with_no_connection_held_and_ctrl_c_stops_it_at_once(make_queue_fleet):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    hosts = str(qf.loopback.hosts_file)
    qf.write_queue(f"{qf.cell_script('quick', 'echo hi')} t\n")

    # Ctrl-C at the question: 130 straight away (no thread left waiting on the terminal).
    asked = _Prompted("launch", "box1", "--hosts", hosts)
    await asked.wait_for("Launch 1 cells on box1? [y/N]")
    asked.proc.send_signal(signal.SIGINT)
    code, _, err = await asked.finish(timeout=10)
    assert code == 130, err
    assert not (qf.qdir() / "runner.state").exists()

    # The box restarts while the question waits: the answer launches on a fresh connection.
    answered = _Prompted("launch", "box1", "--hosts", hosts)
    await answered.wait_for("[y/N]")
    box = qf.loopback.box("box1")
    await box.stop()
    await box.start()
    os.write(answered.master, b"y\n")
    code, out, err = await answered.finish()
    assert code == 0, out + err
    assert "launched on box1: runner pid" in out
    await wait_view(qf, lambda v: v.state == FINISHED)
