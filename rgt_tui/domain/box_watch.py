"""What two health rules must remember between samples of one boot (pure).

- A dead GPU where the kernel log cannot be read (U22 in containers): no Xid line ever
  arrives, so the signs are what nvidia-smi/NVML say — a GPU lost ("GPU is lost", "Unable
  to determine the device handle ...", "ERR!"), a volatile uncorrected ECC count rising
  between two samples of the same boot, a GPU gone from the listing that the box listed
  earlier in this boot. Each is kept once seen (the card does not come back until a
  reboot), and a new boot starts over: volatile counters and the listing restart there.
- A run starving for data (U24/U38): its log advances while every GPU sits below
  ``data_bound_util_pct`` and the cgroup uses its CPU quota (the rise of its CPU-time
  counter over the sample's interval, against ``cpu.max``/``cfs_quota``): the input
  pipeline, not the GPU, sets the pace. ``starving_since`` says since when.

``health.HealthState`` holds one ``BoxWatch`` and ``health.evaluate`` turns it into the
``gpu.xid`` and ``gpu.data_bound`` alerts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from rgt_tui.domain.snapshot import HostSnapshot

MAX_LOST = 8  # lost-GPU lines kept per boot
NO_DEVICE = "no NVIDIA device"  # the agent's reason when the driver lists no GPU at all


@dataclass(frozen=True)
class DataBoundLimits:
    """The thresholds of the data-bound rule ([fleet.thresholds])."""

    util_pct: float = 40.0
    cpu_pct: float = 90.0
    log_window_s: float = 600.0  # a log written this recently is advancing


@dataclass(frozen=True)
class BoxWatch:
    """GPU-loss evidence of this boot, and the CPU/GPU figures of the data-bound rule."""

    boot_id: str | None = None
    gpus_max: int = 0  # the most GPUs the box listed in this boot
    vanished: tuple[int, int] | None = None  # (listed, listed before) when fewer, kept
    ecc_first: tuple[tuple[str, int], ...] = ()  # per GPU: its first count of this boot
    ecc_rose: tuple[tuple[str, int, int], ...] = ()  # (GPU, first count, count now)
    lost: tuple[str, ...] = ()  # what nvidia-smi/NVML said about a lost GPU
    cpu_last: tuple[float, int] | None = None  # (box clock, cgroup CPU µs) last sample
    cpu_vcpus: float | None = None  # CPU the cgroup used over the last interval
    starving_since: float | None = None

    @property
    def gpu_dead(self) -> tuple[str, ...]:
        """The evidence of a dead GPU this boot, one sentence each (empty: none)."""
        out = list(self.lost)
        out += [f"{gpu}: uncorrected ECC errors {a} → {b} this boot" for gpu, a, b in self.ecc_rose]
        if self.vanished is not None:
            now, before = self.vanished
            out.append(f"{before - now} of {before} GPUs gone from the listing this boot")
        return tuple(out)

    def observe(self, snap: HostSnapshot, limits: DataBoundLimits) -> BoxWatch:
        """The watch after one more sample."""
        w = self
        if snap.boot_id and snap.boot_id != w.boot_id:
            # A new boot: volatile ECC counts, the listing and the CPU counter restart.
            w = BoxWatch(boot_id=snap.boot_id)
        w = w._gpus(snap)
        return w._cpu(snap, limits)

    def _gpus(self, snap: HostSnapshot) -> BoxWatch:
        w = self
        listed = len(snap.gpus)
        none_left = not snap.gpus and snap.gpu_unavailable_reason == NO_DEVICE
        if (snap.gpus or none_left) and listed < w.gpus_max and w.vanished is None:
            w = replace(w, vanished=(listed, w.gpus_max))
        if listed > w.gpus_max:  # a new watch only on change: this runs once a sample
            w = replace(w, gpus_max=listed)
        lost = list(snap.gpu_lost) + [f"GPU {g.index}: reported lost" for g in snap.gpus if g.lost]
        fresh = tuple(x for x in lost if x not in w.lost)
        if fresh:
            w = replace(w, lost=(w.lost + fresh)[:MAX_LOST])
        first = dict(w.ecc_first)
        rose = {gpu: (a, b) for gpu, a, b in w.ecc_rose}
        for g in snap.gpus:
            if g.ecc_volatile is None:
                continue
            key = f"GPU {g.index}"
            if key not in first:
                first[key] = g.ecc_volatile
            elif g.ecc_volatile > first[key]:
                rose[key] = (first[key], g.ecc_volatile)
        ecc_first = tuple(first.items())
        ecc_rose = tuple((gpu, a, b) for gpu, (a, b) in sorted(rose.items()))
        if ecc_first == w.ecc_first and ecc_rose == w.ecc_rose:
            return w
        return replace(w, ecc_first=ecc_first, ecc_rose=ecc_rose)

    def _cpu(self, snap: HostSnapshot, limits: DataBoundLimits) -> BoxWatch:
        cg = snap.cgroup
        usage = cg.cpu_usage_usec if cg is not None else None
        used = None
        if usage is not None and self.cpu_last is not None:
            t0, u0 = self.cpu_last
            if snap.t > t0 and usage >= u0:  # a counter that went back: a new cgroup
                used = (usage - u0) / 1e6 / (snap.t - t0)
        last = (snap.t, usage) if usage is not None else None
        w = self
        if last != w.cpu_last or used != w.cpu_vcpus:
            w = replace(w, cpu_last=last, cpu_vcpus=used)
        budget = cpu_budget(snap)
        utils = [g.util_pct for g in snap.gpus]
        starving = (
            snap.cell is not None
            and snap.log_mtime is not None
            and snap.t - snap.log_mtime <= limits.log_window_s
            and bool(utils)
            and all(u is not None and u < limits.util_pct for u in utils)
            and used is not None
            and budget is not None
            and used / budget * 100 >= limits.cpu_pct
        )
        if not starving:
            return w if w.starving_since is None else replace(w, starving_since=None)
        return w if w.starving_since is not None else replace(w, starving_since=snap.t)


def cpu_budget(snap: HostSnapshot) -> float | None:
    """The vCPUs the box's cgroup may use: its quota, else (no quota) the host's CPUs."""
    cg = snap.cgroup
    if cg is None:
        return None
    if cg.cpu_quota_vcpus:
        return cg.cpu_quota_vcpus
    return float(snap.host_cpus) if cg.cpu_unlimited and snap.host_cpus else None
