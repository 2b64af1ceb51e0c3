"""The on-box agent, run as the transport runs it: ``python3 -u -`` with the source on stdin.

Recorded trees under tests/fixtures/cgroup_* stand in for a box's /proc and /sys (see each
README.txt); recorded nvidia-smi output under tests/fixtures/gpu (see SOURCES.txt) is
replayed by a tiny stand-in executable, the one fake here, because no GPU exists on the
machines these tests run on. Every sample goes through ``snapshot_from_agent``, the agent's
only consumer.

One file for one program (the agent): its cases share the recorded trees and the run helpers; a split would scatter them.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import FIXTURES, GIB, MIB
from support.machine import oldest_python3

from rgt_tui.agent import agent_command, agent_source
from rgt_tui.agent.bundle import PROBE_ENTRY, bundle
from rgt_tui.agent.probe import artifacts, cgroup, gpu_smi, kmsg, processes, queue_watch
from rgt_tui.demo import gpu_replay
from rgt_tui.domain.snapshot import HostSnapshot, snapshot_from_agent

GPU_FIXTURES = FIXTURES / "gpu"
PYTHON3 = shutil.which("python3") or sys.executable
H100_UUID = "GPU-00000000-0000-0000-0000-000000000000"


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """The probe keeps this box's id in ~/.rgt/box-id (created when missing): give every
    agent run a home of its own so the tests never write into the real one."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    return home


