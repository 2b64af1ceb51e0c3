"""A GPU whose VRAM a real process holds: the VRAM-reclaim tests' box.

No GPU (and no ``/dev/nvidia*``) exists where the tests run. So:

- ``HeldDevices`` starts a real process that holds files named like the device nodes
  open (``<dir>/nvidia0``, ``<dir>/nvidiactl``, ``<dir>/nvidia-uvm``); the box-side
  script's fd walk is pointed at that prefix by RGT_NVIDIA_DEV_PREFIX (tests only);
- ``vram_smi`` writes a stand-in ``nvidia-smi`` replaying the recorded H100
  (tests/fixtures/gpu, SOURCES.txt): while the holder runs, the recording's idle rows
  with the load's 19,818 MiB still in use (``held``, what a dead run leaves); once it
  ended, the idle rows (memory freed), as the driver frees a context when its process
  exits. It answers both the VRAM script's fields and the agent's.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

from rgt_tui.agent.probe import gpu_smi
from rgt_tui.demo.gpu_replay import rebuild_rows
from support import FIXTURES
from support.gpu_sequence import app_rows, gpu_rows

VRAM_GPU_FIELDS = ("index", "uuid", "memory.used", "utilization.gpu")
VRAM_APP_FIELDS = ("gpu_uuid", "pid", "used_memory")
DEVICES = ("nvidia0", "nvidiactl", "nvidia-uvm")

HOLDER = """
import os, signal, sys, time
fds = [os.open(p, os.O_RDONLY) for p in sys.argv[1:]]
def let_go(*_):
    for fd in fds:
        os.close(fd)
    fds.clear()
signal.signal(signal.SIGUSR1, let_go)
print("ready", flush=True)
while True:
    time.sleep(1)
"""


class HeldDevices:
    """A real process holding device-named files open; killed at ``stop`` if still alive."""

    def __init__(self, folder: Path, env: dict[str, str] | None = None) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.prefix = str(folder / "nvidia")
        paths = []
        for name in DEVICES:
            (folder / name).write_text("")
            paths.append(str(folder / name))
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, *paths],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline() == "ready\n"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def ended(self) -> bool:
        """Whether the process exited (reaped here, so it is no zombie)."""
        return self.proc.poll() is not None

    def let_go(self) -> None:
        """Close the files but keep running (its PID no longer holds the device)."""
        os.kill(self.pid, signal.SIGUSR1)

    def holds(self) -> bool:
        """Whether it holds a device file now (read from /proc, as the box does)."""
        fd_dir = Path(f"/proc/{self.pid}/fd")
        with contextlib.suppress(OSError):
            return any(
                os.readlink(fd_dir / fd).startswith(self.prefix) for fd in os.listdir(fd_dir)
            )
        return False

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def _recorded_rows(name: str, fields: tuple[str, ...]) -> str:
    return rebuild_rows((FIXTURES / "gpu" / name).read_text(), fields)


def vram_smi(folder: Path, holder_pid: int, *, listed: bool = False) -> Path:
    """The stand-in ``nvidia-smi`` (see the module docstring); ``listed``: its compute
    apps are the recording's three processes (host PIDs of another namespace)."""
    folder.mkdir(parents=True, exist_ok=True)
    held_row = gpu_rows("held").strip().split(", ")
    idle_row = gpu_rows("idle").strip().split(", ")

    def pick(row: list[str], fields: tuple[str, ...]) -> str:
        by_name = dict(zip(gpu_smi.SMI_GPU_FIELDS, row, strict=True))
        return ", ".join(by_name[f] for f in fields) + "\n"

    files = {
        "held.agent": ", ".join(held_row) + "\n",
        "idle.agent": ", ".join(idle_row) + "\n",
        "held.vram": pick(held_row, VRAM_GPU_FIELDS),
        "idle.vram": pick(idle_row, VRAM_GPU_FIELDS),
        "apps.agent": app_rows(listed),
        "apps.vram": _recorded_rows("h100_load_query_compute_apps.csv", VRAM_APP_FIELDS)
        if listed
        else "",
    }
    for name, text in files.items():
        (folder / name).write_text(text)
    q = shlex.quote(str(folder))
    script = folder / "nvidia-smi"
    script.write_text(
        f"""#!/bin/bash
# rgt-tui tests: the recorded H100; its VRAM is held while pid {holder_pid} runs.
state=idle
stat=$(cat /proc/{holder_pid}/stat 2>/dev/null) && stat=${{stat##*) }} && \\
    [ "${{stat%% *}}" != Z ] && state=held
case "$*" in
  *--query-gpu=index,uuid,memory.used,utilization.gpu*) cat {q}/$state.vram ;;
  *--query-gpu=*) cat {q}/$state.agent ;;
  *--query-compute-apps=gpu_uuid,pid,used_memory*) cat {q}/apps.vram ;;
  *--query-compute-apps=*) cat {q}/apps.agent ;;
  *) exit 2 ;;
esac
"""
    )
    script.chmod(0o755)
    return script
