"""CPU seconds of one measured run, both sides (issue 44): the client's whole process tree
and the box's (the test sshd's sessions), for ``scripts/bench_pull.py``.

- **client**: ``getrusage(RUSAGE_CHILDREN)`` of the bench before and after the command.
  It counts every descendant that was waited for: rsync and the ``ssh`` it runs,
  ``rgt-tui`` and whatever it ran (``zstd -d``). The bench's long-lived children (sshd,
  the relay) are not waited for during a run, so they never count here.
- **box**: the test sshd's listener waits for each connection's sshd, which waits for
  what it ran (sftp-server, tar, the scan's python3), so the listener's ``cutime +
  cstime`` (``/proc/PID/stat``) grows by the whole session tree's CPU once the
  connection is gone. The bench waits for the listener to have no children left.
- **machine**: every CPU's busy time in ``/proc/stat`` over the run (user, nice, system,
  irq, softirq), whatever ran it: both sides, the relay, the kernel's own threads (the
  flusher threads that write dirty pages back for a tool that does not sync, and for
  rgt-tui's syncfs) and anything else on the machine, so it is only as clean as the
  machine is quiet. It shows whether a saving on one side was work moved elsewhere.
- **relay** (far links): its own ``cpu_s``, reported by ``far_link.py``; it stands for
  the network, on neither side.

Every figure comes with the load average at the end of the run: on a shared machine a
run's CPU seconds are steadier than its wall seconds, but not immune (cache misses and
frequency change under load).
"""

from __future__ import annotations

import dataclasses
import os
import resource
import time
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


@dataclasses.dataclass(frozen=True)
class Cpu:
    """CPU seconds of one run: the client's tree and the box's."""

    client: float
    box: float
    machine: float = 0.0

    @property
    def both(self) -> float:
        return self.client + self.box


def children_cpu() -> float:
    """User + system seconds of every waited-for descendant of this process so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def machine_cpu() -> float:
    """Busy seconds of every CPU of this machine so far (``/proc/stat``'s first line)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq = (int(f) for f in fields[:7])
    return (user + nice + system + irq + softirq) / TICK


def reaped_cpu(pid: int) -> float:
    """``cutime + cstime`` of ``pid``: the CPU of the children it has waited for."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / TICK  # fields 16 and 17 of proc(5)


def has_children(pid: int) -> bool:
    """Whether ``pid`` still has a child (an sshd session not yet over)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                return True
    return False


def box_settled(pid: int, timeout: float = 15.0) -> float:
    """The box's reaped CPU once every session is over (or after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while has_children(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return reaped_cpu(pid)


def load() -> str:
    """The 1, 5 and 15 minute load averages, as ``load 8.1/7.9/7.5``."""
    one, five, fifteen = os.getloadavg()
    return f"load {one:.1f}/{five:.1f}/{fifteen:.1f}"


def per_gb(seconds: float, nbytes: int) -> float:
    """CPU seconds per GB (10^9 bytes) moved."""
    return seconds / (nbytes / 1e9)


def cpu_lines(cpus: dict[str, list[Cpu]], nbytes: int, indent: str = "") -> list[str]:
    """One line per tool: median CPU seconds per GB of the client's tree, the box's and
    both, and (beside rsync's) how many times rsync's that is (issue 44: ≤ 1.25×)."""
    import statistics

    def med(values: list[float]) -> float:
        return statistics.median(values) if values else 0.0

    rows = {
        tool: (
            per_gb(med([c.client for c in runs]), nbytes),
            per_gb(med([c.box for c in runs]), nbytes),
            per_gb(med([c.both for c in runs]), nbytes),
            per_gb(med([c.machine for c in runs]), nbytes),
        )
        for tool, runs in cpu_runs(cpus).items()
    }
    base = rows.get("rsync -a")
    lines = []
    for tool, (client, box, both, machine) in rows.items():
        versus = ""
        if base and tool != "rsync -a" and base[0] > 0 and base[2] > 0:
            versus = (
                f"  = {client / base[0]:.2f}× rsync's client, {both / base[2]:.2f}× its both"
                " (target ≤ 1.25×)"
            )
        runs = ", ".join(f"{c.client:.1f}+{c.box:.1f}" for c in cpus[tool])
        lines.append(
            f"{indent}CPU/GB {tool:<13} client {client:5.2f} s  box {box:5.2f} s  both "
            f"{both:5.2f} s  machine {machine:5.2f} s{versus}  (runs, client+box s: {runs})"
        )
    return lines


def cpu_runs(cpus: dict[str, list[Cpu]]) -> dict[str, list[Cpu]]:
    """The tools that have CPU figures (a tool run without a box pid has box 0)."""
    return {tool: runs for tool, runs in cpus.items() if runs}