def run_shell(command: str, timeout: float = 60) -> list[dict]:
    """Run an agent command line through /bin/sh, source on stdin; return its JSON lines."""
    proc = subprocess.run(
        command,
        shell=True,
        input=agent_source(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "", proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def run_agent(*args: str, python: str = PYTHON3, timeout: float = 60) -> list[dict]:
    """Run ``python -u - ARGS`` with the agent source on stdin; return its JSON lines."""
    command = " ".join(shlex.quote(w) for w in (python, "-u", "-", *args))
    return run_shell(command, timeout)


def argv(*parts) -> list[str]:
    """Agent arguments: strings are split on spaces, paths stay one word each."""
    out: list[str] = []
    for part in parts:
        out += part.split() if isinstance(part, str) else [str(part)]
    return out


def snap(data: dict) -> HostSnapshot:
    """The consumer's view of one agent line."""
    return snapshot_from_agent("box", data)


def fixture_roots(name: str) -> list[str]:
    """--sys-root/--proc-root arguments pointing at one recorded tree."""
    return [
        "--sys-root",
        str(FIXTURES / name / "sys"),
        "--proc-root",
        str(FIXTURES / name / "proc"),
    ]


def assert_disk_matches_statvfs(disk, path: Path) -> None:
    """The agent's figures are statvfs's, the bytes' total as df's Use% counts it: used
    plus available (used may move a little between the two calls)."""
    st = os.statvfs(path)
    assert disk.path == str(path)
    usable = (st.f_blocks - st.f_bfree + st.f_bavail) * st.f_frsize
    assert abs(disk.bytes_total - usable) < 256 * MIB
    assert disk.inodes_total == st.f_files
    assert abs(disk.bytes_used - (st.f_blocks - st.f_bfree) * st.f_frsize) < 256 * MIB
    assert abs(disk.inodes_used - (st.f_files - st.f_ffree)) < 10000


# ---------------------------------------------------------------------------------------
# The source and the command line


def test_agent_source_is_the_probe_bundle_and_parses_as_python36():
    """What is sent is the bundle of rgt_tui/agent/probe/, in a grammar python 3.6 boxes accept."""
    source = agent_source()
    assert source == bundle(PROBE_ENTRY)
    # Boxes run old python3: the grammar must be 3.6's and no PEP 563 import is allowed.
    ast.parse(source, feature_version=(3, 6))
    assert "from __future__ import annotations" not in source
    # f-string "=" specifiers (3.8) are not caught by feature_version.
    assert not re.search(r"\{[^{}]*=\}", source)


def test_agent_command_quotes_every_word():
    """Mount paths from hosts.toml reach the remote shell as literal words."""
    command = agent_command(
        ["/", "/data/my runs", "$(touch /tmp/pwned)"], 2, count=1, extra_args=["--log", "a b"]
    )
    assert shlex.split(command) == [
        "python3",
        "-u",
        "-",
        "--interval",
        "2.0",
        "--count",
        "1",
        "--mount",
        "/",
        "--mount",
        "/data/my runs",
        "--mount",
        "$(touch /tmp/pwned)",
        "--log",
        "a b",
    ]


def test_agent_runs_on_the_oldest_python3_here(tmp_path):
    """Boxes run old pythons: the agent runs on the oldest one present (3.6 on this image)."""
    python, version = oldest_python3()
    lines = run_agent(
        *argv("--count 1 --no-gpu --mount", tmp_path),
        *fixture_roots("cgroup_v1_limited"),
        python=python,
    )
    s = snap(lines[0])
    assert s.problems == (), (version, s.problems)
    assert s.cgroup.memory_max == 4 * GIB


# ---------------------------------------------------------------------------------------
# Recorded box trees: cgroup v1 / v2, limited / unlimited


def _proc_values(name: str) -> dict:
    proc = FIXTURES / name / "proc"
    meminfo = dict(
        (line.split(":")[0], int(line.split()[1]) * 1024)
        for line in (proc / "meminfo").read_text().splitlines()
    )
    return {
        "boot_id": (proc / "sys/kernel/random/boot_id").read_text().strip(),
        "uptime": float((proc / "uptime").read_text().split()[0]),
        "loadavg": tuple(float(x) for x in (proc / "loadavg").read_text().split()[:3]),
        "mem_total": meminfo["MemTotal"],
        "mem_available": meminfo["MemAvailable"],
    }


V1_CGROUP_DIR = "sys/fs/cgroup/memory/process_api/420bd1a78593082c7a02440421956dae"

CASES = {
    # v1 as recorded (hybrid: v1 controllers plus a v2 "unified" tree holding only hugetlb)
    "cgroup_v1": dict(
        version=1,
        memory_current=int(
            (FIXTURES / "cgroup_v1" / V1_CGROUP_DIR / "memory.usage_in_bytes").read_text()
        ),
        memory_max=None,
        memory_unlimited=True,
        oom_kill=0,
        cpu=None,
        cpu_unlimited=True,
        pressure=None,
    ),
    "cgroup_v1_limited": dict(
        version=1,
        memory_current=int(
            (FIXTURES / "cgroup_v1_limited" / V1_CGROUP_DIR / "memory.usage_in_bytes").read_text()
        ),
        memory_max=4 * GIB,
        memory_unlimited=False,
        oom_kill=3,
        cpu=2.0,
        cpu_unlimited=False,
        pressure=None,
    ),
    "cgroup_v2_limited": dict(
        version=2,
        memory_current=3221225472,
        memory_max=8 * GIB,
        memory_unlimited=False,
        oom_kill=2,
        cpu=2.0,
        cpu_unlimited=False,
        pressure=0.05,
    ),
    "cgroup_v2_unlimited": dict(
        version=2,
        memory_current=52690944,
        memory_max=None,
        memory_unlimited=True,
        oom_kill=0,
        cpu=None,
        cpu_unlimited=True,
        pressure=0.0,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_recorded_tree_through_the_transport_command(name, tmp_path):
    """Each recorded tree, run via agent_command as the transport runs it, reads right."""
    command = agent_command(
        [str(tmp_path)], 0.1, count=2, extra_args=[*fixture_roots(name), "--no-gpu"]
    )
    lines = run_shell(command)
    assert [line["seq"] for line in lines] == [0, 1]
    expected, proc = CASES[name], _proc_values(name)
    for line in lines:
        s = snap(line)
        assert s.problems == ()
        assert s.boot_id == proc["boot_id"]
        assert s.uptime_s == proc["uptime"]
        assert s.loadavg == proc["loadavg"]
        assert s.host_mem_total == proc["mem_total"]
        assert s.host_mem_available == proc["mem_available"]
        assert s.host_cpus == os.cpu_count()
        assert abs(s.t - time.time()) < 30
        cg = s.cgroup
        assert cg.version == expected["version"]
        assert cg.memory_current == expected["memory_current"]
        assert cg.memory_max == expected["memory_max"]
        assert cg.memory_unlimited is expected["memory_unlimited"]
        assert cg.oom_kill == expected["oom_kill"]
        assert cg.cpu_quota_vcpus == expected["cpu"]
        assert cg.cpu_unlimited is expected["cpu_unlimited"]
        assert cg.memory_pressure_avg10 == expected["pressure"]
        (disk,) = s.disks
        assert disk.mount == "/"  # the recorded mount table has no mount under / for tmp
        assert_disk_matches_statvfs(disk, tmp_path)
        assert s.gpu_source == "none"
        assert "--no-gpu" in s.gpu_unavailable_reason
        assert s.gpus == () and s.gpu_processes is None
    # "No limit" travels as the word, never as v1's 9223372036854771712.
    raw = lines[0]["cgroup"]
    assert (raw["memory_max"] == "unlimited") is expected["memory_unlimited"]
    assert (raw["cpu_quota_vcpus"] == "unlimited") is expected["cpu_unlimited"]


def test_the_disk_fraction_is_dfs_use_percent(tmp_path):
    """What the pane's bar and the disk alert read is what `df` says (a user's hour saw
    19 % on a box df called 47 % full: 252G of blocks, 48G used, 55G available)."""
    (line,) = run_agent(*argv("--count 1 --interval 0 --no-gpu --mount", tmp_path))
    (disk,) = snap(line).disks
    row = subprocess.run(["df", "-P", str(tmp_path)], capture_output=True, text=True, check=True)
    use_pct = int(row.stdout.splitlines()[-1].split()[4].rstrip("%"))  # df rounds up
    assert use_pct - 1 <= disk.bytes_fraction * 100 <= use_pct, (disk, row.stdout)


def test_live_machine_with_default_roots(tmp_path):
    """On this machine's own /proc and /sys the sample is complete and agrees with it."""
    (line,) = run_agent(*argv("--count 1 --interval 0 --no-gpu --mount", tmp_path))
    s = snap(line)
    assert s.problems == ()
    assert s.boot_id == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    assert abs(s.uptime_s - float(Path("/proc/uptime").read_text().split()[0])) < 30
    assert s.hostname == os.uname().nodename
    (disk,) = s.disks
    assert_disk_matches_statvfs(disk, tmp_path)
    mount = os.path.realpath(tmp_path)
    while not os.path.ismount(mount):
        mount = os.path.dirname(mount)
    assert disk.mount == mount
    # The cgroup version, judged independently of the agent: v2 when the unified
    # hierarchy is mounted with its controllers, else v1 (a memory controller line).
    own = Path("/proc/self/cgroup").read_text().splitlines()
    unified = Path("/sys/fs/cgroup/cgroup.controllers").exists()
    v2 = any(x.startswith("0::") for x in own) and unified
    v1 = not v2 and any(":memory:" in x for x in own)
    assert v2 or v1, f"no cgroup this test knows: {own}"
    assert s.cgroup.version == (2 if v2 else 1)
    assert s.cgroup.memory_current > 0
    assert s.cgroup.memory_max is not None or s.cgroup.memory_unlimited


def test_missing_cgroup_dir_falls_back_to_the_hierarchy_root(tmp_path):
    # A container's /proc/self/cgroup names the host-side path; only the root is mounted.
    """v2: a cgroup path not visible here means the limits are at the root."""
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "cgroup_v2_limited", tree)
    (tree / "proc/self/cgroup").write_text("0::/kubepods/besteffort/pod-x/missing\n")
    (line,) = run_agent(
        *argv("--count 1 --no-gpu --mount", tmp_path, "--sys-root", tree / "sys"),
        *argv("--proc-root", tree / "proc"),
    )
    cg = snap(line).cgroup
    assert (cg.version, cg.memory_max, cg.oom_kill, cg.cpu_quota_vcpus) == (2, 8 * GIB, 2, 2.0)


def test_v1_memory_path_missing_reads_the_memory_root(tmp_path):
    """v1: a memory path not visible here (Docker without cgroupns) reads the root."""
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "cgroup_v1_limited", tree)
    text = (tree / "proc/self/cgroup").read_text()
    (tree / "proc/self/cgroup").write_text(
        text.replace("memory:/process_api/420bd1a78593082c7a02440421956dae", "memory:/docker/abc")
    )
    (line,) = run_agent(
        *argv("--count 1 --no-gpu --mount", tmp_path, "--sys-root", tree / "sys"),
        *argv("--proc-root", tree / "proc"),
    )
    cg = snap(line).cgroup
    root_usage = int((tree / "sys/fs/cgroup/memory/memory.usage_in_bytes").read_text())
    assert cg.memory_current == root_usage
    assert cg.memory_unlimited  # the root's recorded limit is v1's "no limit"
    assert cg.cpu_quota_vcpus == 2.0


def test_no_cgroup_at_all_is_all_null(tmp_path):
    """No /proc/self/cgroup: every cgroup value is null, not an error or a zero."""
    proc = tmp_path / "proc"
    shutil.copytree(FIXTURES / "cgroup_v1" / "proc", proc)
    (proc / "self/cgroup").unlink()
    (line,) = run_agent(
        *argv("--count 1 --no-gpu --mount", tmp_path, "--proc-root", proc),
        *argv("--sys-root", tmp_path / "nosys"),
    )
    assert line["cgroup"] == {
        "version": None,
        "memory_current": None,
        "memory_max": None,
        "oom_kill": None,
        "cpu_quota_vcpus": None,
        "cpu_usage_usec": None,
        "memory_pressure_avg10": None,
    }
    s = snap(line)
    assert s.problems == ()
    assert not s.cgroup.memory_unlimited and not s.cgroup.cpu_unlimited


def test_cgroup_file_parsers_on_recorded_and_documented_text():
    """The cgroup file parsers on recorded v1 text and the documented v2 forms."""
    v1 = FIXTURES / "cgroup_v1" / V1_CGROUP_DIR
    v1_limit = (v1 / "memory.limit_in_bytes").read_text()
    assert cgroup.parse_v1_memory_limit(v1_limit, 25 * GIB) == "unlimited"
    # A limit at or above the host's RAM limits nothing either.
    assert cgroup.parse_v1_memory_limit("34359738368\n", 32 * GIB) == "unlimited"
    assert cgroup.parse_v1_memory_limit("4294967296\n", 32 * GIB) == 4 * GIB
    assert cgroup.parse_flat_key((v1 / "memory.oom_control").read_text(), "oom_kill") == 0
    # Kernels before 4.13 print no oom_kill line: not known, not zero.
    assert cgroup.parse_flat_key("oom_kill_disable 0\nunder_oom 0\n", "oom_kill") is None
    assert cgroup.parse_cfs_quota("-1\n", "100000\n") == "unlimited"
    assert cgroup.parse_cfs_quota("150000\n", "100000\n") == 1.5
    assert cgroup.parse_cpu_max("max 100000\n") == "unlimited"
    assert cgroup.parse_cpu_max("200000 100000\n") == 2.0
    assert cgroup.parse_v2_memory_max("max\n") == "unlimited"
    pressure = (FIXTURES / "cgroup_v2_limited/sys/fs/cgroup/memory.pressure").read_text()
    assert cgroup.parse_pressure_avg10(pressure) == 0.05


# ---------------------------------------------------------------------------------------
# Errors, exit, liveness


def test_nonexistent_mount_is_an_error_naming_it_and_the_rest_survives(tmp_path):
    """A watched path that does not exist costs one error entry, not the sample."""
    missing = str(tmp_path / "no-such-dir")
    (line,) = run_agent(
        *argv("--count 1 --no-gpu --mount", Path(missing), "--mount", tmp_path),
        *fixture_roots("cgroup_v2_limited"),
    )
    assert len(line["errors"]) == 1 and missing in line["errors"][0]
    s = snap(line)
    assert any(missing in p for p in s.problems)
    (disk,) = s.disks
    assert disk.path == str(tmp_path)
    assert s.cgroup.memory_max == 8 * GIB
    assert s.boot_id == _proc_values("cgroup_v2_limited")["boot_id"]


def _start(*args: str) -> subprocess.Popen:
    proc = subprocess.Popen(
        [PYTHON3, "-u", "-", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    proc.stdin.write(agent_source())
    proc.stdin.close()
    proc.stdin = None  # closed, as the transport leaves it; communicate() must not flush it
    return proc


def test_exits_zero_and_silently_when_stdout_closes(tmp_path):
    """A closed channel ends the agent with status 0 and no traceback."""
    proc = _start(*argv("--interval 0.05 --no-gpu --mount", tmp_path))
    assert json.loads(proc.stdout.readline())["seq"] == 0
    proc.stdout.close()  # the SSH channel went away
    assert proc.wait(timeout=60) == 0
    assert proc.stderr.read() == ""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_exits_zero_and_silently_on_signal(sig, tmp_path):
    """SIGTERM and SIGHUP end the agent with status 0 and nothing on stderr."""
    proc = _start(*argv("--interval 0.05 --no-gpu --mount", tmp_path))
    assert json.loads(proc.stdout.readline())["seq"] == 0
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert err == ""
    for line in out.splitlines():  # whatever it printed before stopping is whole JSON
        json.loads(line)


def test_count_one_with_zero_interval_prints_one_sample(tmp_path):
    """What `rgt-tui status` runs: one sample, then exit."""
    lines = run_shell(agent_command([str(tmp_path)], 0.0, count=1, extra_args=["--no-gpu"]))
    assert len(lines) == 1 and lines[0]["v"] == 1


def test_tilde_mount_is_the_box_home(tmp_path, monkeypatch):
    """Fleet files default workdir to "~": the agent expands it on the box, not the client."""
    monkeypatch.setenv("HOME", str(tmp_path))
    (line,) = run_shell(agent_command(["~"], 0.0, count=1, extra_args=["--no-gpu"]))
    (disk,) = line["disks"]
    assert disk["path"] == str(tmp_path) and line["errors"] == []


def test_log_and_artifact_mtimes(tmp_path):
    """Liveness: log mtime and newest artifact mtime (symlinks out are not artifacts)."""
    log = tmp_path / "queue.log"
    log.write_text("cell 3 done\n")
    os.utime(log, (1_700_000_000, 1_700_000_000))
    out = tmp_path / "out"
    (out / "cell_a" / "ckpt").mkdir(parents=True)
    older, newer = out / "cell_a" / "metrics.json", out / "cell_a" / "ckpt" / "last.pt"
    older.write_text("{}")
    newer.write_text("x")
    os.utime(older, (1_600_000_000, 1_600_000_000))
    os.utime(newer, (1_650_000_000, 1_650_000_000))
    # A symlink to a newer file elsewhere is not an artifact of this run.
    outside = tmp_path / "elsewhere.bin"
    outside.write_text("y")
    os.utime(outside, (1_800_000_000, 1_800_000_000))
    (out / "link.bin").symlink_to(outside)
    (line,) = run_agent(
        *argv("--count 1 --no-gpu --mount", tmp_path, "--log", log, "--artifacts", out)
    )
    s = snap(line)
    assert s.log_mtime == 1_700_000_000
    assert s.artifact_mtime == 1_650_000_000
    (missing,) = run_agent(
        *argv("--count 1 --no-gpu --mount", tmp_path, "--log", tmp_path / "not-yet.log"),
        *argv("--artifacts", tmp_path / "no-out"),
    )
    assert missing["log_mtime"] is None and missing["artifact_mtime"] is None
    assert missing["errors"] == []


def test_artifact_scan_is_cached_between_rescans(tmp_path):
    """The artifact tree is walked at most every 30 s, not every sample."""
    f = tmp_path / "a.json"
    f.write_text("{}")
    os.utime(f, (1_600_000_000, 1_600_000_000))
    scanner = artifacts.ArtifactScanner(str(tmp_path))
    assert scanner.newest_mtime() == 1_600_000_000
    g = tmp_path / "b.json"
    g.write_text("{}")
    os.utime(g, (1_700_000_000, 1_700_000_000))
    assert scanner.newest_mtime() == 1_600_000_000  # within 30 s: no rescan
    scanner.last_scan -= artifacts.ARTIFACT_SCAN_EVERY_S + 1
    assert scanner.newest_mtime() == 1_700_000_000


# ---------------------------------------------------------------------------------------
# GPU: parsers on recorded nvidia-smi output


def rebuild_rows(csv_path: Path, fields) -> str:
    """Recorded rows re-emitted in ``fields`` order (see gpu/SOURCES.txt): the demo's
    replay does the same, so tests and demo share one rebuild."""
    return gpu_replay.rebuild_rows(csv_path.read_text(), fields)


def test_parse_smi_gpus_on_recorded_h100_under_load():
    """A recorded H100 under load parses to the agent's GPU shape, units converted."""
    (gpu,) = gpu_smi.parse_smi_gpus(
        rebuild_rows(GPU_FIXTURES / "h100_load_query_gpu.csv", gpu_smi.SMI_GPU_FIELDS)
    )
    assert gpu == {
        "index": 0,
        "name": "NVIDIA H100 80GB HBM3",
        "uuid": H100_UUID,
        "util_pct": 100.0,
        "mem_util_pct": 11.0,
        "sm_clock_mhz": 1980.0,
        "sm_clock_max_mhz": 1980.0,
        "mem_used": 19818 * MIB,
        "mem_total": 81559 * MIB,
        "power_w": 631.95,
        "power_limit_w": 700.0,
        "temp_c": 59.0,
        "throttle_reasons": [],
        "ecc_volatile": 0,
        "lost": False,
    }


def test_parse_smi_gpus_on_recorded_h100_idle():
    """A recorded idle H100: its idle reason bit is not reported as throttling."""
    problems: list[str] = []
    (gpu,) = gpu_smi.parse_smi_gpus(
        rebuild_rows(GPU_FIXTURES / "h100_idle_query_gpu.csv", gpu_smi.SMI_GPU_FIELDS), problems
    )
    assert problems == []
    assert (gpu["util_pct"], gpu["sm_clock_mhz"], gpu["mem_used"]) == (0.0, 345.0, 0)
    assert gpu["power_w"] == 69.85
    assert gpu["throttle_reasons"] == []  # the recorded mask is 0x1: idle is not throttling


def test_parse_smi_gpus_reports_a_row_it_cannot_read():
    """A line that is not a GPU row is named in problems, not silently dropped."""
    problems: list[str] = []
    text = gpu_smi.first_line((GPU_FIXTURES / "smi_driver_failure.txt").read_text())
    assert gpu_smi.parse_smi_gpus(text + "\n", problems) == []
    assert len(problems) == 1 and "NVIDIA-SMI has failed" in problems[0]


def test_clock_event_reason_decoding():
    """Bitmask to names: throttling bits only (U23), idle and user clocks left out."""
    decode = gpu_smi.decode_clock_event_reasons
    assert decode("0x0000000000000001") == []  # gpu_idle
    assert decode("0x0000000000000002") == []  # applications_clocks_setting
    assert decode("0x0000000000000004") == ["sw_power_cap"]
    assert decode("0x0000000000000068") == [
        "hw_slowdown",
        "sw_thermal_slowdown",
        "hw_thermal_slowdown",
    ]
    assert decode(0x80) == ["hw_power_brake"]
    assert decode(0x10) == ["sync_boost"]
    # The recorded H100's "supported" mask has every bit: only the throttling ones come out.
    row = (GPU_FIXTURES / "h100_idle_query_gpu.csv").read_text().splitlines()[1]
    assert "0x00000000000001FF" in row
    assert decode("0x00000000000001FF") == [name for _, name in gpu_smi.CLOCK_EVENT_REASON_BITS]
    assert decode("[N/A]") == [] and decode(None) == [] and decode("Not Active") == []


def test_not_available_cells_on_recorded_rows():
    """N/A, [N/A], [Not Supported] and [deprecated] cells become null."""
    rtx = (GPU_FIXTURES / "rtx2080_ricks_lab_query_gpu.txt").read_text().strip().split(", ")
    assert rtx[10] == "N/A" and gpu_smi.smi_number(rtx[10]) is None  # temperature.memory
    assert gpu_smi.smi_number(rtx[8]) == 176.98  # power.draw
    gtx = (GPU_FIXTURES / "gtx770_megaminer_query_gpu.txt").read_text().strip().split(", ")
    assert [gpu_smi.smi_number(c) for c in gtx[1:4]] == [None, None, 52.0]
    assert gpu_smi.smi_number(gtx[6]) == 52.0  # "52 %": a unit left in is tolerated
    h100 = (GPU_FIXTURES / "h100_idle_query_gpu.csv").read_text().splitlines()[1].split(", ")
    deprecated = [c for c in h100 if c.startswith("[Requested functionality")]
    assert deprecated and all(gpu_smi.smi_value(c) is None for c in deprecated)
    assert gpu_smi.smi_value("[N/A]") is None and gpu_smi.smi_value("Not Supported") is None


def test_parse_smi_apps_on_recorded_processes():
    """Recorded compute processes map to GPU indexes via their uuid."""
    text = rebuild_rows(GPU_FIXTURES / "h100_load_query_compute_apps.csv", gpu_smi.SMI_APP_FIELDS)
    procs = gpu_smi.parse_smi_apps(text, {H100_UUID: 0})
    assert [(p["gpu_index"], p["pid"], p["name"], p["used_mem"]) for p in procs] == [
        (0, 11327, "/root/tools/memhog", 2566 * MIB),
        (0, 11328, "/root/tools/memhog", 1542 * MIB),
        (0, 11345, "./gpu_burn", 15690 * MIB),
    ]
    problems: list[str] = []
    assert gpu_smi.parse_smi_apps(text, {"GPU-other": 1}, problems) == []
    assert len(problems) == 3


def test_read_proc_threads_of_a_live_process():
    """Threads and OMP_NUM_THREADS of a real process (U40), null when unset."""
    env = dict(os.environ, OMP_NUM_THREADS="3")
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env)
    plain_env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    plain = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=plain_env)
    try:
        time.sleep(0.2)
        threads, omp = processes.read_proc_threads("/proc", child.pid)
        assert threads == len(os.listdir(f"/proc/{child.pid}/task"))
        assert omp == 3
        assert processes.read_proc_threads("/proc", plain.pid)[1] is None
        assert processes.read_proc_threads("/proc", 2**22 + 12345) == (None, None)
    finally:
        child.kill()
        plain.kill()
        child.wait()
        plain.wait()


# ---------------------------------------------------------------------------------------
# GPU: the agent end to end, with recorded nvidia-smi output replayed


def write_replay(tmp_path: Path, *, gpus: str = "", apps: str = "", mode: str = "ok") -> Path:
    """An executable that prints recorded nvidia-smi output for the query it is given.

    mode "old-driver": rejects clocks_event_reasons.active as an older driver does;
    mode "no-driver": prints the recorded driver-failure message and exits 9.
    """
    (tmp_path / "gpus.csv").write_text(gpus)
    (tmp_path / "apps.csv").write_text(apps)
    invalid = (GPU_FIXTURES / "smi_invalid_field.txt").read_text().strip()
    invalid = invalid.replace("clocks_throttle_reasons.unknown", "clocks_event_reasons.active")
    failure = GPU_FIXTURES / "smi_driver_failure.txt"
    script = tmp_path / "nvidia-smi"
    script.write_text(
        f"""#!/bin/sh
echo "$*" >> {shlex.quote(str(tmp_path / "calls.log"))}
if [ {shlex.quote(mode)} = no-driver ]; then cat {shlex.quote(str(failure))}; exit 9; fi
case "$*" in
  *clocks_event_reasons.active*)
    if [ {shlex.quote(mode)} = old-driver ]; then echo {shlex.quote(invalid)}; exit 2; fi
    cat {shlex.quote(str(tmp_path / "gpus.csv"))} ;;
  *--query-gpu=*) cat {shlex.quote(str(tmp_path / "gpus.csv"))} ;;
  *--query-compute-apps=*) cat {shlex.quote(str(tmp_path / "apps.csv"))} ;;
  *) exit 2 ;;
esac
"""
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def _calls(tmp_path: Path) -> list[str]:
    return (tmp_path / "calls.log").read_text().splitlines()


def test_agent_reads_gpus_and_processes_from_replayed_nvidia_smi(tmp_path):
    """nvidia-smi fallback end to end, at its own slower cadences."""
    smi = write_replay(
        tmp_path,
        gpus=rebuild_rows(GPU_FIXTURES / "h100_load_query_gpu.csv", gpu_smi.SMI_GPU_FIELDS),
        apps=rebuild_rows(
            GPU_FIXTURES / "h100_load_query_compute_apps.csv", gpu_smi.SMI_APP_FIELDS
        ),
    )
    lines = run_agent(
        *argv("--count 3 --interval 0.05 --smi-every 3 --proc-every 2 --nvidia-smi", smi),
        *argv("--mount", tmp_path),
        *fixture_roots("cgroup_v1"),
    )
    snaps = [snap(line) for line in lines]
    for s in snaps:
        assert s.problems == ()
        assert s.gpu_source == "nvidia-smi" and s.gpu_unavailable_reason is None
        (gpu,) = s.gpus
        assert gpu.name == "NVIDIA H100 80GB HBM3" and gpu.uuid == H100_UUID
        assert (gpu.util_pct, gpu.sm_clock_fraction) == (100.0, 1.0)
        assert (gpu.mem_used, gpu.mem_total) == (19818 * MIB, 81559 * MIB)
        assert (gpu.power_w, gpu.power_limit_w, gpu.temp_c) == (631.95, 700.0, 59.0)
        assert gpu.throttle_reasons == () and gpu.ecc_volatile == 0
    # Processes on samples 0 and 2 only (--proc-every 2); null, not empty, in between.
    # Every sample says the cadence: the samples between carry the list that far.
    assert snaps[1].gpu_processes is None and snaps[1].processes_listed is None
    assert [s.process_every for s in snaps] == [2, 2, 2]
    assert [s.processes_listed.seq for s in (snaps[0], snaps[2])] == [0, 2]
    for s in (snaps[0], snaps[2]):
        assert [(p.gpu_index, p.pid, p.used_mem) for p in s.gpu_processes] == [
            (0, 11327, 2566 * MIB),
            (0, 11328, 1542 * MIB),
            (0, 11345, 15690 * MIB),
        ]
        # The recorded PIDs are not in the recorded /proc: not known, not a guess.
        assert all(p.threads is None and p.omp_threads is None for p in s.gpu_processes)
    # One GPU query for three samples (--smi-every 3); one process query per poll.
    calls = _calls(tmp_path)
    assert sum("--query-gpu=" in c for c in calls) == 1
    assert sum("--query-compute-apps=" in c for c in calls) == 2
    query = next(c for c in calls if "--query-gpu=" in c)
    assert "--query-gpu=" + ",".join(gpu_smi.SMI_GPU_FIELDS) in query
    assert "--format=csv,noheader,nounits" in query


def test_agent_retries_old_driver_field_name_once_and_remembers(tmp_path):
    """An old driver's 'not a valid field' is retried once with the old name."""
    smi = write_replay(
        tmp_path,
        gpus=rebuild_rows(GPU_FIXTURES / "h100_idle_query_gpu.csv", gpu_smi.SMI_GPU_FIELDS),
        mode="old-driver",
    )
    lines = run_agent(
        *argv("--count 2 --interval 0.05 --smi-every 1 --proc-every 100 --nvidia-smi", smi),
        *argv("--mount", tmp_path),
        *fixture_roots("cgroup_v1"),
    )
    for line in lines:
        s = snap(line)
        assert s.problems == () and s.gpu_source == "nvidia-smi"
        assert s.gpus[0].sm_clock_mhz == 345.0
    gpu_calls = [c for c in _calls(tmp_path) if "--query-gpu=" in c]
    assert ["clocks_event_reasons.active" in c for c in gpu_calls] == [True, False, False]
    assert all("clocks_throttle_reasons.active" in c for c in gpu_calls[1:])


def test_nvidia_smi_failure_gives_its_own_first_line_as_reason(tmp_path):
    """A failing nvidia-smi explains itself: its first line is the reason."""
    smi = write_replay(tmp_path, mode="no-driver")
    (line,) = run_agent(
        *argv("--count 1 --nvidia-smi", smi, "--mount", tmp_path), *fixture_roots("cgroup_v1")
    )
    s = snap(line)
    assert s.gpu_source == "none" and s.gpus == ()
    assert s.gpu_unavailable_reason == (GPU_FIXTURES / "smi_driver_failure.txt").read_text().strip()
    assert s.problems == ()


def test_no_nvidia_tools_reason(tmp_path):
    """No NVML and no nvidia-smi: source none, and the reason says so."""
    (line,) = run_agent(*argv("--count 1 --nvidia-smi /nonexistent/nvidia-smi --mount", tmp_path))
    s = snap(line)
    assert s.gpu_source == "none" and s.gpus == () and s.gpu_processes is None
    assert s.gpu_unavailable_reason.startswith("no NVIDIA driver tools (nvidia-smi not found)")
    assert s.problems == ()


def test_pynvml_without_a_driver_falls_through_and_says_so(tmp_path):
    # The project's own venv has nvidia-ml-py; this machine has no NVIDIA library or driver.
    """pynvml importable but no NVIDIA library: fall through, reason names NVML."""
    import pynvml  # nvidia-ml-py is a dependency

    try:
        pynvml.nvmlInit()
        pynvml.nvmlShutdown()
        nvml_works = True
    except pynvml.NVMLError:
        nvml_works = False
    (line,) = run_agent(
        *argv("--count 1 --nvidia-smi /nonexistent/nvidia-smi --mount", tmp_path),
        python=sys.executable,
    )
    s = snap(line)
    if nvml_works:  # a machine with a driver: NVML must be the source, nvidia-smi unused
        assert s.gpu_source == "nvml" and s.gpus
        return
    assert s.gpu_source == "none"
    reason = s.gpu_unavailable_reason
    assert reason.startswith("no NVIDIA driver tools (nvidia-smi not found); NVML: ")
    assert s.problems == ()


# ---------------------------------------------------------------------------------------
# Xid kernel lines (U22)


def test_parse_xid_line_on_recorded_lines():
    """Xid lines parse from dmesg and kmsg form; other NVRM lines do not."""
    line = (GPU_FIXTURES / "xid_dmesg.txt").read_text().strip()
    assert kmsg.parse_xid_line(line) == {"xid": 79, "text": line}
    # The same message as a raw /dev/kmsg record: the record header is dropped.
    assert kmsg.parse_xid_line("3,1042,1843308145,-;" + line) == {"xid": 79, "text": line}
    for other in (GPU_FIXTURES / "nvrm_not_xid.txt").read_text().splitlines():
        assert kmsg.parse_xid_line(other) is None


def test_new_xid_records_are_reported_once(tmp_path):
    """Each Xid record is reported on one sample only (U22)."""
    dev = tmp_path / "dev"
    dev.mkdir()
    kmsg = dev / "kmsg"
    xid = (GPU_FIXTURES / "xid_dmesg.txt").read_text().strip()
    not_xid = (GPU_FIXTURES / "nvrm_not_xid.txt").read_text().splitlines()[-1]
    kmsg.write_text(f"6,1,100,-;{not_xid}\n3,2,200,-;{xid}\n")
    proc = _start(*argv("--interval 0.1 --no-gpu --dev-root", dev, "--mount", tmp_path))
    try:
        first = json.loads(proc.stdout.readline())
        assert first["xids"] == [{"xid": 79, "text": xid}]
        with kmsg.open("a") as f:
            f.write(f"3,3,300,-;{xid}\n")
        later = [json.loads(proc.stdout.readline()) for _ in range(4)]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    assert sum(len(s["xids"]) for s in later) == 1  # the appended record, exactly once
    assert all(s["errors"] == [] for s in [first, *later])
    assert proc.returncode == 0


def test_unreadable_kmsg_is_silently_skipped(tmp_path):
    """No readable kmsg (most containers): no Xids and no error."""
    (line,) = run_agent(
        *argv("--count 1 --no-gpu --dev-root", tmp_path / "nodev", "--mount", tmp_path)
    )
    assert line["xids"] == [] and line["errors"] == []


# ---------------------------------------------------------------------------------------
# The queue's running cell, from the runner's records (U43, GEN1)


def _dead_pid() -> int:
    """A pid that certainly belongs to no process: a child that has exited and been reaped."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def _records(qdir: Path, cells: dict[str, str], runner: str = "") -> None:
    (qdir / "cells").mkdir(parents=True, exist_ok=True)
    for name, text in cells.items():
        (qdir / "cells" / f"{name}.state").write_text(text)
    if runner:
        (qdir / "runner.state").write_text(runner)


def test_queue_watch_finds_the_running_cell_and_follows_it(tmp_path):
    """Only an unfinished attempt of this boot whose pid lives counts; the newest wins;
    when it ends, the next one is found by the same watcher (a long-lived agent)."""
    qdir, out = tmp_path / "queue", tmp_path / "results"
    me, dead = os.getpid(), _dead_pid()
    _records(
        qdir,
        {
            "done": f"start 100 boot1 {me}\nend 200 0\n",
            "old_boot": f"start 300 boot0 {me}\n",  # died with the previous boot (GEN6)
            "killed": f"start 310 boot1 {dead}\n",  # no end record, pid gone
            "early": f"start 320 boot1 {me}\n",
            # Records that follow a start while it runs (the code it runs, a kill asked)
            # leave it running: only start/end lines decide.
            "late": f"start 330 boot1 {me}\ncode tree={'a' * 64} commit=- dirty=0\n"
            "kill 331 user next\n",
            "half": f"start 340 boot1 {me}",  # no newline yet: still being written
        },
        runner="launch 90 boot1 tmux 0 /x 1\n",
    )
    watch = queue_watch.QueueWatch(str(qdir), str(out), "/proc")
    cell, log, scanner, done = watch.poll("boot1")
    assert cell == "late" and done is None
    assert log == str(qdir / "cells" / "late.log")
    assert scanner.root == str(out / "late")
    # The cell ends: the next poll looks again at once and finds the other live one.
    with open(qdir / "cells" / "late.state", "a") as f:
        f.write("end 400 0\n")
    assert watch.poll("boot1")[0] == "early"
    # A finished launch: no cell runs and the done time is the runner's record.
    for name in ("early", "half"):
        with open(qdir / "cells" / f"{name}.state", "a") as f:
            f.write("\nend 410 0\n")
    (qdir / "runner.state").write_text("launch 90 boot1 tmux 0 /x 1\ndone 420 3 0\n")
    assert watch.poll("boot1") == (None, None, None, 420.0) and not watch.stopped
    # A launch that ended on the user's stop says so (h513 #8: GEN1 read "finished").
    (qdir / "runner.state").write_text(
        "launch 90 boot1 tmux 0 /x 1\nstop 400 user\nstopped 410 2\ndone 420 1 0\n"
    )
    assert watch.poll("boot1")[3] == 420.0 and watch.stopped
    # A new launch clears the done time and the stop.
    (qdir / "runner.state").write_text(
        "launch 90 boot1 tmux 0 /x 1\nstopped 410 2\ndone 420 3 0\nlaunch 500 boot1 tmux 0 /x 2\n"
    )
    assert watch.poll("boot1")[3] is None and not watch.stopped


def test_queue_watch_does_not_reread_every_record_every_sample(tmp_path, monkeypatch):
    """With no cell running, the records are read again only when the cells folder or
    the runner's records changed, or after QUEUE_RESCAN_EVERY_S: a record rewritten in
    place (the folder unchanged) is seen only then."""
    qdir = tmp_path / "queue"
    _records(qdir, {"a": "start 1 boot1 1\nend 2 0\n"}, runner="launch 1 boot1 tmux 0 /x 1\n")
    watch = queue_watch.QueueWatch(str(qdir), None, "/proc")
    assert watch.poll("boot1")[0] is None
    with open(qdir / "cells" / "a.state", "a") as f:  # a new attempt of a, live: this test
        f.write(f"start 3 boot1 {os.getpid()}\n")
    for _ in range(5):
        assert watch.poll("boot1")[0] is None  # not read again
    monkeypatch.setattr(queue_watch, "QUEUE_RESCAN_EVERY_S", 0.0)  # the rescan period is over
    assert watch.poll("boot1")[0] == "a"


def test_agent_reports_the_running_cell_its_log_and_outputs(tmp_path, isolated_home):
    """Through the agent's command line: the default queue dir is the box's
    ~/.rgt/queue, the outputs are <--out-root>/<cell>, and RGT_BOOT_ID_FILE (the
    runner's own boot id source, when set) is honoured."""
    qdir = isolated_home / ".rgt" / "queue"
    boot = tmp_path / "boot_id"
    boot.write_text("boot-7\n")
    holder = subprocess.Popen(["sleep", "30"])  # the cell's process
    try:
        _records(qdir, {"cell_a": f"start 1700000000 boot-7 {holder.pid}\n"})
        log = qdir / "cells" / "cell_a.log"
        log.write_text("epoch 1\n")
        os.utime(log, (1_700_000_100, 1_700_000_100))
        ckpt = tmp_path / "results" / "cell_a" / "checkpoint.pt"
        ckpt.parent.mkdir(parents=True)
        ckpt.write_text("x")
        os.utime(ckpt, (1_700_000_900, 1_700_000_900))
        command = agent_command(
            [str(tmp_path)], 0.0, count=1, extra_args=["--no-gpu"], out_root=str(ckpt.parent.parent)
        )
        env_command = f"RGT_BOOT_ID_FILE={shlex.quote(str(boot))} {command}"
        (line,) = run_shell(env_command)
        s = snap(line)
        assert (s.cell, s.log_mtime, s.artifact_mtime) == (
            "cell_a",
            1_700_000_100,
            1_700_000_900,
        )
        assert s.queue_done_at is None and line["errors"] == []
    finally:
        holder.kill()
        holder.wait()
    (line,) = run_shell(f"RGT_BOOT_ID_FILE={shlex.quote(str(boot))} {command}")
    assert line["cell"] is None and line["log_mtime"] is None  # its process is gone
    assert line["queue_done_at"] is None and line["queue_stopped"] is False
    # The launch ended on the user's stop: the sample says it (GEN1's words, h513 #8).
    (qdir / "runner.state").write_text("launch 90 boot-7 tmux 0 /x 1\nstopped 95 1\ndone 99 0 0\n")
    (line,) = run_shell(f"RGT_BOOT_ID_FILE={shlex.quote(str(boot))} {command}")
    assert line["queue_done_at"] == 99.0 and line["queue_stopped"] is True
    assert snap(line).queue_stopped


def test_an_unread_mount_is_said_as_the_fleet_file_writes_it(tmp_path):
    """The agent expands ~ to read a path; one it cannot read comes back as written
    (~/nope), so the client matches it to the host's own mounts exactly (disk.unread)."""
    (line,) = run_agent(
        *argv("--count 1 --interval 0 --no-gpu --mount", tmp_path, "--mount ~/rgt-no-such-dir")
    )
    assert line["disks_unread"] == [["~/rgt-no-such-dir", "No such file or directory"]], line
    assert [d.path for d in snap(line).disks] == [str(tmp_path)]
