#!/usr/bin/env python3
"""rgt-tui telemetry agent: prints one JSON sample of this box per line, for as long as it lives.

Sent to a box over an SSH exec channel and run as ``python3 -u - ARGS...`` (this source on
stdin, then stdin closed). Every ``--interval`` seconds it prints one object, on one line,
whose keys are fixed by its only consumer, ``rgt_tui.domain.snapshot.snapshot_from_agent``
(protocol version ``v: 1``): host identity (boot id, uptime, and ``box_id``: the id this
box keeps in ``~/.rgt/box-id``, created once when missing, so a box re-created under
the same host name is told apart from the old one), host-wide load and memory
(labelled host-wide there, U41), statvfs bytes AND inodes of each watched path (U7), the
process's own cgroup memory/CPU budget and oom_kill counter (v1 and v2; U9, U41), GPUs
(NVML, else ``nvidia-smi``, else none with the reason; U21, U23), GPU processes with their
thread counts (U11, U40), new NVIDIA Xid kernel lines (U22) and the queue's liveness: the
running cell (found afresh from the runner's records under ``--queue-dir``, so a long-lived
agent follows the queue from cell to cell), its log's mtime and the newest mtime under its
output directory ``<--out-root>/<cell>`` (U43), and when the last launch finished (GEN1).

Rules this file lives by:

- It must run on the box's own python3, which can be as old as 3.6: standard library only
  (``pynvml`` is used when importable, never required), no 3.7+ syntax or APIs.
- A failing sub-probe adds one string to ``errors`` and the sample still prints; a missing
  file or tool is "not known" (null), not a crash.
- It spawns no process per sample except ``nvidia-smi`` when NVML is absent, and then only
  every ``--smi-every`` samples (the GPU rows are reused in between).
- It exits quietly (status 0, nothing on stderr) when its stdout closes or on SIGTERM/SIGHUP.

The GPU parsing functions (``parse_smi_gpus``, ``parse_smi_apps``,
``decode_clock_event_reasons``, ``parse_xid_line``) and the cgroup file parsers are pure, so
tests import this module and call them on recorded output.
"""

# Python 3.6 has no subprocess.run(capture_output=, text=); ruff (targeting 3.10) would
# rewrite those calls into syntax the boxes cannot run.
# ruff: noqa: UP021, UP022

import argparse
import errno
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

PROTOCOL_VERSION = 1
UNLIMITED = "unlimited"

# nvml.h clock event ("throttle") reason bits that mean the clocks are being held down.
# Left out on purpose: 0x1 GpuIdle (nothing to run), 0x2 ApplicationsClocksSetting and
# 0x100 DisplayClockSetting (limits the user or the display set, not a fault).
CLOCK_EVENT_REASON_BITS = (
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake"),
)

SMI_GPU_FIELDS = (
    "index",
    "name",
    "uuid",
    "utilization.gpu",
    "utilization.memory",
    "clocks.sm",
    "clocks.max.sm",
    "memory.used",
    "memory.total",
    "power.draw",
    "power.limit",
    "temperature.gpu",
    "clocks_event_reasons.active",
    "ecc.errors.uncorrected.volatile.total",
)
SMI_REASONS_INDEX = SMI_GPU_FIELDS.index("clocks_event_reasons.active")
# Drivers before the 535 rename only know the old name of the same bitmask.
SMI_OLD_REASONS_FIELD = "clocks_throttle_reasons.active"
SMI_APP_FIELDS = ("gpu_uuid", "pid", "process_name", "used_memory")
SMI_TIMEOUT_S = 15.0
SMI_NOT_FOUND = "no NVIDIA driver tools (nvidia-smi not found)"
NO_DEVICE = "no NVIDIA device"

MIB = 1024 * 1024
V1_UNLIMITED_FLOOR = 2**62  # v1 writes "no limit" as PAGE_COUNTER_MAX pages, ~2^63 bytes
ARTIFACT_SCAN_EVERY_S = 30.0
ARTIFACT_SCAN_LIMIT = 20000
KMSG_MAX_READS = 100000  # bound one sample's kmsg drain; the ring holds far fewer records

XID_RE = re.compile(r"NVRM: Xid \(([^)]*)\): (\d+),")
KMSG_PREFIX_RE = re.compile(r"^\d+,\d+,\d+,[^;]*;")
_NUMBER_RE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)")


# ---------------------------------------------------------------------------------------
# Small readers


def read_text(path):
    """Return the text of a file (read by read(): /proc and /sys report a size of 0)."""
    with open(path, "rb") as f:
        return f.read().decode("utf-8", "replace")


