"""The data-bound warning (U24/U38) over a sequence of samples: the running cell's log
advances, every GPU sits idle (the recorded H100 idle rows, tests/fixtures/gpu) and the
cgroup's CPU-time counter rises at its quota; after ``data_bound_minutes`` it warns."""

from __future__ import annotations

from typing import Any

from support.gpu_sequence import gpu_rows

from rgt_tui.agent.probe import gpu_smi
from rgt_tui.domain.health import HealthContext, HealthState, Thresholds, evaluate
from rgt_tui.domain.snapshot import snapshot_from_agent

T0 = 1_767_268_800.0
MINUTE = 60.0


def sample(
    minute: int, *, cpu_vcpus: float, gpu: str = "idle", log_age_s: float = 5.0, quota=2.0
) -> dict[str, Any]:
    """A sample at ``minute``: the cgroup used ``cpu_vcpus`` on average since the start."""
    t = T0 + MINUTE * minute
    return {
        "v": 1,
        "t": t,
        "seq": minute,
        "boot_id": "boot-1",
        "host_cpus": 64,
        "cgroup": {
            "version": 2,
            "cpu_quota_vcpus": quota,
            "cpu_usage_usec": int(cpu_vcpus * 1e6 * MINUTE * minute),
            "oom_kill": 0,
        },
        "gpu_source": "nvidia-smi",
        "gpus": gpu_smi.parse_smi_gpus(gpu_rows(gpu)),
        "cell": "c03-resnet",
        "log_mtime": t - log_age_s,
        "errors": [],
    }


def alerts_after(samples: list[dict[str, Any]], th: Thresholds = Thresholds()):
    state = HealthState()
    snap = None
    for data in samples:
        snap = snapshot_from_agent("box", data)
        state = state.observe(snap, th)
    return [
        a for a in evaluate(snap, state, HealthContext(thresholds=th)) if a.id == "gpu.data_bound"
    ]


def test_starving_for_data_warns_after_the_threshold_naming_the_knobs():
    starving = [sample(m, cpu_vcpus=1.95) for m in range(12)]
    assert alerts_after(starving[:10]) == []  # 9 minutes of it: not yet
    (alert,) = alerts_after(starving)
    assert alert.severity == "warning" and alert.gotcha == "U24" and alert.subject == "c03-resnet"
    for word in ("num_workers", "pin_memory", "2-vCPU quota", "98%", "U8", "GPU util ≤ 0%"):
        assert word in alert.message, word
    # The threshold is the fleet file's.
    assert alerts_after(starving[:4], Thresholds(data_bound_minutes=2)) != []


def test_not_data_bound_when_any_condition_is_missing():
    # CPU at half its quota: the GPU is idle for another reason.
    assert alerts_after([sample(m, cpu_vcpus=1.0) for m in range(12)]) == []
    # The GPU is busy (the recorded load rows, 100 %).
    assert alerts_after([sample(m, cpu_vcpus=1.95, gpu="load") for m in range(12)]) == []
    # The log has been silent for 20 minutes: not "advancing" (another rule's case).
    assert alerts_after([sample(m, cpu_vcpus=1.95, log_age_s=1200) for m in range(12)]) == []
    # One busy-GPU sample restarts the clock.
    mixed = [sample(m, cpu_vcpus=1.95, gpu="load" if m == 6 else "idle") for m in range(12)]
    assert alerts_after(mixed) == []


def test_no_quota_measures_against_the_host_cpus():
    # cpu.max "max": the budget is the host's 64 CPUs; 2 vCPUs used is far from it.
    unlimited = [sample(m, cpu_vcpus=1.95, quota="unlimited") for m in range(12)]
    assert alerts_after(unlimited) == []
    busy = [sample(m, cpu_vcpus=63.0, quota="unlimited") for m in range(12)]
    (alert,) = alerts_after(busy)
    assert "64-vCPU quota" in alert.message
