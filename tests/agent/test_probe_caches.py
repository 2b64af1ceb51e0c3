"""The long-lived agent's caches: what changes rarely is read rarely, the figures every
sample (the probe modules are stdlib-only and import as a package here)."""

from __future__ import annotations

from pathlib import Path

from rgt_tui.agent.probe.cgroup import CgroupProbe
from rgt_tui.agent.probe.disks import DiskProbe
from rgt_tui.agent.probe.host import parse_meminfo


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _mountinfo(proc: Path, *mounts: str) -> None:
    (proc / "self").mkdir(parents=True, exist_ok=True)
    lines = [f"{20 + i} 1 8:1 / {m} rw - ext4 /dev/sda1 rw" for i, m in enumerate(mounts)]
    (proc / "self" / "mountinfo").write_text("\n".join(lines) + "\n")


def test_disks_read_the_mount_table_again_only_after_refresh(tmp_path):
    proc, watched = tmp_path / "proc", tmp_path / "data"
    watched.mkdir()
    _mountinfo(proc, "/")
    clock = Clock()
    probe = DiskProbe(str(proc), refresh_s=60.0, clock=clock)
    errors: list[str] = []
    (first,) = probe.sample([str(watched)], errors)
    assert first["mount"] == "/" and first["bytes_total"] > 0 and not errors
    # A mount table that now names the path's own mount: not re-read within the minute...
    _mountinfo(proc, "/", str(watched.resolve()))
    clock.now += 59
    (cached,) = probe.sample([str(watched)], errors)
    assert cached["mount"] == "/"
    # ...and read again after it.
    clock.now += 2
    (fresh,) = probe.sample([str(watched)], errors)
    assert fresh["mount"] == str(watched.resolve())
    assert not errors


def test_disks_say_an_unreadable_mount_table_every_sample_and_name_a_lost_path(tmp_path):
    watched = tmp_path / "data"
    watched.mkdir()
    probe = DiskProbe(str(tmp_path / "no-proc"), clock=Clock())
    for _ in range(3):  # cached between reads, but the reason stays on every sample
        errors: list[str] = []
        (entry,) = probe.sample([str(watched)], errors)
        assert entry["inodes_total"] >= 0
        assert errors == []  # absent is "not known" (mount found by walking up)
    watched.rmdir()
    errors = []
    assert probe.sample([str(watched)], errors) == []
    assert errors and str(watched) in errors[0]


def test_cgroup_counters_every_sample_location_cached(tmp_path):
    proc, sys_root = tmp_path / "proc", tmp_path / "sys"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "cgroup").write_text("0::/job\n")
    base = sys_root / "fs" / "cgroup"
    for name in ("job", "other"):
        (base / name).mkdir(parents=True)
        (base / name / "memory.current").write_text("1000\n")
        (base / name / "memory.max").write_text("max\n")
    (base / "cgroup.controllers").write_text("cpu memory\n")
    clock = Clock()
    probe = CgroupProbe(str(proc), str(sys_root), relocate_s=30.0, clock=clock)
    errors: list[str] = []
    assert probe.sample(None, errors)["memory_current"] == 1000
    (base / "job" / "memory.current").write_text("2000\n")
    (base / "other" / "memory.current").write_text("7000\n")
    (proc / "self" / "cgroup").write_text("0::/other\n")  # moved: seen within relocate_s
    clock.now += 10
    assert probe.sample(None, errors)["memory_current"] == 2000  # the counter, fresh
    clock.now += 25
    assert probe.sample(None, errors)["memory_current"] == 7000
    assert not errors


def test_meminfo_stops_reading_at_what_it_needs_and_keeps_the_old_kernel_estimate():
    text = "MemTotal: 100 kB\nMemFree: 10 kB\nMemAvailable: 60 kB\nBuffers: 1 kB\n"
    assert parse_meminfo(text + "Garbage: x y z\n") == (102400, 61440)
    old = "MemTotal: 100 kB\nMemFree: 10 kB\nBuffers: 1 kB\nCached: 5 kB\n"
    assert parse_meminfo(old) == (102400, 16384)