def read_optional(path):
    """Return the file's text, or None when it does not exist (absent means "not known")."""
    try:
        return read_text(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def describe_error(exc):
    """One line for an exception: its type and message, never a traceback."""
    if isinstance(exc, OSError) and exc.strerror:
        where = f" ({exc.filename})" if exc.filename else ""
        return f"{exc.strerror}{where}"
    return f"{type(exc).__name__}: {exc}"


def safe(errors, label, fn, default=None):
    """Run one sub-probe; on any failure record "label: why" in errors and return default."""
    try:
        return fn()
    except Exception as exc:  # one odd file must not cost the whole sample
        errors.append(f"{label}: {describe_error(exc)}")
        return default


# ---------------------------------------------------------------------------------------
# Host-wide figures (U41: the consumer labels these as the host's, not the container's)


def read_boot_id(proc_root):
    """The kernel's boot id: a new one means the box rebooted and every job died (GEN6)."""
    return read_text(os.path.join(proc_root, "sys/kernel/random/boot_id")).strip()


def read_uptime(proc_root):
    """Seconds since boot, from /proc/uptime."""
    return float(read_text(os.path.join(proc_root, "uptime")).split()[0])


def read_loadavg(proc_root):
    """The 1, 5 and 15 minute load averages of the whole host."""
    parts = read_text(os.path.join(proc_root, "loadavg")).split()
    return [float(parts[0]), float(parts[1]), float(parts[2])]


def parse_meminfo(text):
    """Return (MemTotal, MemAvailable) in bytes from /proc/meminfo text."""
    values = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        fields = rest.split()
        if fields and fields[0].isdigit():
            scale = 1024 if len(fields) > 1 and fields[1] == "kB" else 1
            values[key.strip()] = int(fields[0]) * scale
    total = values.get("MemTotal")
    available = values.get("MemAvailable")
    if available is None and "MemFree" in values:
        # Kernels before 3.14 lack MemAvailable; free + reclaimable caches is the old estimate.
        available = values["MemFree"] + values.get("Buffers", 0) + values.get("Cached", 0)
    return total, available


# ---------------------------------------------------------------------------------------
# Disks (U7: inodes run out before bytes, so both are reported)


def _unescape_mount(field):
    """Mount points in mountinfo escape space, tab, newline and backslash as octal (\\040)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def read_mount_points(proc_root):
    """Mount points from <proc>/self/mountinfo, else <proc>/mounts; None if neither reads."""
    text = read_optional(os.path.join(proc_root, "self/mountinfo"))
    if text is not None:
        return [
            _unescape_mount(line.split()[4]) for line in text.splitlines() if len(line.split()) > 4
        ]
    text = read_optional(os.path.join(proc_root, "mounts"))
    if text is not None:
        return [
            _unescape_mount(line.split()[1]) for line in text.splitlines() if len(line.split()) > 1
        ]
    return None


def mount_of(path, mount_points):
    """The mount point holding path: the longest mount point that prefixes its realpath."""
    real = os.path.realpath(path)
    if mount_points:
        best = None
        for mp in mount_points:
            holds = mp == "/" or real == mp or real.startswith(mp.rstrip("/") + "/")
            if holds and (best is None or len(mp) > len(best)):
                best = mp
        if best is not None:
            return best
    # No readable mount table: walk up until a mount boundary.
    while not os.path.ismount(real):
        parent = os.path.dirname(real)
        if parent == real:
            break
        real = parent
    return real


def disk_entry(path, mount_points):
    """statvfs of the file system holding path, in bytes and inodes."""
    st = os.statvfs(path)
    return {
        "path": path,
        "mount": mount_of(path, mount_points),
        "bytes_used": (st.f_blocks - st.f_bfree) * st.f_frsize,
        "bytes_total": st.f_blocks * st.f_frsize,
        "inodes_used": st.f_files - st.f_ffree,
        "inodes_total": st.f_files,
    }


def probe_disks(paths, proc_root, errors):
    """One entry per watched path; a path that cannot be read is an error naming it."""
    mount_points = safe(errors, "mounts", lambda: read_mount_points(proc_root))
    disks = []
    for path in paths:
        try:
            disks.append(disk_entry(path, mount_points))
        except OSError as exc:
            errors.append(f"disk {path}: {exc.strerror or exc}")
    return disks


# ---------------------------------------------------------------------------------------
# cgroup (U9, U41: the container's own budget, not the host's)


def parse_proc_cgroup(text):
    """Return [(hierarchy id, [controllers], path)] from /proc/<pid>/cgroup text."""
    out = []
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            out.append((parts[0], parts[1].split(","), parts[2]))
    return out


def parse_flat_key(text, key):
    """The integer value of one "key value" line of a flat-keyed cgroup file, or None."""
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[0] == key:
            return int(fields[1])
    return None


def parse_v2_memory_max(text):
    """cgroup v2 memory.max: "max" is no limit, written as the string "unlimited"."""
    value = text.strip()
    return UNLIMITED if value == "max" else int(value)


def parse_v1_memory_limit(text, host_mem_total):
    """cgroup v1 memory.limit_in_bytes; a huge value (or one >= host RAM) means no limit."""
    value = int(text.strip())
    if value >= V1_UNLIMITED_FLOOR or (host_mem_total and value >= host_mem_total):
        return UNLIMITED
    return value


def parse_cpu_max(text):
    """cgroup v2 cpu.max "$MAX $PERIOD" as vCPUs; "max ..." is no limit ("unlimited")."""
    fields = text.split()
    if fields[0] == "max":
        return UNLIMITED
    period = int(fields[1]) if len(fields) > 1 else 100000
    return int(fields[0]) / float(period)


def parse_cfs_quota(quota_text, period_text):
    """cgroup v1 cpu.cfs_quota_us / cpu.cfs_period_us as vCPUs; quota -1 is no limit."""
    quota = int(quota_text.strip())
    if quota < 0:
        return UNLIMITED
    return quota / float(int(period_text.strip()))


def parse_pressure_avg10(text):
    """The "some avg10=" figure of a PSI file (memory.pressure), or None."""
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == "some":
            for field in fields[1:]:
                if field.startswith("avg10="):
                    return float(field[len("avg10=") :])
    return None


def _cgroup_dir(root, path):
    """The directory of this cgroup, or the hierarchy root when it is not visible.

    Inside a container /proc/self/cgroup often names the host-side path (/docker/<id>)
    while the container sees its own cgroup mounted as the root, so a missing directory
    means "look at the root".
    """
    candidate = os.path.join(root, path.lstrip("/"))
    return candidate if os.path.isdir(candidate) else root


def _cgroup_field(errors, name, path, parse):
    """Parse one cgroup file: absent is None silently, unreadable or odd is an error."""
    try:
        text = read_optional(path)
        return None if text is None else parse(text)
    except Exception as exc:
        errors.append(f"cgroup {name}: {describe_error(exc)}")
        return None


def probe_cgroup(proc_root, sys_root, host_mem_total, errors):
    """The process's own cgroup budget; every value null when there is no cgroup at all."""
    result = {
        "version": None,
        "memory_current": None,
        "memory_max": None,
        "oom_kill": None,
        "cpu_quota_vcpus": None,
        "memory_pressure_avg10": None,
    }
    text = read_optional(os.path.join(proc_root, "self/cgroup"))
    if text is None:
        return result
    lines = parse_proc_cgroup(text)
    base = os.path.join(sys_root, "fs/cgroup")
    v2_path = None
    for hierarchy, controllers, path in lines:
        if hierarchy == "0" and controllers == [""]:
            v2_path = path
    if v2_path is not None and os.path.exists(os.path.join(base, "cgroup.controllers")):
        d = _cgroup_dir(base, v2_path)
        result["version"] = 2
        result["memory_current"] = _cgroup_field(
            errors, "memory.current", os.path.join(d, "memory.current"), lambda t: int(t.strip())
        )
        result["memory_max"] = _cgroup_field(
            errors, "memory.max", os.path.join(d, "memory.max"), parse_v2_memory_max
        )
        result["oom_kill"] = _cgroup_field(
            errors,
            "memory.events",
            os.path.join(d, "memory.events"),
            lambda t: parse_flat_key(t, "oom_kill"),
        )
        result["cpu_quota_vcpus"] = _cgroup_field(
            errors, "cpu.max", os.path.join(d, "cpu.max"), parse_cpu_max
        )
        result["memory_pressure_avg10"] = _cgroup_field(
            errors, "memory.pressure", os.path.join(d, "memory.pressure"), parse_pressure_avg10
        )
        return result

    # v1, or hybrid (v1 controllers plus an empty v2 "unified" tree): read the v1 files.
    memory_path = cpu_dirs = None
    for _hierarchy, controllers, path in lines:
        if "memory" in controllers:
            memory_path = path
        if "cpu" in controllers:
            # cpu is often co-mounted with cpuacct; the directory name varies by distro.
            names = ["cpu", ",".join(controllers), "cpu,cpuacct", "cpuacct,cpu"]
            roots = [os.path.join(base, n) for n in names if os.path.isdir(os.path.join(base, n))]
            cpu_dirs = [_cgroup_dir(r, path) for r in roots[:1]]
    if memory_path is None and cpu_dirs is None:
        return result
    result["version"] = 1
    if memory_path is not None:
        d = _cgroup_dir(os.path.join(base, "memory"), memory_path)
        result["memory_current"] = _cgroup_field(
            errors,
            "memory.usage_in_bytes",
            os.path.join(d, "memory.usage_in_bytes"),
            lambda t: int(t.strip()),
        )
        result["memory_max"] = _cgroup_field(
            errors,
            "memory.limit_in_bytes",
            os.path.join(d, "memory.limit_in_bytes"),
            lambda t: parse_v1_memory_limit(t, host_mem_total),
        )
        # Kernels before 4.13 have no oom_kill line here: stays None ("not known").
        result["oom_kill"] = _cgroup_field(
            errors,
            "memory.oom_control",
            os.path.join(d, "memory.oom_control"),
            lambda t: parse_flat_key(t, "oom_kill"),
        )
    if cpu_dirs:
        d = cpu_dirs[0]
        period = read_optional(os.path.join(d, "cpu.cfs_period_us"))
        if period is not None:
            result["cpu_quota_vcpus"] = _cgroup_field(
                errors,
                "cpu.cfs_quota_us",
                os.path.join(d, "cpu.cfs_quota_us"),
                lambda t: parse_cfs_quota(t, period),
            )
    return result


# ---------------------------------------------------------------------------------------
# GPU: pure parsers (tests call these on recorded nvidia-smi output)


def smi_value(cell):
    """One nvidia-smi CSV cell, stripped; None for "N/A", "[N/A]", "[Not Supported]" etc."""
    value = cell.strip()
    if not value or value in ("N/A", "Not Supported") or (value[0] == "[" and value[-1] == "]"):
        return None
    return value


def smi_number(cell):
    """A numeric nvidia-smi cell as float (a trailing unit such as "MiB" is tolerated)."""
    value = smi_value(cell)
    if value is None:
        return None
    match = _NUMBER_RE.match(value)
    return float(match.group(1)) if match else None


def _mib_to_bytes(cell):
    value = smi_number(cell)
    return None if value is None else int(round(value * MIB))


def _int_or_none(value):
    return None if value is None else int(value)


def decode_clock_event_reasons(mask):
    """Names of the throttling bits set in a clocks-event-reasons mask (int or "0x..." text).

    Idle and user-set clock limits are not throttling and are left out; N/A decodes to [].
    """
    if mask is None:
        return []
    if not isinstance(mask, int):
        text = smi_value(str(mask))
        if text is None:
            return []
        try:
            mask = int(text, 16) if text.lower().startswith("0x") else int(text)
        except ValueError:
            return []
    return [name for bit, name in CLOCK_EVENT_REASON_BITS if mask & bit]


def parse_smi_gpus(csv_text, problems=None):
    """GPU dicts (agent JSON shape) from ``nvidia-smi --query-gpu=<SMI_GPU_FIELDS>``
    ``--format=csv,noheader,nounits`` output. Rows that do not parse are skipped and, when
    a ``problems`` list is given, named there."""
    gpus = []
    n = len(SMI_GPU_FIELDS)
    for line in csv_text.splitlines():
        if not line.strip():
            continue
        cells = line.split(",")
        if len(cells) > n:
            # A comma inside the product name: give the extra cells back to the name.
            extra = len(cells) - n
            cells = [cells[0], ",".join(cells[1 : 2 + extra])] + cells[2 + extra :]
        index = smi_number(cells[0]) if len(cells) == n else None
        if index is None:
            if problems is not None:
                problems.append(f"nvidia-smi: unparsed GPU row: {line[:200]!r}")
            continue
        (
            _,
            name,
            uuid,
            util,
            mem_util,
            sm,
            sm_max,
            used,
            total,
            power,
            limit,
            temp,
            reasons,
            ecc,
        ) = cells
        gpus.append(
            {
                "index": int(index),
                "name": smi_value(name) or f"GPU {int(index)}",
                "uuid": smi_value(uuid),
                "util_pct": smi_number(util),
                "mem_util_pct": smi_number(mem_util),
                "sm_clock_mhz": smi_number(sm),
                "sm_clock_max_mhz": smi_number(sm_max),
                "mem_used": _mib_to_bytes(used),
                "mem_total": _mib_to_bytes(total),
                "power_w": smi_number(power),
                "power_limit_w": smi_number(limit),
                "temp_c": smi_number(temp),
                "throttle_reasons": decode_clock_event_reasons(reasons),
                "ecc_volatile": _int_or_none(smi_number(ecc)),
            }
        )
    return gpus


def parse_smi_apps(csv_text, uuid_to_index, problems=None):
    """GPU process dicts from ``nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,``
    ``used_memory --format=csv,noheader,nounits``; the GPU is named by index via its uuid."""
    procs = []
    for line in csv_text.splitlines():
        cells = line.split(",")
        if len(cells) < 4:
            continue  # blank, or an old driver's "No running processes found"
        uuid, pid = cells[0].strip(), smi_number(cells[1])
        # A process name may itself hold commas: it is everything between pid and memory.
        name = ",".join(cells[2:-1]).strip()
        if pid is None or uuid not in uuid_to_index:
            if problems is not None:
                problems.append(f"nvidia-smi: unmatched process row: {line[:200]!r}")
            continue
        procs.append(
            {
                "gpu_index": uuid_to_index[uuid],
                "pid": int(pid),
                "name": name or "?",
                "used_mem": _mib_to_bytes(cells[-1]),
                "threads": None,
                "omp_threads": None,
            }
        )
    return procs


def first_line(*texts):
    """The first non-blank line among texts (a failing tool's own explanation)."""
    for text in texts:
        for line in (text or "").splitlines():
            if line.strip():
                return line.strip()
    return None


def parse_xid_line(line):
    """{"xid": N, "text": message} for an NVIDIA Xid kernel line, else None.

    Accepts a raw /dev/kmsg record ("6,1234,5678,-;NVRM: Xid ...") or a dmesg line.
    """
    text = KMSG_PREFIX_RE.sub("", line.rstrip("\n"), count=1)
    match = XID_RE.search(text)
    if not match:
        return None
    return {"xid": int(match.group(2)), "text": text.strip()}


def read_proc_threads(proc_root, pid):
    """(Threads, OMP_NUM_THREADS) of a process from /proc (U40); None where not visible.

    GPU tools report host PIDs, so inside a container the PID may be absent here.
    """
    threads = omp = None
    status = read_optional(os.path.join(proc_root, str(pid), "status"))
    if status is not None:
        for line in status.splitlines():
            if line.startswith("Threads:"):
                threads = int(line.split()[1])
                break
    try:
        with open(os.path.join(proc_root, str(pid), "environ"), "rb") as f:
            environ = f.read()
    except OSError:
        environ = b""  # another user's process: unreadable, so not known
    for item in environ.split(b"\0"):
        if item.startswith(b"OMP_NUM_THREADS="):
            try:
                omp = int(item.split(b"=", 1)[1].strip())
            except ValueError:
                omp = None
    return threads, omp


# ---------------------------------------------------------------------------------------
# GPU: sources


def _nv(nvml, fn, *args):
    """Call one NVML function; NVMLError (not supported, GPU lost, ...) gives None."""
    if fn is None:
        return None
    try:
        return fn(*args)
    except nvml.NVMLError:
        return None


def _text(value):
    """NVML strings are bytes in old pynvml releases and str in new ones."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


class GpuProbe:
    """Chooses the GPU source (NVML, nvidia-smi, none) and samples it at its own cadence."""

    def __init__(self, args):
        self.args = args
        self.nvml = None
        self.nvml_handles = []
        self.nvml_tried = False
        self.nvml_reason = None
        self.smi_path = args.nvidia_smi if args.nvidia_smi else shutil.which("nvidia-smi")
        self.reasons_field = SMI_GPU_FIELDS[SMI_REASONS_INDEX]
        self.smi_seq = None
        self.smi_result = None  # (gpus, reason, errors) of the last query, reused in between

    def _start_nvml(self):
        """Try NVML once; on a missing library or driver fall through to nvidia-smi."""
        self.nvml_tried = True
        try:
            import pynvml  # optional: package nvidia-ml-py
        except Exception:
            return
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            # LibraryNotFound / DriverNotLoaded / NoPermission: nvidia-smi may still work.
            self.nvml_reason = f"NVML: {exc}"
            return
        except Exception as exc:
            self.nvml_reason = f"NVML: {describe_error(exc)}"
            return
        count = _nv(pynvml, pynvml.nvmlDeviceGetCount)
        if count is None:
            self.nvml_reason = "NVML: device count unavailable"
            return
        handles = [_nv(pynvml, pynvml.nvmlDeviceGetHandleByIndex, i) for i in range(count)]
        self.nvml = pynvml
        self.nvml_handles = handles

    def _nvml_gpus(self):
        nv = self.nvml
        reasons_fn = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
            nv, "nvmlDeviceGetCurrentClocksThrottleReasons", None
        )
        gpus = []
        for index, h in enumerate(self.nvml_handles):
            if h is None:
                gpus.append({"index": index, "name": f"GPU {index}", "throttle_reasons": []})
                continue
            util = _nv(nv, nv.nvmlDeviceGetUtilizationRates, h)
            mem = _nv(nv, nv.nvmlDeviceGetMemoryInfo, h)
            power = _nv(nv, nv.nvmlDeviceGetPowerUsage, h)
            limit = _nv(nv, nv.nvmlDeviceGetEnforcedPowerLimit, h)
            gpus.append(
                {
                    "index": index,
                    "name": _text(_nv(nv, nv.nvmlDeviceGetName, h)) or f"GPU {index}",
                    "uuid": _text(_nv(nv, nv.nvmlDeviceGetUUID, h)),
                    "util_pct": None if util is None else float(util.gpu),
                    "mem_util_pct": None if util is None else float(util.memory),
                    "sm_clock_mhz": _nv(nv, nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_SM),
                    "sm_clock_max_mhz": _nv(nv, nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_SM),
                    "mem_used": None if mem is None else int(mem.used),
                    "mem_total": None if mem is None else int(mem.total),
                    "power_w": None if power is None else power / 1000.0,  # NVML gives mW
                    "power_limit_w": None if limit is None else limit / 1000.0,
                    "temp_c": _nv(nv, nv.nvmlDeviceGetTemperature, h, nv.NVML_TEMPERATURE_GPU),
                    "throttle_reasons": decode_clock_event_reasons(_nv(nv, reasons_fn, h)),
                    "ecc_volatile": _nv(
                        nv,
                        nv.nvmlDeviceGetTotalEccErrors,
                        h,
                        nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                        nv.NVML_VOLATILE_ECC,
                    ),
                }
            )
        return gpus

    def _nvml_procs(self):
        nv = self.nvml
        procs = []
        for index, h in enumerate(self.nvml_handles):
            if h is None:
                continue
            for p in _nv(nv, nv.nvmlDeviceGetComputeRunningProcesses, h) or []:
                used = getattr(p, "usedGpuMemory", None)
                name = _text(_nv(nv, nv.nvmlSystemGetProcessName, p.pid))
                if not name:
                    comm = read_optional(os.path.join(self.args.proc_root, str(p.pid), "comm"))
                    name = comm.strip() if comm else "?"
                procs.append(
                    {
                        "gpu_index": index,
                        "pid": int(p.pid),
                        "name": name,
                        "used_mem": None if used is None else int(used),
                        "threads": None,
                        "omp_threads": None,
                    }
                )
        return procs

    def _run_smi(self, query):
        p = subprocess.run(
            [self.smi_path, query, "--format=csv,noheader,nounits"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            universal_newlines=True,
            timeout=SMI_TIMEOUT_S,
        )
        return p.returncode, p.stdout, p.stderr

    def _smi_gpus(self):
        """Return (gpus, reason-if-none, errors) from one nvidia-smi --query-gpu run."""
        errors = []

        def query():
            """Run --query-gpu with the reasons field name this driver accepts."""
            fields = list(SMI_GPU_FIELDS)
            fields[SMI_REASONS_INDEX] = self.reasons_field
            return self._run_smi("--query-gpu=" + ",".join(fields))

        try:
            rc, out, err = query()
            if (
                rc != 0
                and "is not a valid field" in out + err
                and self.reasons_field != SMI_OLD_REASONS_FIELD
            ):
                # Drivers before the clocks_event_reasons rename: retry once, remember it.
                self.reasons_field = SMI_OLD_REASONS_FIELD
                rc, out, err = query()
        except subprocess.TimeoutExpired:
            return [], f"nvidia-smi timed out after {SMI_TIMEOUT_S:.0f} s", errors
        except OSError as exc:
            return [], f"nvidia-smi could not run: {describe_error(exc)}", errors
        if rc != 0:
            # On failure stdout is usually the explanation, not rows: parse without noise.
            gpus = parse_smi_gpus(out)
            why = first_line(err, out) or f"exit status {rc}"
            if gpus:  # some rows came back (a lost GPU elsewhere): keep them, say why
                errors.append(f"nvidia-smi exit status {rc}: {why}")
            elif "No devices were found" in out + err:
                return [], NO_DEVICE, errors
            else:
                return [], why, errors
        else:
            gpus = parse_smi_gpus(out, errors)
        if not gpus:
            return [], NO_DEVICE, errors
        return gpus, None, errors

    def _smi_procs(self, gpus, errors):
        uuid_to_index = {g["uuid"]: g["index"] for g in gpus if g.get("uuid")}
        try:
            rc, out, err = self._run_smi("--query-compute-apps=" + ",".join(SMI_APP_FIELDS))
        except (subprocess.TimeoutExpired, OSError) as exc:
            errors.append(f"nvidia-smi processes: {describe_error(exc)}")
            return None
        if rc != 0:
            errors.append(f"nvidia-smi processes: {first_line(err, out) or rc}")
            return None
        return parse_smi_apps(out, uuid_to_index, errors)

    def sample(self, seq, poll_procs, errors):
        """Return (source, unavailable reason, gpus, processes or None if not polled)."""
        if self.args.no_gpu:
            return "none", "GPU probing disabled (--no-gpu)", [], None
        if not self.nvml_tried:
            self._start_nvml()
        if self.nvml is not None:
            if not self.nvml_handles:
                return "none", NO_DEVICE, [], None
            procs = self._nvml_procs() if poll_procs else None
            return "nvml", None, self._nvml_gpus(), procs
        if not self.smi_path or not os.path.exists(self.smi_path):
            reason = SMI_NOT_FOUND
            if self.nvml_reason:
                reason += "; " + self.nvml_reason
            return "none", reason, [], None
        # Spawning nvidia-smi costs a process per poll: query every --smi-every samples and
        # reuse the rows in between (processes have their own, slower cadence).
        if self.smi_result is None or seq - self.smi_seq >= self.args.smi_every:
            self.smi_result = self._smi_gpus()
            self.smi_seq = seq
            errors.extend(self.smi_result[2])
        gpus, reason, _ = self.smi_result
        if not gpus:
            return "none", reason, [], None
        procs = self._smi_procs(gpus, errors) if poll_procs else None
        return "nvidia-smi", None, gpus, procs


# ---------------------------------------------------------------------------------------
# Xid lines from the kernel ring buffer (U22)


class KmsgReader:
    """Reads new records from <dev>/kmsg without blocking; silent where it is not readable.

    The first read starts at the oldest record still in the ring buffer, so Xids logged
    since boot (before the agent started) are reported once, on the first sample.
    """

    def __init__(self, dev_root):
        self.path = os.path.join(dev_root, "kmsg")
        self.fd = None
        self.disabled = False
        self.partial = b""

    def _open(self):
        try:
            self.fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            # Containers usually cannot read the kernel log: not an error, just no Xids.
            self.disabled = True

    def read_new(self):
        """Return the Xid events among records logged since the last call."""
        if self.disabled:
            return []
        if self.fd is None:
            self._open()
            if self.disabled:
                return []
        chunks = []
        for _ in range(KMSG_MAX_READS):
            try:
                chunk = os.read(self.fd, 8192)  # one record per read on /dev/kmsg
            except BlockingIOError:
                break  # EAGAIN: nothing more right now
            except OSError as exc:
                if exc.errno == errno.EPIPE:
                    continue  # records were overwritten before we read them; go on
                if exc.errno == errno.EAGAIN:
                    break
                self.disabled = True
                break
            if not chunk:
                break  # a regular file (tests, or a copied log) is at its end
            chunks.append(chunk)
        data = self.partial + b"".join(chunks)
        lines = data.split(b"\n")
        self.partial = lines.pop()  # a record cut mid-line finishes next time
        events = []
        for raw in lines:
            event = parse_xid_line(raw.decode("utf-8", "replace"))
            if event is not None:
                events.append(event)
        return events


# ---------------------------------------------------------------------------------------
# Queue liveness (U43): last log write and newest artifact


class ArtifactScanner:
    """Newest file mtime under a directory, rescanned at most every ``every`` seconds
    (30 by default), bounded in size."""

    def __init__(self, root, every=ARTIFACT_SCAN_EVERY_S):
        self.root = root
        self.every = every
        self.last_scan = None
        self.value = None

    def newest_mtime(self):
        """Return the cached newest mtime, rescanning when the cache is old."""
        now = time.monotonic()
        if self.last_scan is not None and now - self.last_scan < self.every:
            return self.value
        self.last_scan = now
        self.value = self._scan()
        return self.value

    def _scan(self):
        if not os.path.isdir(self.root):
            return None
        newest = None
        seen = 0
        stack = [self.root]
        while stack and seen < ARTIFACT_SCAN_LIMIT:
            top = stack.pop()
            try:
                entries = os.scandir(top)
            except OSError:
                continue
            with entries:
                for entry in entries:
                    seen += 1
                    if seen > ARTIFACT_SCAN_LIMIT:
                        break  # a per-sample-file eval dump (U7) must not stall the agent
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                        elif entry.is_file(follow_symlinks=False):
                            mtime = entry.stat(follow_symlinks=False).st_mtime
                            if newest is None or mtime > newest:
                                newest = mtime
                    except OSError:
                        continue  # deleted while scanning
        return newest


# ---------------------------------------------------------------------------------------
# The queue's running cell (U43): its log and output directory, found from the records
# the queue runner leaves in ~/.rgt/queue (run_queue.sh, run_one.sh):
#
#   runner.state        launch <ts> <boot_id> <detach> <start> <script> <pid> / done <ts> ...
#   cells/NAME.state    start <ts> <boot_id> <pid> / end <ts> <exit code>
#   cells/NAME.log      the cell's output
#
# and the cell's output directory is <durable_dir>/NAME (the run template's {out}).

QUEUE_RESCAN_EVERY_S = 30.0
QUEUE_SCAN_LIMIT = 5000  # state files looked at per scan: a huge queue must not stall us


def complete_lines(text):
    """The lines of a record file that are whole: a last line without its newline is
    still being appended and is left for the next look."""
    lines = text.split("\n")
    return [ln for ln in lines[:-1] if ln.strip()]


def open_attempt(state_text, boot_id):
    """(start time, pid) of a cell's unfinished attempt of this boot; None otherwise."""
    lines = complete_lines(state_text)
    if not lines:
        return None
    words = lines[-1].split()
    if len(words) < 4 or words[0] != "start" or words[2] != boot_id:
        return None  # ended, or started in an earlier boot (it died with it, GEN6)
    try:
        return float(words[1]), int(words[3])
    except ValueError:
        return None


def last_done_at(runner_text):
    """When the last launch wrote its done record (box clock); None while it runs or
    when the queue was never launched."""
    done = None
    for line in complete_lines(runner_text):
        words = line.split()
        if words[0] == "launch":
            done = None
        elif words[0] == "done" and len(words) >= 2:
            try:
                done = float(words[1])
            except ValueError:
                done = None
    return done


def pid_alive(proc_root, pid):
    """Running and not a zombie (a reaped-never orphan still answers kill 0)."""
    if pid <= 0:
        return False
    if not os.path.isdir(proc_root):  # no procfs: the signal check is all there is
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    text = read_optional(os.path.join(proc_root, str(pid), "stat"))
    if text is None:
        return False
    fields = text.rsplit(")", 1)[-1].split()
    return bool(fields) and fields[0] not in ("Z", "X")


def _signature(path):
    """(mtime, size) of a file or directory, None when it is absent: what changed."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime, st.st_size)


class QueueWatch:
    """Follows the box's running queue cell from sample to sample.

    The cell is looked up again only when it ended or the records changed (a new state
    file, a new launch) and at most every 30 s otherwise, so a long-lived agent follows
    the queue from cell to cell without reading every record every sample.
    """

    def __init__(self, queue_dir, out_root, proc_root, scan_every=ARTIFACT_SCAN_EVERY_S):
        self.queue_dir = queue_dir
        self.out_root = out_root
        self.proc_root = proc_root
        self.scan_every = scan_every
        self.cell = None  # the running cell's name
        self.scanner = None
        self.done_at = None
        self._runner_sig = None
        self._cells_sig = None
        self._last_scan = None

    def poll(self, boot_id):
        """(running cell name or None, its log path, its ArtifactScanner, done time)."""
        runner = os.path.join(self.queue_dir, "runner.state")
        sig = _signature(runner)
        launched = sig != self._runner_sig
        if launched:
            self._runner_sig = sig
            self.done_at = last_done_at(read_optional(runner) or "")
        ended = self.cell is not None and self._attempt(self.cell, boot_id) is None
        if ended:
            self.cell = self.scanner = None  # look for the next cell now
        if self.cell is None:
            cells = os.path.join(self.queue_dir, "cells")
            csig = _signature(cells)
            now = time.monotonic()
            if (
                launched
                or ended
                or csig != self._cells_sig
                or self._last_scan is None
                or now - self._last_scan >= QUEUE_RESCAN_EVERY_S
            ):
                self._cells_sig, self._last_scan = csig, now
                self.cell = self._find(cells, boot_id)
                if self.cell is not None and self.out_root:
                    out = os.path.join(self.out_root, self.cell)
                    self.scanner = ArtifactScanner(out, self.scan_every)
        if self.cell is None:
            return None, None, None, self.done_at
        log = os.path.join(self.queue_dir, "cells", self.cell + ".log")
        return self.cell, log, self.scanner, self.done_at

    def _attempt(self, name, boot_id):
        path = os.path.join(self.queue_dir, "cells", name + ".state")
        attempt = open_attempt(read_optional(path) or "", boot_id)
        if attempt is None or not pid_alive(self.proc_root, attempt[1]):
            return None
        return attempt

    def _find(self, cells, boot_id):
        """The name of the running cell that started last; None when none runs."""
        try:
            entries = os.listdir(cells)
        except OSError:
            return None
        states = sorted(e for e in entries if e.endswith(".state"))
        best = None
        for entry in states[:QUEUE_SCAN_LIMIT]:
            name = entry[: -len(".state")]
            attempt = self._attempt(name, boot_id)
            if attempt is not None and (best is None or attempt[0] > best[0]):
                best = (attempt[0], name)
        return None if best is None else best[1]


def queue_boot_id(sample_boot_id):
    """The boot id the queue's records carry: the runner reads $RGT_BOOT_ID_FILE when set
    (the demo and tests point it at a file they can change), else the kernel's."""
    path = os.environ.get("RGT_BOOT_ID_FILE")
    if path:
        text = read_optional(path)
        if text is not None and text.strip():
            return text.strip()
    return sample_boot_id


# ---------------------------------------------------------------------------------------
# The sampler


class Agent:
    """Holds the state kept between samples (GPU source, kmsg position, scan cache)."""

    def __init__(self, args):
        self.args = args
        self.gpu = GpuProbe(args)
        self.kmsg = KmsgReader(args.dev_root)
        every = args.scan_every
        self.artifacts = ArtifactScanner(args.artifacts, every) if args.artifacts else None
        self.queue = None
        if args.queue_dir:
            self.queue = QueueWatch(args.queue_dir, args.out_root, args.proc_root, every)

    def sample(self, seq):
        """Build one sample (a dict with every protocol key) for sequence number seq."""
        a = self.args
        errors = []
        mem_total, mem_available = safe(
            errors,
            "meminfo",
            lambda: parse_meminfo(read_text(os.path.join(a.proc_root, "meminfo"))),
            (None, None),
        )
        sample = {
            "v": PROTOCOL_VERSION,
            "t": time.time(),
            "seq": seq,
            "hostname": safe(errors, "hostname", socket.gethostname),
            "boot_id": safe(errors, "boot_id", lambda: read_boot_id(a.proc_root)),
            "uptime_s": safe(errors, "uptime", lambda: read_uptime(a.proc_root)),
            "loadavg": safe(errors, "loadavg", lambda: read_loadavg(a.proc_root)),
            "host_cpus": os.cpu_count(),
            "host_mem_total": mem_total,
            "host_mem_available": mem_available,
            "disks": safe(errors, "disks", lambda: probe_disks(a.mount, a.proc_root, errors), []),
            "cgroup": None,
            "gpu_source": "none",
            "gpu_unavailable_reason": None,
            "gpus": [],
            "gpu_processes": None,
            # The samples between two process lists carry the last one (the domain's
            # carry_processes), up to the next listing due: the cadence says when.
            "proc_every": a.proc_every,
            "xids": [],
            "log_mtime": None,
            "artifact_mtime": None,
            "cell": None,
            "queue_done_at": None,
            "box_id": None,
            "errors": errors,
        }
        sample["cgroup"] = safe(
            errors,
            "cgroup",
            lambda: probe_cgroup(a.proc_root, a.sys_root, mem_total, errors),
        )
        poll_procs = seq % a.proc_every == 0
        gpu = safe(errors, "gpu", lambda: self.gpu.sample(seq, poll_procs, errors))
        if gpu is None:
            gpu = ("none", "GPU probe failed (see errors)", [], None)
        source, reason, gpus, procs = gpu
        if procs is not None:
            for p in procs:
                threads, omp = safe(
                    errors,
                    "process {}".format(p["pid"]),
                    lambda p=p: read_proc_threads(a.proc_root, p["pid"]),
                    (None, None),
                )
                p["threads"], p["omp_threads"] = threads, omp
        sample["gpu_source"] = source
        sample["gpu_unavailable_reason"] = reason
        sample["gpus"] = gpus
        sample["gpu_processes"] = procs
        sample["xids"] = safe(errors, "kmsg", self.kmsg.read_new, [])
        log, artifacts = a.log, self.artifacts
        if self.queue is not None:
            boot = queue_boot_id(sample["boot_id"])
            cell, cell_log, scanner, done_at = safe(
                errors, "queue", lambda: self.queue.poll(boot), (None, None, None, None)
            )
            sample["cell"], sample["queue_done_at"] = cell, done_at
            # --log / --artifacts, when given, name the paths outright.
            log = log or cell_log
            artifacts = artifacts or scanner
        if log:
            sample["log_mtime"] = safe(errors, "log", lambda: _mtime_or_none(log))
        if artifacts is not None:
            sample["artifact_mtime"] = safe(errors, "artifacts", artifacts.newest_mtime)
        if not a.no_box_id:
            # Read every sample (one small file): a box re-created under the same name
            # must never pass for the old one, however long this agent has been running.
            sample["box_id"], why = read_box_id(a.box_id_file)
            if why:
                errors.append("box_id: " + why)
        return sample


def read_box_id(path=None):
    """(box id, None) from ``~/.rgt/box-id``, created once (random, 0600) when missing;
    (None, why) when it can be neither read nor made. Identical in probe.py and
    manifest.py (a test holds them equal): whichever runs first on a box writes the id.
    """
    import binascii
    import errno

    path = os.path.expanduser(path or "~/.rgt/box-id")

    def read():
        with open(path, "rb") as f:
            return f.read(100).decode("utf-8", "replace").strip()

    try:
        try:
            return read(), None
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                raise
        os.makedirs(os.path.dirname(path), 0o700, exist_ok=True)
        # Written whole under a temporary name, then linked into place: link() fails when
        # the name exists, so of two agents starting at once only one id ever lands, and
        # no reader sees half of one.
        tmp = f"{path}.{os.getpid()}.{binascii.hexlify(os.urandom(4)).decode()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, (binascii.hexlify(os.urandom(16)).decode() + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
        except OSError as exc:
            if exc.errno != errno.EEXIST and not os.path.exists(path):
                os.rename(tmp, path)  # a file system without hard links
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return read(), None
    except OSError as exc:
        return None, f"cannot read or create {path}: {exc.strerror or exc}"


def _mtime_or_none(path):
    try:
        return os.stat(path).st_mtime
    except FileNotFoundError:
        return None  # the queue has not written its log yet


# ---------------------------------------------------------------------------------------
# Entry point


class _Stop(BaseException):
    """Raised from the SIGTERM/SIGHUP handler to leave the loop quietly.

    A BaseException, so the per-probe ``except Exception`` guards cannot swallow it.
    """


def _on_signal(signum, frame):
    raise _Stop()


def parse_args(argv=None):
    """The agent's command line (see the module docstring)."""
    p = argparse.ArgumentParser(prog="probe.py", description="rgt-tui telemetry agent")
    p.add_argument("--interval", type=float, default=2.0, help="seconds between samples")
    p.add_argument("--count", type=int, default=0, help="stop after N samples (0: forever)")
    p.add_argument("--mount", action="append", default=None, help="watched path (repeatable)")
    p.add_argument("--sys-root", default="/sys")
    p.add_argument("--proc-root", default="/proc")
    p.add_argument("--dev-root", default="/dev")
    p.add_argument("--no-gpu", action="store_true", help="skip GPU probing")
    p.add_argument("--nvidia-smi", default=None, help="path of nvidia-smi (default: PATH)")
    p.add_argument("--proc-every", type=int, default=5, help="GPU processes every N samples")
    p.add_argument("--smi-every", type=int, default=3, help="nvidia-smi query every N samples")
    p.add_argument("--log", default=None, help="queue log whose mtime is reported")
    p.add_argument("--artifacts", default=None, help="directory whose newest mtime is reported")
    p.add_argument(
        "--queue-dir",
        default="~/.rgt/queue",
        help="the queue runner's records: its running cell's log is watched ('' for none)",
    )
    p.add_argument(
        "--out-root", default=None, help="where cells write (durable_dir): <out-root>/<cell>"
    )
    p.add_argument(
        "--scan-every",
        type=float,
        default=ARTIFACT_SCAN_EVERY_S,
        help="seconds between walks of the output directory for its newest file",
    )
    p.add_argument(
        "--box-id-file", default=None, help="where this box keeps its id (default ~/.rgt/box-id)"
    )
    p.add_argument("--no-box-id", action="store_true", help="do not report (or create) the id")
    args = p.parse_args(argv)
    # Fleet files say "~" for the box's home (the default workdir); only the box knows it.
    args.mount = [os.path.expanduser(m) for m in (args.mount or ["/"])]
    args.log = os.path.expanduser(args.log) if args.log else None
    args.artifacts = os.path.expanduser(args.artifacts) if args.artifacts else None
    args.queue_dir = os.path.expanduser(args.queue_dir) if args.queue_dir else None
    args.out_root = os.path.expanduser(args.out_root) if args.out_root else None
    args.interval = max(0.0, args.interval)
    args.proc_every = max(1, args.proc_every)
    args.smi_every = max(1, args.smi_every)
    return args


def _silence_stdout():
    """Point fd 1 at /dev/null so the interpreter's final flush cannot raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def main(argv=None):
    """Print samples until --count is reached, stdout closes, or SIGTERM/SIGHUP arrives."""
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _on_signal)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, _on_signal)  # the SSH channel hung up
    agent = Agent(args)
    seq = 0
    deadline = time.monotonic()
    try:
        while True:
            line = json.dumps(agent.sample(seq), separators=(",", ":"))
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
            seq += 1
            if args.count and seq >= args.count:
                break
            # Keep a steady cadence; after an overrun start counting afresh (no burst).
            deadline += args.interval
            delay = deadline - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                deadline = time.monotonic()
    except BrokenPipeError:
        _silence_stdout()
    except (_Stop, KeyboardInterrupt):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
