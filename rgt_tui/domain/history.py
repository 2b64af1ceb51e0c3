"""A bounded history of one host's figures, for sparklines and plots.

Pure data (no Textual): the App keeps one per host and widgets read from it. A
connection change re-sends the last snapshot, so a sample is recorded only once.
"""

from __future__ import annotations

from collections import deque

from rgt_tui.domain.snapshot import HostSnapshot

HISTORY_LEN = 120
# A sample whose GPU utilisation is unknown (nvidia-smi's N/A, a reading out of range):
# a gap in the series, not the last bar again (a chart that kept its old 100 % bars read
# as live while the GPU had stopped answering: a user's hour). NaN, which no comparison
# passes: an idle run (``vram_text.idle_for``) stops at it.
GAP = float("nan")


class HostHistory:
    """The last ``maxlen`` samples' GPU util, VRAM and cgroup memory, as fractions 0–1."""

    def __init__(self, maxlen: int = HISTORY_LEN) -> None:
        self.maxlen = maxlen
        self.times: deque[float] = deque(maxlen=maxlen)
        self.gpu_util: deque[float] = deque(maxlen=maxlen)  # mean over the box's GPUs
        self.vram: deque[float] = deque(maxlen=maxlen)  # used / total over all GPUs
        self.memory: deque[float] = deque(maxlen=maxlen)  # cgroup memory / its limit
        self.per_gpu_util: dict[int, deque[float]] = {}
        self._last: tuple[float, int] | None = None

    def __len__(self) -> int:
        return len(self.times)

    def add(self, snap: HostSnapshot | None) -> bool:
        """Record one sample; False when it is None or the one recorded last."""
        if snap is None or self._last == (snap.t, snap.seq):
            return False
        self._last = (snap.t, snap.seq)
        self.times.append(snap.t)
        utils = [g.util_pct for g in snap.gpus if g.util_pct is not None]
        if utils:
            self.gpu_util.append(sum(utils) / len(utils) / 100)
        elif snap.gpus and self.gpu_util:  # known before: a gap (a GPU never read: no chart)
            self.gpu_util.append(GAP)
        used = [g.mem_used for g in snap.gpus if g.mem_used is not None and g.mem_total]
        total = [g.mem_total for g in snap.gpus if g.mem_used is not None and g.mem_total]
        if used:
            self.vram.append(sum(used) / sum(total))
        mem = snap.cgroup.memory_fraction if snap.cgroup else None
        if mem is None and snap.host_mem_total and snap.host_mem_available is not None:
            # No cgroup limit to compare with: the host's own memory is the budget.
            mem = 1 - snap.host_mem_available / snap.host_mem_total
        if mem is not None:
            self.memory.append(mem)
        for g in snap.gpus:
            if g.util_pct is not None:
                series = self.per_gpu_util.setdefault(g.index, deque(maxlen=self.maxlen))
                series.append(g.util_pct / 100)
            elif g.index in self.per_gpu_util:
                self.per_gpu_util[g.index].append(GAP)
        return True
