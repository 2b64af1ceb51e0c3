"""Host-wide figures (U41: the consumer labels these as the host's, not the container's)."""

import os

from .common import read_text


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
        if "MemTotal" in values and "MemAvailable" in values:
            break  # the first three lines; the other fifty are not read every sample
    total = values.get("MemTotal")
    available = values.get("MemAvailable")
    if available is None and "MemFree" in values:
        # Kernels before 3.14 lack MemAvailable; free + reclaimable caches is the old estimate.
        available = values["MemFree"] + values.get("Buffers", 0) + values.get("Cached", 0)
    return total, available
