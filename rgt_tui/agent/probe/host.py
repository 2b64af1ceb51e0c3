"""Host-wide figures (U41: the consumer labels these as the host's, not the container's)."""

import os

from .common import read_text


def read_boot_id(proc_root):
    """The kernel's boot id: a new one means the box rebooted and every job died (GEN6)."""
    return read_text(os.path.join(proc_root, "sys/kernel/random/boot_id")).strip()


def read_container_start(proc_root):
    """When this box's PID 1 started (unix seconds, whole): the container's own start in a
    container (its PID namespace's init), the boot on a bare box. A container restarted
    on the same host keeps the host's boot id but gets a new PID 1, so this is what names
    a restarted container (issue 40: a preempted spot box that came back). Constant for
    the agent's life (a restart ends the agent too): read once. $RGT_CONTAINER_START_FILE,
    when set, is read instead (the demo and tests stand a restart in by rewriting it)."""
    path = os.environ.get("RGT_CONTAINER_START_FILE")
    if path:
        return float(read_text(path).strip())
    try:
        stat_text = read_text(os.path.join(proc_root, "stat"))
        stat = read_text(os.path.join(proc_root, "1/stat"))
    except (FileNotFoundError, PermissionError):
        # PID 1 hidden (hidepid=2) or a /proc without it: the start is unknown, which is
        # no problem of the box's (a restart is then named by its boot id alone).
        return None
    btime = None
    for line in stat_text.splitlines():
        if line.startswith("btime "):
            btime = int(line.split()[1])
            break
    # "1 (init) S 0 ...": the command may hold spaces and parentheses; fields after the
    # last ')' start at field 3, so starttime (field 22) is the 20th of them.
    starttime = int(stat[stat.rindex(")") + 2 :].split()[19])
    if btime is None:
        raise ValueError("no btime line in /proc/stat")
    return float(btime + starttime // os.sysconf("SC_CLK_TCK"))


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
