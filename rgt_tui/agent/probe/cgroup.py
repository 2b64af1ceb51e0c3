"""cgroup (U9, U41: the container's own budget, not the host's), v1 and v2.

The file parsers are pure: tests call them on recorded cgroup files.
"""

import os
import time

from .common import UNLIMITED, describe_error, read_optional

CGROUP_RELOCATE_S = 30.0  # where the cgroup files are is looked up again this often
V1_UNLIMITED_FLOOR = 2**62  # v1 writes "no limit" as PAGE_COUNTER_MAX pages, ~2^63 bytes


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


def parse_cpuacct_usage(text):
    """cgroup v1 cpuacct.usage (nanoseconds of CPU time) in microseconds, as v2 reports."""
    return int(text.strip()) // 1000


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


def _empty():
    return {
        "version": None,
        "memory_current": None,
        "memory_max": None,
        "oom_kill": None,
        "cpu_quota_vcpus": None,
        # Total CPU time the cgroup used, microseconds: its rise over a sample's interval
        # against the quota says the CPU budget is saturated (U24/U38).
        "cpu_usage_usec": None,
        "memory_pressure_avg10": None,
    }


def locate_cgroup(proc_root, sys_root):
    """Where this process's cgroup files are: ("v2", dir), ("v1", memory dir, cpu dir,
    cpuacct dir) with None for a controller not there, or None for no cgroup at all."""
    text = read_optional(os.path.join(proc_root, "self/cgroup"))
    if text is None:
        return None
    lines = parse_proc_cgroup(text)
    base = os.path.join(sys_root, "fs/cgroup")
    v2_path = None
    for hierarchy, controllers, path in lines:
        if hierarchy == "0" and controllers == [""]:
            v2_path = path
    if v2_path is not None and os.path.exists(os.path.join(base, "cgroup.controllers")):
        return ("v2", _cgroup_dir(base, v2_path))

    # v1, or hybrid (v1 controllers plus an empty v2 "unified" tree): read the v1 files.
    memory_path = cpu_dirs = acct_dir = None
    for _hierarchy, controllers, path in lines:
        if "memory" in controllers:
            memory_path = path
        if "cpuacct" in controllers:
            name = ",".join(controllers)
            roots = [os.path.join(base, n) for n in (name, "cpuacct", "cpu,cpuacct", "cpuacct,cpu")]
            roots = [r for r in roots if os.path.isdir(r)]
            acct_dir = _cgroup_dir(roots[0], path) if roots else None
        if "cpu" in controllers:
            # cpu is often co-mounted with cpuacct; the directory name varies by distro.
            names = ["cpu", ",".join(controllers), "cpu,cpuacct", "cpuacct,cpu"]
            roots = [os.path.join(base, n) for n in names if os.path.isdir(os.path.join(base, n))]
            cpu_dirs = [_cgroup_dir(r, path) for r in roots[:1]]
    if memory_path is None and cpu_dirs is None and acct_dir is None:
        return None
    memory_dir = None
    if memory_path is not None:
        memory_dir = _cgroup_dir(os.path.join(base, "memory"), memory_path)
    return ("v1", memory_dir, cpu_dirs[0] if cpu_dirs else None, acct_dir)


def read_cgroup(where, host_mem_total, errors):
    """The figures in the cgroup files ``locate_cgroup`` found (every value null for
    None)."""
    result = _empty()
    if where is None:
        return result
    if where[0] == "v2":
        d = where[1]
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
        result["cpu_usage_usec"] = _cgroup_field(
            errors,
            "cpu.stat",
            os.path.join(d, "cpu.stat"),
            lambda t: parse_flat_key(t, "usage_usec"),
        )
        result["memory_pressure_avg10"] = _cgroup_field(
            errors, "memory.pressure", os.path.join(d, "memory.pressure"), parse_pressure_avg10
        )
        return result
    _, memory_dir, cpu_dir, acct_dir = where
    result["version"] = 1
    if memory_dir is not None:
        d = memory_dir
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
    if cpu_dir is not None:
        period = read_optional(os.path.join(cpu_dir, "cpu.cfs_period_us"))
        if period is not None:
            result["cpu_quota_vcpus"] = _cgroup_field(
                errors,
                "cpu.cfs_quota_us",
                os.path.join(cpu_dir, "cpu.cfs_quota_us"),
                lambda t: parse_cfs_quota(t, period),
            )
    if acct_dir is not None:
        result["cpu_usage_usec"] = _cgroup_field(
            errors,
            "cpuacct.usage",
            os.path.join(acct_dir, "cpuacct.usage"),
            parse_cpuacct_usage,
        )
    return result


class CgroupProbe:
    """The process's own cgroup budget (every value null when there is no cgroup at all),
    for a long-lived agent: the counters read every sample, where they
    live (``/proc/self/cgroup`` and a walk of the hierarchy's directories) found again
    only every ``relocate_s`` seconds: a process moves to another cgroup rarely, if
    ever, and a move shows within that time."""

    def __init__(self, proc_root, sys_root, relocate_s=CGROUP_RELOCATE_S, clock=time.monotonic):
        self.proc_root, self.sys_root = proc_root, sys_root
        self.relocate_s = relocate_s
        self.clock = clock
        self.found_at = None
        self.where = None

    def sample(self, host_mem_total, errors):
        """The cgroup figures of this sample."""
        now = self.clock()
        if self.found_at is None or now - self.found_at >= self.relocate_s:
            self.where = locate_cgroup(self.proc_root, self.sys_root)
            self.found_at = now
        return read_cgroup(self.where, host_mem_total, errors)
