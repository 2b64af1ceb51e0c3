"""`rgt-tui status` end to end: real servers, the real console script, exit codes and JSON."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import RGT, arun, cli_env, rgt
from support.machine import this_boot_id, tmpfs

STATUS_KEYS = {
    "name",
    "reachable",
    "error",
    "boot_id",
    "uptime_s",
    "disks",
    "cgroup",
    "gpu_source",
    "gpu_unavailable_reason",
    "gpus",
    "alerts",
}


async def test_status_json_over_loopback_fleet(loopback_fleet):
    out = await arun("status", "--hosts", str(loopback_fleet.hosts_file), "--json")
    assert out.returncode == 0, out.stderr
    hosts = json.loads(out.stdout)
    assert [h["name"] for h in hosts] == [b.name for b in loopback_fleet.boxes]
    for h, box in zip(hosts, loopback_fleet.boxes, strict=True):
        assert h.keys() >= STATUS_KEYS
        assert h["reachable"] is True and h["error"] is None
        assert h["boot_id"] == this_boot_id()
        assert h["uptime_s"] > 0
        (disk,) = h["disks"]
        assert disk["path"] == str(box.root)
        st = os.statvfs(box.root)
        # The bytes' total is what can be filled, used plus available, as df counts it.
        usable = (st.f_blocks - st.f_bfree + st.f_bavail) * st.f_frsize
        assert disk["inodes_total"] == st.f_files
        assert abs(disk["bytes_total"] - usable) < 256 * 2**20
        assert set(disk) >= {
            "mount",
            "path",
            "bytes_used",
            "bytes_total",
            "inodes_used",
            "inodes_total",
        }
        assert h["cgroup"]["version"] in (1, 2)
        assert set(h["cgroup"]) >= {
            "version",
            "memory_current",
            "memory_max",
            "oom_kill",
            "cpu_quota_vcpus",
        }
        assert h["gpu_source"] == "none" and h["gpu_unavailable_reason"]
        assert h["gpus"] == []


async def test_one_unreachable_host_does_not_fail_the_others(loopback_fleet):
    await loopback_fleet.boxes[1].stop()
    out = await arun("status", "--hosts", str(loopback_fleet.hosts_file), "--json")
    assert out.returncode == 1
    by_name = {h["name"]: h for h in json.loads(out.stdout)}
    down = by_name[loopback_fleet.boxes[1].name]
    # Refused, or reset when a parallel test's server took the freed port meanwhile (a
    # loaded CI run): either way this box does not answer, and the others still do.
    assert down["reachable"] is False, down
    assert "refused" in down["error"] or "reset" in down["error"], down["error"]
    assert all(
        by_name[b.name]["reachable"] for b in (loopback_fleet.boxes[0], loopback_fleet.boxes[2])
    )
    table = await arun("status", "--hosts", str(loopback_fleet.hosts_file))
    assert table.returncode == 1
    assert f"{loopback_fleet.boxes[1].name}" in table.stdout and "UNREACHABLE" in table.stdout


async def test_a_box_seen_before_that_does_not_answer_may_still_be_running(loopback_fleet):
    """A box `status` (or the TUI, or `watch`) saw answer before is lost, not merely
    unreachable: its run may still be alive (GEN8), as the TUI and `watch` say of it."""
    hosts = str(loopback_fleet.hosts_file)
    box = loopback_fleet.boxes[0]
    first = await arun("status", box.name, "--hosts", hosts, "--json")
    assert first.returncode == 0, first.stdout + first.stderr  # seen: the journal says so
    await box.stop()
    out = await arun("status", box.name, "--hosts", hosts, "--json")
    assert out.returncode == 1
    (down,) = json.loads(out.stdout)
    assert down["reachable"] is False
    said = [a["message"] for a in down["alerts"] if a["gotcha"] == "GEN8"]
    assert said == ["connection lost — the run may still be alive"], down["alerts"]


def _status_measured(hosts: Path, rss_file: Path) -> tuple[subprocess.CompletedProcess[str], int]:
    """`rgt-tui status` run by a bare Python parent, so that parent's RUSAGE_CHILDREN
    peak is the command's own peak RSS (KiB), free of this test process's other children."""
    wrapper = (
        "import os, resource, subprocess, sys\n"
        "rc = subprocess.call(sys.argv[1:])\n"
        "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "open(os.environ['RGT_TEST_RSS'], 'w').write(str(peak))\n"
        "sys.exit(rc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", wrapper, *RGT, "status", "--hosts", str(hosts)],
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env({"RGT_TEST_RSS": str(rss_file)}),
        stdin=subprocess.DEVNULL,
    )
    return out, int(rss_file.read_text())


async def test_a_box_flooding_stdout_is_named_and_costs_no_memory(loopback_fleet, tmp_path):
    hosts = loopback_fleet.hosts_file
    calm, calm_kib = await asyncio.to_thread(_status_measured, hosts, tmp_path / "calm.rss")
    assert calm.returncode == 0, calm.stderr
    flooding = loopback_fleet.boxes[0]
    bin_dir = tmp_path / "hostile-bin"
    bin_dir.mkdir()
    python3 = bin_dir / "python3"  # the box's own python3 prints 200 MiB for a sample
    python3.write_text("#!/bin/sh\ncat > /dev/null\nexec head -c 209715200 /dev/zero\n")
    python3.chmod(0o755)
    flooding.extra_path.append(bin_dir)
    out, flood_kib = await asyncio.to_thread(_status_measured, hosts, tmp_path / "flood.rss")
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stderr + out.stdout
    row = next(line for line in out.stdout.splitlines() if line.startswith(flooding.name))
    assert "the box sent more than 4 MiB on stdout" in row and "rest was dropped" in row
    assert (flood_kib - calm_kib) < 50 * 1024, f"{calm_kib} KiB calm, {flood_kib} KiB flooded"


def test_bad_fleet_file_exits_2_naming_file_line_key(tmp_path):
    bad = tmp_path / "hosts.toml"
    bad.write_text('[[hosts]]\nname = "a"\nssh = "local"\ncost_per_hr = 1.0\n')
    out = rgt("status", "--hosts", str(bad))
    assert out.returncode == 2
    assert (
        f"{bad}:4" in out.stderr and "cost_per_hr" in out.stderr and "cost_per_hour" in out.stderr
    )


def test_status_of_this_machine_without_fleet_file(tmp_path):
    out = rgt("status", "--json", cwd=tmp_path)  # no --hosts, no $RGT_HOSTS, no ./hosts.toml
    assert out.returncode == 0, out.stderr
    (local,) = json.loads(out.stdout)
    assert local["name"] == "local" and local["reachable"] and local["boot_id"] == this_boot_id()
    assert any(d["path"] == "/" for d in local["disks"])
    mounts = [d["mount"] for d in local["disks"]]
    assert len(mounts) == len(set(mounts)), mounts  # / and ~ on one filesystem: listed once


@pytest.mark.parametrize("given", ["0", "-1", "nan", "soon"])
def test_a_timeout_of_zero_or_less_is_refused_at_parsing(tmp_path, given):
    out = rgt("status", "--timeout", given, cwd=tmp_path)
    assert out.returncode == 2 and "--timeout" in out.stderr
    assert "overloaded" not in out.stdout + out.stderr


def test_status_over_real_openssh(openssh_server):
    out = rgt("status", "--hosts", str(openssh_server.hosts_file), "--json")
    assert out.returncode == 0, out.stderr + out.stdout
    (h,) = json.loads(out.stdout)
    assert h["reachable"] and h["boot_id"] == this_boot_id() and h["disks"]


@pytest.fixture
def tiny_inode_fs(tmp_path):
    """A tmpfs with 1000 inodes: fills its inodes long before its bytes (U7)."""
    with tmpfs(tmp_path / "tiny", "64m", inodes=1000) as mnt:
        yield mnt


def test_inode_exhaustion_raises_the_inode_alert_while_bytes_stay_low(tiny_inode_fs, tmp_path):
    for i in range(950):
        (tiny_inode_fs / f"sample_{i:04d}.json").touch()
    fleet = tmp_path / "hosts.toml"
    fleet.write_text(f'[[hosts]]\nname = "here"\nssh = "local"\nmounts = ["{tiny_inode_fs}"]\n')
    out = rgt("status", "--hosts", str(fleet), "--json")
    assert out.returncode == 3, out.stderr  # reachable, and an alert present (exit_codes.py)
    (h,) = json.loads(out.stdout)
    assert "disk.inodes" in {a["id"] for a in h["alerts"]}
    (disk,) = h["disks"]
    assert disk["mount"] == str(tiny_inode_fs)
    assert disk["inodes_used"] / disk["inodes_total"] >= 0.9
    assert disk["bytes_used"] / disk["bytes_total"] < 0.01
    inode_alerts = [a for a in h["alerts"] if a["id"] == "disk.inodes"]
    assert (
        inode_alerts
        and inode_alerts[0]["gotcha"] == "U7"
        and inode_alerts[0]["severity"] == "critical"
    )
    assert not [a for a in h["alerts"] if a["id"] == "disk.bytes"]
    assert shutil.disk_usage(tiny_inode_fs).used < 1 << 20


def test_a_box_that_accepts_but_never_speaks_ssh_reads_alike_whichever_clock_runs_out(
    tmp_path: Path,
) -> None:
    """--timeout shorter than the connect's own: still "no answer … is the box running?",
    not "no sample … overloaded?" for a handshake that never finished."""
    import socket

    hung = socket.socket()
    hung.bind(("127.0.0.1", 0))
    hung.listen(5)
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(f'[[hosts]]\nname = "hung"\nssh = "root@127.0.0.1:{hung.getsockname()[1]}"\n')
    try:
        out = rgt("status", "--hosts", hosts, "--timeout", "3")
    finally:
        hung.close()
    assert out.returncode == 1, out.stderr
    assert "hung           UNREACHABLE  no answer within 3 s" in out.stdout, out.stdout
    assert "is the box running?" in out.stdout and "overloaded" not in out.stdout


def test_a_mount_the_box_cannot_read_is_told_in_the_table_not_only_in_json(tmp_path: Path) -> None:
    """A typo in `mounts` (`/workspce`) left that disk unwatched and `status` said nothing:
    the agent's error reached only `--json`'s problems (hour s34 CLI #3)."""
    missing = tmp_path / "workspce"
    fleet = tmp_path / "hosts.toml"
    fleet.write_text(
        f'[[hosts]]\nname = "here"\nssh = "local"\nmounts = ["{tmp_path}", "{missing}"]\n'
    )
    out = rgt("status", "--hosts", str(fleet))
    assert out.returncode == 0, out.stderr  # an info alert is a note, not a page
    assert (
        f"[info] cannot read {missing} (No such file or directory): its disk is not watched"
        in out.stdout
    ), out.stdout
    (h,) = json.loads(rgt("status", "--hosts", str(fleet), "--json").stdout)
    (alert,) = [a for a in h["alerts"] if a["id"] == "disk.unread"]
    assert alert["subject"] == str(missing) and alert["gotcha"] == "U6"
    missing.mkdir()  # the folder made: its disk is watched, and the note is gone
    (h,) = json.loads(rgt("status", "--hosts", str(fleet), "--json").stdout)
    assert "disk.unread" not in {a["id"] for a in h["alerts"]}
    # The default mounts ("/", workdir, durable_dir) name no typo: a durable_dir the
    # queue has yet to make is no note on every fresh box.
    fleet.write_text(
        f'[[hosts]]\nname = "here"\nssh = "local"\ndurable_dir = "{tmp_path / "runs"}"\n'
    )
    (h,) = json.loads(rgt("status", "--hosts", str(fleet), "--json").stdout)
    assert "disk.unread" not in {a["id"] for a in h["alerts"]}, h["alerts"]
    assert any("runs" in p for p in h["problems"])  # still in --json's problems
