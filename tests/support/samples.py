"""Agent-shaped samples for UI tests, the three-host fleet file, and the frozen clock.

The samples are agent JSON (the shape ``rgt_tui.agent.probe`` prints) turned into
snapshots and alerts by the real parser and health rules; only the transport is left out.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from rgt_tui.domain.config import Fleet
from rgt_tui.domain.health import HealthContext, HealthState, Thresholds, evaluate
from rgt_tui.domain.snapshot import snapshot_from_agent
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.telemetry import ConnectionState, HostUpdate
from support import GIB

HOSTS = ["a100-train", "h100-eval", "spot-4090"]  # the hosts of FLEET_TOML, in order
FROZEN = 1767268800.0  # 2026-01-01 12:00:00 UTC

FLEET_TOML = """\
[[hosts]]
name = "a100-train"
ssh = "root@10.0.0.5:40022"
profile = "vastai"
cost_per_hour = 1.89
started_at = 2026-01-01T10:00:00Z
mounts = ["/", "/workspace"]

[[hosts]]
name = "h100-eval"
ssh = "ubuntu@10.0.0.6"
profile = "lambda"
cost_per_hour = 2.49
mounts = ["/", "/workspace"]

[[hosts]]
name = "spot-4090"
ssh = "root@10.0.0.7:2222"
profile = "runpod"
cost_per_hour = 0.34
started_at = 2026-01-01T08:30:00Z
"""


def clock() -> float:
    """The frozen 'now' of every UI test."""
    return FROZEN


def write_fleet(folder: Path, text: str = FLEET_TOML) -> Fleet:
    """The three-host fleet file of these tests, loaded by the real config loader."""
    path = folder / "hosts.toml"
    path.write_text(text)
    return load_fleet(path)


def gpu(index: int, util: float, sm: float, used_gib: float, temp: float, **extra: Any) -> dict:
    """One agent GPU row (an 80 GiB A100-class card with a 1410 MHz max SM clock)."""
    row = {
        "index": index, "name": "NVIDIA A100-SXM4-80GB", "uuid": f"GPU-5f1c-{index}",
        "util_pct": util, "mem_util_pct": util * 0.6, "sm_clock_mhz": sm,
        "sm_clock_max_mhz": 1410, "mem_used": int(used_gib * GIB), "mem_total": 80 * GIB,
        "power_w": 250 + index, "power_limit_w": 400, "temp_c": temp,
        "throttle_reasons": [], "ecc_volatile": 0,
    }  # fmt: skip
    row.update(extra)
    return row


def disk(path: str, mount: str, bytes_pct: float, inodes_pct: float, total_gib: int = 500) -> dict:
    """One agent disk row; inodes 32.8M on the file system."""
    total, inodes = total_gib * GIB, 32_768_000
    return {
        "path": path, "mount": mount, "bytes_used": int(total * bytes_pct / 100),
        "bytes_total": total, "inodes_used": int(inodes * inodes_pct / 100), "inodes_total": inodes,
    }  # fmt: skip


def agent_sample(host: str, *, t: float = FROZEN, seq: int = 1, **overrides: Any) -> dict:
    """A full agent JSON line for ``host``; ``overrides`` replace top-level keys."""
    data = {
        "v": 1, "t": t, "seq": seq, "hostname": host, "boot_id": f"boot-{host}",
        "uptime_s": 7200.0, "loadavg": [3.1, 2.9, 2.5], "host_cpus": 128,
        "host_mem_total": 1024 * GIB, "host_mem_available": 700 * GIB,
        "disks": [disk("/", "/", 40, 12), disk("/workspace", "/workspace", 55, 20)],
        "cgroup": {
            "version": 2, "memory_current": 40 * GIB, "memory_max": 64 * GIB, "oom_kill": 0,
            "cpu_quota_vcpus": 8.0, "memory_pressure_avg10": 0.0,
        },
        "gpu_source": "nvml", "gpu_unavailable_reason": None,
        "gpus": [gpu(0, 97, 1305, 61.5, 66), gpu(1, 95, 1290, 60.2, 68)],
        "gpu_processes": [
            {"gpu_index": 0, "pid": 4121, "name": "python", "used_mem": 61 * GIB, "threads": 24, "omp_threads": 8},
            {"gpu_index": 1, "pid": 4122, "name": "python", "used_mem": 60 * GIB, "threads": 24, "omp_threads": 8},
        ],
        "xids": [], "log_mtime": t - 30, "artifact_mtime": t - 300, "errors": [],
    }  # fmt: skip
    data.update(overrides)
    return data


def make_update(
    host: str,
    data: dict,
    connection: ConnectionState | None = None,
    *,
    health: HealthState | None = None,
    cost_per_hour: float | None = None,
) -> HostUpdate:
    """What HostMonitor would emit for this sample: real parser, real health rules."""
    snap = snapshot_from_agent(host, data)
    state = (health or HealthState()).observe(snap)
    conn = connection or ConnectionState("connected", FROZEN - 3600)
    ctx = HealthContext(
        thresholds=Thresholds(),
        connection=conn.status,
        lost_since=None if conn.status == "connected" else conn.since,
        cost_per_hour=cost_per_hour,
    )
    return HostUpdate(host, conn, snap, evaluate(snap, state, ctx), state)


def healthy_update(seq: int = 1, t: float = FROZEN) -> HostUpdate:
    """a100-train: two busy GPUs, disks and memory comfortable."""
    return make_update("a100-train", agent_sample("a100-train", seq=seq, t=t))


def inode_update() -> HostUpdate:
    """h100-eval: /workspace has inodes 96 % used while its bytes are 41 % (U7)."""
    data = agent_sample(
        "h100-eval",
        disks=[disk("/", "/", 31, 9), disk("/workspace", "/workspace", 41, 96, total_gib=2000)],
        gpus=[gpu(0, 35, 1410, 20.0, 58, name="NVIDIA H100 80GB HBM3")],
        gpu_processes=[{"gpu_index": 0, "pid": 777, "name": "eval.py", "used_mem": 20 * GIB}],
    )
    # No started_at in the fleet file: billed from when rgt-tui first saw it, 10:00.
    return replace(make_update("h100-eval", data), first_seen=FROZEN - 7200)


def lost_update() -> HostUpdate:
    """spot-4090: the link dropped ten minutes ago; the last sample is older still."""
    data = agent_sample(
        "spot-4090",
        t=FROZEN - 660,
        uptime_s=5000.0,
        disks=[disk("/", "/", 62, 18, total_gib=200)],
        gpus=[gpu(0, 99, 2520, 21.1, 74, name="NVIDIA GeForce RTX 4090", sm_clock_max_mhz=2520)],
        gpu_processes=None,
        cgroup={
            "version": 2,
            "memory_current": 30 * GIB,
            "memory_max": "unlimited",
            "oom_kill": 0,
            "cpu_quota_vcpus": "unlimited",
        },  # fmt: skip
    )
    conn = ConnectionState(
        "lost",
        FROZEN - 600,
        error="connect to 10.0.0.7:2222: connection refused",
        fix="is the pod stopped? start it in the RunPod console, then press r",
    )
    return make_update("spot-4090", data, conn)


def three_updates() -> list[HostUpdate]:
    """The three hosts of the snapshot tests, in fleet order."""
    return [healthy_update(), inode_update(), lost_update()]


def many_hosts_fleet(tmp_path: Path, n: int) -> Fleet:
    """A fleet file of ``n`` bare hosts, box0..box{n-1}."""
    text = "".join(f'[[hosts]]\nname = "box{i}"\nssh = "root@10.0.1.{i}"\n\n' for i in range(n))
    return write_fleet(tmp_path, text)


class Clock:
    """A clock a test moves by hand (``clock.t += 60``), from the frozen 'now'."""

    def __init__(self) -> None:
        self.t = FROZEN

    def __call__(self) -> float:
        return self.t
