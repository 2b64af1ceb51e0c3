"""Agent JSON → snapshot: typed values, and bad remote output recorded rather than raised."""

from __future__ import annotations

from rgt_tui.domain.snapshot import snapshot_from_agent

GOOD = {
    "v": 1,
    "t": 1700000000.5,
    "seq": 3,
    "hostname": "box",
    "boot_id": "b1",
    "uptime_s": 120.5,
    "loadavg": [0.5, 0.4, 0.3],
    "disks": [
        {
            "path": "/w",
            "mount": "/",
            "bytes_used": 10,
            "bytes_total": 100,
            "inodes_used": 9,
            "inodes_total": 10,
        }
    ],
    "cgroup": {
        "version": 2,
        "memory_current": 5,
        "memory_max": "unlimited",
        "oom_kill": 1,
        "cpu_quota_vcpus": 2.5,
    },
    "gpu_source": "none",
    "gpu_unavailable_reason": "no NVIDIA device",
    "gpus": [],
    "gpu_processes": None,
    "errors": [],
}


def test_good_sample_parses_with_unlimited_as_flag():
    s = snapshot_from_agent("h", GOOD)
    assert s.problems == ()
    assert s.boot_id == "b1" and s.uptime_s == 120.5 and s.loadavg == (0.5, 0.4, 0.3)
    assert s.disks[0].inodes_fraction == 0.9
    assert s.cgroup.memory_max is None and s.cgroup.memory_unlimited
    assert s.cgroup.cpu_quota_vcpus == 2.5 and not s.cgroup.cpu_unlimited
    assert s.gpu_processes is None and s.gpu_unavailable_reason == "no NVIDIA device"


def test_wrong_types_become_none_and_problems_not_exceptions():
    bad = dict(GOOD)
    bad["uptime_s"] = "soon"
    bad["cgroup"] = {"version": 2, "memory_current": True, "oom_kill": "3"}
    bad["disks"] = [{"path": "/", "mount": "/", "bytes_used": "x"}, 7]
    bad["gpu_source"] = "cuda"
    bad["gpus"] = [{"index": 0, "name": "GPU", "util_pct": "high"}]
    s = snapshot_from_agent("h", bad)
    assert s.uptime_s is None and s.cgroup.memory_current is None and s.cgroup.oom_kill is None
    assert s.disks == () and s.gpu_source == "none"
    assert s.gpus[0].util_pct is None
    text = " | ".join(s.problems)
    for fragment in (
        "uptime_s",
        "memory_current",
        "oom_kill",
        "bytes_used",
        "not a JSON object: 1 entry",
        "cuda",
        "util_pct",
    ):
        assert fragment in text


def test_agent_errors_and_protocol_version_are_reported():
    s = snapshot_from_agent("h", {"v": 9, "errors": ["statvfs /nope: No such file"]})
    assert "agent: statvfs /nope: No such file" in s.problems
    assert any("protocol v9" in p for p in s.problems)


def test_the_running_cell_and_the_queue_done_time():
    s = snapshot_from_agent("h", {**GOOD, "cell": "box1_lr3", "queue_done_at": 1700000000})
    assert s.cell == "box1_lr3" and s.queue_done_at == 1700000000.0
    assert snapshot_from_agent("h", GOOD).cell is None
    bad = snapshot_from_agent("h", {**GOOD, "cell": 7, "queue_done_at": "soon"})
    assert bad.cell is None and bad.queue_done_at is None
    assert any("sample.cell" in p for p in bad.problems)
    assert any("sample.queue_done_at" in p for p in bad.problems)


def test_two_watched_paths_on_one_filesystem_are_one_disk():
    """``local`` watches / and ~: on one filesystem, ``status`` listed / twice."""
    from support.samples import agent_sample, disk

    data = agent_sample(
        "local", disks=[disk("/", "/", 31, 9), disk("~", "/", 31, 9), disk("/data", "/data", 5, 1)]
    )
    s = snapshot_from_agent("local", data)
    assert [d.mount for d in s.disks] == ["/", "/data"]
    assert s.disks[0].path == "/"
