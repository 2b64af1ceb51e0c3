"""A number no field can hold — ``NaN``, ``Infinity`` (Python's JSON reader takes both),
``1e999``, an integer of hundreds of digits — in any field of an agent line is refused by
field: the field is unknown (None, or its entry left out) and a problem names it. Nothing
raises, and the health rules run on what is left (ux-i 1: ``int(inf)`` raised
OverflowError and ended the host's monitor for good)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.samples import agent_sample

from rgt_tui.domain.health import HealthContext, HealthState, evaluate
from rgt_tui.domain.snapshot import HostSnapshot, snapshot_from_agent
from rgt_tui.services.telemetry import parse_agent_line

BAD = ["Infinity", "-Infinity", "NaN", "1e999", "9" * 400]
MARK = "__BAD__"


def _sample() -> dict[str, Any]:
    data = agent_sample("box1")
    data["ckpt"] = {"name": "ckpt.pt", "mtime": 1.0, "size": 10, "writes": [[1.0, 0.5, 10]]}
    return data


def _line(patch: Any, literal: str) -> str:
    """A good agent line with the value ``patch(data)`` sets replaced by ``literal``."""
    data = _sample()
    patch(data)
    return json.dumps(data).replace(json.dumps(MARK), literal)


def _set(*path: str | int) -> Any:
    def patch(data: Any) -> None:
        for key in path[:-1]:
            data = data[key]
        data[path[-1]] = MARK

    return patch


# (where the bad number goes, what the snapshot must say about it, the problem's field)
CASES = [
    (_set("host_cpus"), lambda s: s.host_cpus is None, "sample.host_cpus"),
    (_set("seq"), lambda s: s.seq == 0, "sample.seq"),
    (_set("t"), lambda s: s.t == 0.0, "sample.t"),
    (_set("uptime_s"), lambda s: s.uptime_s is None, "sample.uptime_s"),
    (_set("disks", 0, "bytes_used"), lambda s: [d.path for d in s.disks] == ["/workspace"], "disks.bytes_used"),
    (_set("gpus", 0, "index"), lambda s: [g.index for g in s.gpus] == [1], "gpus.index"),
    (_set("gpus", 1, "util_pct"), lambda s: s.gpus[1].util_pct is None, "gpus.util_pct"),
    (_set("gpus", 1, "temp_c"), lambda s: s.gpus[1].temp_c is None, "gpus.temp_c"),
    (_set("gpu_processes", 0, "pid"), lambda s: [p.pid for p in s.gpu_processes or ()] == [4122], "gpu_processes.pid"),
    (_set("cgroup", "memory_max"), lambda s: s.cgroup is not None and s.cgroup.memory_max is None, "cgroup.memory_max"),
    (_set("cgroup", "oom_kill"), lambda s: s.cgroup is not None and s.cgroup.oom_kill is None, "cgroup.oom_kill"),
    (_set("loadavg", 1), lambda s: s.loadavg is None, "sample.loadavg"),
]  # fmt: skip


@pytest.mark.parametrize("literal", BAD, ids=lambda b: b[:12])
@pytest.mark.parametrize(("patch", "holds", "field"), CASES, ids=[c[2] for c in CASES])
def test_a_number_no_field_can_hold_is_refused_by_field(patch, holds, field, literal) -> None:  # type: ignore[no-untyped-def]
    snap = parse_agent_line("box1", _line(patch, literal))
    assert snap is not None
    assert holds(snap), snap
    [problem] = [p for p in snap.problems if p.startswith(f"{field}:")]
    assert literal[:12] in problem
    _rules_run(snap)


@pytest.mark.parametrize("literal", BAD, ids=lambda b: b[:12])
def test_a_checkpoint_size_or_write_out_of_range_is_unknown(literal: str) -> None:
    snap = parse_agent_line("box1", _line(_set("ckpt", "size"), literal))
    assert snap is not None and snap.checkpoints is not None
    assert snap.checkpoints.size is None
    snap = parse_agent_line("box1", _line(_set("ckpt", "writes", 0, 0), literal))
    assert snap is not None and snap.checkpoints is not None and snap.checkpoints.writes == ()


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan"), 1 << 70, -(1 << 70)])
def test_python_values_past_the_range_are_refused_too(value: float) -> None:
    """A caller that builds the object itself (a replay) meets the same rule."""
    data = _sample()
    data["host_cpus"] = value
    data["gpus"][0]["mem_used"] = value
    snap = snapshot_from_agent("box1", data)
    assert snap.host_cpus is None and snap.gpus[0].mem_used is None
    assert any(p.startswith("sample.host_cpus: expected a finite number") for p in snap.problems)
    assert any(p.startswith("gpus.mem_used: expected a finite number") for p in snap.problems)
    _rules_run(snap)


def test_the_largest_real_figures_still_pass() -> None:
    data = _sample()
    data["host_mem_total"] = (1 << 63) - 1  # a huge but possible byte count
    data["t"] = 4102444800.5  # 2100-01-01
    snap = parse_agent_line("box1", json.dumps(data))
    assert snap is not None and snap.host_mem_total == (1 << 63) - 1 and snap.t == 4102444800.5
    assert snap.problems == ()


def _rules_run(snap: HostSnapshot) -> None:
    """The health rules take the snapshot as it is (nothing after the parser raises)."""
    evaluate(snap, HealthState().observe(snap), HealthContext())


# (where an impossible reading goes, its value, what the snapshot must say about it)
IMPOSSIBLE = [
    (_set("gpus", 1, "util_pct"), -50, lambda s: s.gpus[1].util_pct is None),
    (_set("gpus", 1, "util_pct"), 150, lambda s: s.gpus[1].util_pct is None),
    (_set("gpus", 1, "temp_c"), -273, lambda s: s.gpus[1].temp_c is None),
    (_set("gpus", 1, "power_w"), -5.0, lambda s: s.gpus[1].power_w is None),
    (_set("gpus", 1, "mem_used"), -1, lambda s: s.gpus[1].mem_used is None),
    (_set("gpus", 0, "index"), -1, lambda s: [g.index for g in s.gpus] == [1]),
    (_set("gpu_processes", 0, "pid"), -1, lambda s: [p.pid for p in s.gpu_processes or ()] == [4122]),
    (_set("disks", 0, "bytes_used"), -5, lambda s: [d.path for d in s.disks] == ["/workspace"]),
    (_set("cgroup", "oom_kill"), -2, lambda s: s.cgroup is not None and s.cgroup.oom_kill is None),
    # Host figures (h582 #4: exported as they came), and a limit of 0 (a "0-vCPU quota").
    (_set("uptime_s"), -100, lambda s: s.uptime_s is None),
    (_set("host_mem_total"), -1, lambda s: s.host_mem_total is None),
    (_set("host_mem_available"), -1, lambda s: s.host_mem_available is None),
    (_set("host_cpus"), -4, lambda s: s.host_cpus is None),
    (_set("host_cpus"), 0, lambda s: s.host_cpus is None),
    (_set("cgroup", "cpu_quota_vcpus"), 0, lambda s: s.cgroup is not None and s.cgroup.cpu_quota_vcpus is None),
]  # fmt: skip


@pytest.mark.parametrize(("patch", "value", "holds"), IMPOSSIBLE)
def test_an_impossible_reading_is_unknown_and_named(patch, value, holds) -> None:  # type: ignore[no-untyped-def]
    """A utilisation of -50 %, -273 °C, -5 W or GPU index -1 was shown in the pane and
    exported to /metrics as it came (a hostile hour): such a field is now unknown, and a
    problem names it with the range it must be in."""
    snap = parse_agent_line("box1", _line(patch, json.dumps(value)))
    assert snap is not None and holds(snap), snap
    assert any("expected a number from" in p and repr(value) in p for p in snap.problems)
    _rules_run(snap)
