"""A GPU box over time, from recorded nvidia-smi output (tests/fixtures/gpu, SOURCES.txt).

The recording holds a real H100 idle and under load (gpu-burn and two memhogs: three
compute processes on GPU 0). A test names a GPU state per sample and a process list per
listing; the rows come from the recording, re-emitted in the agent's field order:

- ``load``: the recorded load rows (100 % util, 19,818 MiB in use);
- ``idle``: the recorded idle rows (0 %, nothing in use);
- ``held``: the idle rows with the load's VRAM still in use: what a process that died
  without freeing its memory leaves behind (zombie VRAM, U11). The one edited state.

``replay_script`` writes a stand-in ``nvidia-smi`` that prints the Nth state on its Nth
call, so a real agent run with ``--smi-every 1`` sees state k on sample k, and its
``--proc-every N`` listings see the lists in order, whatever the wall clock does.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from rgt_tui.agent.probe import gpu_smi
from rgt_tui.demo.gpu_replay import rebuild_rows
from support import FIXTURES

GPU_FIXTURES = FIXTURES / "gpu"
H100_UUID = "GPU-00000000-0000-0000-0000-000000000000"
MEMORY_USED = gpu_smi.SMI_GPU_FIELDS.index("memory.used")


def _rows(name: str, fields: tuple[str, ...]) -> str:
    return rebuild_rows((GPU_FIXTURES / name).read_text(), fields)


def gpu_rows(state: str) -> str:
    """The agent-order ``--query-gpu`` rows of one state: load, idle or held."""
    load = _rows("h100_load_query_gpu.csv", gpu_smi.SMI_GPU_FIELDS)
    idle = _rows("h100_idle_query_gpu.csv", gpu_smi.SMI_GPU_FIELDS)
    if state == "load":
        return load
    if state == "idle":
        return idle
    if state == "held":
        cells = idle.strip().split(", ")
        cells[MEMORY_USED] = load.strip().split(", ")[MEMORY_USED]
        return ", ".join(cells) + "\n"
    raise ValueError(f"no GPU state {state!r} (load, idle or held)")


def app_rows(listed: bool) -> str:
    """The ``--query-compute-apps`` rows: the recorded three processes, or none."""
    return _rows("h100_load_query_compute_apps.csv", gpu_smi.SMI_APP_FIELDS) if listed else ""


def agent_line(
    seq: int, state: str, listed: bool | None, *, every: int, t0: float = 1_767_268_800.0
) -> dict[str, Any]:
    """One agent sample (its JSON object) at 2 s per sample: GPU ``state``; processes
    listed (the recorded three, or none) or, with ``listed`` None, not polled."""
    gpus = gpu_smi.parse_smi_gpus(gpu_rows(state))
    procs = None
    if listed is not None:
        procs = gpu_smi.parse_smi_apps(app_rows(listed), {H100_UUID: 0})
    return {
        "v": 1,
        "t": t0 + 2.0 * seq,
        "seq": seq,
        "boot_id": "boot-1",
        "host_cpus": 64,  # the recorded box's cores; torch sizes its pools to them (U40)
        "cgroup": {"version": 2, "cpu_quota_vcpus": 2.0, "oom_kill": 0},
        "gpu_source": "nvidia-smi",
        "gpus": gpus,
        "gpu_processes": procs,
        "proc_every": every,
        "errors": [],
    }


def replay_script(folder: Path, states: list[str], lists: list[bool]) -> Path:
    """A stand-in ``nvidia-smi``: its Nth ``--query-gpu`` call prints ``states[N]`` and
    its Nth ``--query-compute-apps`` call ``lists[N]`` (the last one from then on)."""
    folder.mkdir(parents=True, exist_ok=True)
    for n, state in enumerate(states):
        (folder / f"gpu.{n}").write_text(gpu_rows(state))
    for n, listed in enumerate(lists):
        (folder / f"apps.{n}").write_text(app_rows(listed))
    q = shlex.quote(str(folder))
    script = folder / "nvidia-smi"
    script.write_text(
        f"""#!/bin/sh
next() {{  # $1: gpu or apps, $2: its last file; prints this call's file, counting calls
    n=$(cat {q}/$1.calls 2>/dev/null || echo 0)
    echo $((n + 1)) > {q}/$1.calls
    if [ -f {q}/$1.$n ]; then cat {q}/$1.$n; else cat {q}/$1.$2; fi
}}
case "$*" in
  *--query-gpu=*) next gpu {len(states) - 1} ;;
  *--query-compute-apps=*) next apps {len(lists) - 1} ;;
  *) exit 2 ;;
esac
"""
    )
    script.chmod(0o755)
    return script
