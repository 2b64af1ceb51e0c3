"""Health rules: pure functions from snapshots to alerts.

Each rule has a stable id, a severity, a one-line message and the gotcha it comes from
(DESIGN.md, "Health rules"). Events that happen once — a reboot, an OOM kill, an Xid —
must not vanish on the next sample, so ``HealthState`` remembers the baseline seen when
monitoring began and every Xid since; ``evaluate`` reads it and the latest snapshot.

Over 450 lines on purpose: every rule is a small pure function beside the others, so the
catalogue (DESIGN.md's table) can be read and checked against its gotcha ids top to
bottom; splitting it by resource would hide which rules a sample runs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from rgt_tui.domain.at_risk import cadence_seen
from rgt_tui.domain.box_watch import BoxWatch, DataBoundLimits, cpu_budget
from rgt_tui.domain.snapshot import HostSnapshot, XidEvent
from rgt_tui.domain.text import printable
from rgt_tui.domain.young_daly import cadence_line

Severity = Literal["critical", "warning", "info"]
SEVERITY_ORDER: dict[str, int] = {"critical": 0, "warning": 1, "info": 2}
DEAD_GPU_XIDS = frozenset({48, 79})
# What a box of no known rate (no cost_per_hour) is told by the idle alert and GEN1
# (``cost.forgotten_box_alert``): unknown is not free.
UNKNOWN_RATE_FIX = "set cost_per_hour in its block; 0 for a box that costs nothing"
IDLE_ALERT = "cost.idle"  # P1: GPUs idle while billed, no cell running
# Two samples further apart than a day in the box's clock, or the second over a minute
# earlier: the clock was set (NTP fixing a wrong RTC: 400 days on), not a drop or a night
# asleep. The time across is not the box's idle time, so the idle and starving clocks
# restart there; a jump counted as idle said "GPUs idle 576002 min" (h562 #4). Ordinary
# gaps keep them (review h564 #3: restarting at a 15-minute drop hid an idle box whose
# telemetry dropped that often), and a dead GPU's evidence is kept whatever (#1).
CLOCK_JUMP_S = 86400.0
CLOCK_BACK_S = 60.0
# The longest gap between two samples an idle clock counts across (a restart of watch,
# watch --once from cron, hourly too with a run missed, a dropped link): past it, it
# starts again. Not an hour: an hourly cron's jitter reset it every other run (h605 #5).
IDLE_GAP_S = 3 * 3600.0


def clock_jumped(before: float | None, now: float) -> bool:
    """Whether the box's clock was set between two samples (CLOCK_JUMP_S)."""
    return before is not None and not -CLOCK_BACK_S <= now - before <= CLOCK_JUMP_S


@dataclass(frozen=True)
class Thresholds:
    """Alert thresholds; every one can be set in the fleet file's [fleet.thresholds]."""

    inode_pct: float = 90.0
    disk_pct: float = 90.0
    cgroup_mem_pct: float = 90.0
    temp_c: float = 83.0
    util_high_pct: float = 90.0
    sm_clock_low_pct: float = 60.0
    idle_util_pct: float = 5.0
    idle_minutes: float = 30.0
    zombie_vram_mib: float = 1024.0
    log_silent_minutes: float = 10.0
    forgotten_minutes: float = 30.0  # after the queue finished, a still-billed box (GEN1)
    tracker_minutes: float = 10.0  # U35: a running cell's log with no tracker run line yet
    # U24/U38: a cell's log advancing, every GPU under data_bound_util_pct and the cgroup
    # CPU at data_bound_cpu_pct of its quota for data_bound_minutes: starving for data.
    data_bound_minutes: float = 10.0
    data_bound_util_pct: float = 40.0
    data_bound_cpu_pct: float = 90.0


@dataclass(frozen=True)
class Alert:
    """One active finding about one host."""

    id: str
    severity: Severity
    message: str
    gotcha: str
    subject: str = ""  # the mount or GPU it is about, when there are several

    @property
    def key(self) -> tuple[str, str]:
        return (self.id, self.subject)


@dataclass(frozen=True)
class HealthContext:
    """What the rules need beyond the snapshot: connection and billing facts."""

    thresholds: Thresholds = Thresholds()
    connection: str = "connected"  # connected | connecting | reconnecting | lost
    lost_since: float | None = None
    cost_per_hour: float | None = None
    tracker: str = ""  # the tracker whose run line a cell's log must print (U35); "": none
    # An interruptible host's mean time between preemptions, seconds (issue 40: the
    # Young/Daly interval of ckpt.cadence); None: not interruptible, no rule.
    mtbf_s: float | None = None
    # The host's ``spare`` hosts (issue 40): a dead GPU's fix names the move to one (U22).
    spare: tuple[str, ...] = ()
    # The host is ``interruptible`` (issue 40): a lost connection reads "preempted?", as
    # its pane's ⚡ line does, never "the run may still be alive".
    interruptible: bool = False
    # The paths the fleet file names in ``mounts`` (none when it names none: the defaults,
    # a workdir or durable_dir not made yet, are no typo): one unread is ``disk.unread``.
    mounts_named: tuple[str, ...] = ()


@dataclass(frozen=True)
class HealthState:
    """Facts accumulated across samples so one-off events stay visible."""

    first_boot_id: str | None = None
    boot_id: str | None = None
    oom_baseline: int | None = None  # oom_kill counter when this boot was first seen
    rebooted: bool = False
    xids: tuple[XidEvent, ...] = ()
    idle_since: float | None = None
    last_t: float | None = None  # the last sample's time (the box's clock)
    # Dead-GPU evidence without the kernel log (U22) and the data-bound clock (U24).
    watch: BoxWatch = BoxWatch()

    def observe(self, snap: HostSnapshot, thresholds: Thresholds = Thresholds()) -> HealthState:
        """The state after one more sample."""
        state = self
        if clock_jumped(state.last_t, snap.t):
            clocks = {"starving_since": None, "cpu_last": None, "cpu_vcpus": None}
            state = replace(state, idle_since=None, watch=replace(state.watch, **clocks))
        elif state.idle_since is not None and snap.t - (state.last_t or snap.t) > IDLE_GAP_S:
            # Unseen that long (watch stopped, the box not answering): it may have worked
            # meanwhile, so its idle clock starts again rather than count the gap.
            state = replace(state, idle_since=None)
        if snap.boot_id:
            if state.first_boot_id is None:
                state = replace(state, first_boot_id=snap.boot_id, boot_id=snap.boot_id)
            elif snap.boot_id != state.boot_id:
                # A new boot resets the cgroup counters, so the OOM baseline restarts too.
                state = replace(state, boot_id=snap.boot_id, rebooted=True, oom_baseline=None)
        oom = snap.cgroup.oom_kill if snap.cgroup else None
        if state.oom_baseline is None and oom is not None:
            state = replace(state, oom_baseline=oom)
        # The agent re-reads the kernel ring buffer after a reconnect: keep each line once.
        fresh = tuple(x for x in snap.xids if x not in state.xids)
        if fresh:
            state = replace(state, xids=(state.xids + fresh)[-50:])
        # A running queue cell is paid work even with the GPUs at 0 % (a data-bound or
        # CPU phase, U38): the idle clock stops while one runs and restarts after it.
        idle = (
            bool(snap.gpus)
            and snap.cell is None
            and all(
                g.util_pct is not None and g.util_pct < thresholds.idle_util_pct for g in snap.gpus
            )
        )
        if not idle:
            if state.idle_since is not None:  # a new state only on change: once a sample
                state = replace(state, idle_since=None)
        elif state.idle_since is None:
            state = replace(state, idle_since=snap.t)
        limits = DataBoundLimits(
            thresholds.data_bound_util_pct,
            thresholds.data_bound_cpu_pct,
            thresholds.log_silent_minutes * 60,
        )
        # One new state a sample (its time, and its watch whether changed or not): at 500
        # hosts each replace of this many fields is a measurable share of watch's core.
        return replace(state, last_t=snap.t, watch=state.watch.observe(snap, limits))

    def acknowledge_reboot(self) -> HealthState:
        """The user has seen the reboot; stop alerting on it."""
        return replace(self, rebooted=False, first_boot_id=self.boot_id)


def _pct(fraction: float) -> str:
    return f"{fraction * 100:.0f}%"


def _mib(n: int | float) -> str:
    return f"{n / 2**20:,.0f} MiB"


def disk_alerts(snap: HostSnapshot, th: Thresholds, named: tuple[str, ...] = ()) -> list[Alert]:
    """Inodes (U7) and bytes (U6) per watched mount; one alert per mount, not per path;
    and each path of ``named`` (the fleet file's own ``mounts``) the agent cannot read."""
    alerts: list[Alert] = []
    seen: set[str] = set()
    for d in snap.disks:
        if d.mount in seen:
            continue
        seen.add(d.mount)
        if d.inodes_total and d.inodes_fraction * 100 >= th.inode_pct:
            alerts.append(
                Alert(
                    "disk.inodes",
                    "critical",
                    f"inodes {_pct(d.inodes_fraction)} used on {d.mount} "
                    f"({d.inodes_used:,} of {d.inodes_total:,}) while bytes are {_pct(d.bytes_fraction)}",
                    "U7",
                    d.mount,
                )
            )
        if d.bytes_total and d.bytes_fraction * 100 >= th.disk_pct:
            alerts.append(
                Alert(
                    "disk.bytes",
                    "critical",
                    f"disk {_pct(d.bytes_fraction)} full on {d.mount} "
                    f"({(d.bytes_total - d.bytes_used) / 2**30:.1f} GiB free)",
                    "U6",
                    d.mount,
                )
            )
    alerts += [
        Alert(
            "disk.unread",
            "info",  # a folder the queue has yet to make is no page; a typo is told as well
            f"cannot read {path} ({why}): its disk is not watched — a typo in the fleet "
            "file's mounts, or a folder not made yet",
            "U6",
            path,
        )
        for path, why in snap.disks_unread
        if path in named
    ]
    return alerts


def cgroup_alerts(snap: HostSnapshot, state: HealthState, th: Thresholds) -> list[Alert]:
    """OOM kills since monitoring began (U9/U41) and memory near the cgroup limit."""
    alerts: list[Alert] = []
    cg = snap.cgroup
    if cg is None:
        return alerts
    if (
        cg.oom_kill is not None
        and state.oom_baseline is not None
        and cg.oom_kill > state.oom_baseline
    ):
        rose = cg.oom_kill - state.oom_baseline
        alerts.append(
            Alert(
                "cgroup.oom_kill",
                "critical",
                # A count since the baseline, said so: each rise is told again with the
                # whole count, which read as that many new kills (h582 #5).
                f"{rose} process{'es' if rose > 1 else ''} OOM-killed by the cgroup since "
                f"rgt-tui first saw this boot (oom_kill {state.oom_baseline} → {cg.oom_kill}); "
                "no traceback is printed",
                "U9",
            )
        )
    frac = cg.memory_fraction
    if frac is not None and frac * 100 >= th.cgroup_mem_pct:
        alerts.append(
            Alert(
                "cgroup.memory",
                "warning",
                f"cgroup memory {_pct(frac)} of its limit ({_mib(cg.memory_current or 0)} of "
                f"{_mib(cg.memory_max or 0)}): the next allocation may be OOM-killed",
                "U41",
            )
        )
    return alerts


def _unowned_vram(snap: HostSnapshot, gpu_index: int, used: int | None) -> int | None:
    """VRAM that no listed process can own: held when the process list was taken and
    still held now. A process started since the list (loading its model, util still 0)
    is not listed yet; its VRAM must not read as a zombie's until the next list."""
    listed = snap.processes_listed
    then = listed.vram_of(gpu_index) if listed is not None else None
    if used is None or then is None:
        return used
    return min(used, then)


def spare_move(cell: str | None, spare: tuple[str, ...]) -> str:
    """`` — or move the queue to a spare: rgt-tui queue move CELL --to SPARE (spare =
    [...])`` for a host with spares (U22: a dead GPU's other way out); "" without."""
    if not spare:
        return ""
    names = ", ".join(printable(s, 60) for s in spare)
    name = printable(cell, 120) if cell else "CELL"
    return (
        f" — or move the queue to a spare: rgt-tui queue move {name} --to "
        f"{printable(spare[0], 60)} (spare = [{names}])"
    )


# An H100/H200 under full load runs at its power limit: a real H200 under a bf16 matmul
# drew 692 of its 700 W with sw_power_cap set and its SM clock at 76 % of max
# (tests/fixtures/h200/load_query_gpu.csv). That is the card's rated budget, not U23's
# stolen 25-40 %, and a warning on every busy H200 would teach users to ignore the alert.
# The cap counts once it holds the SM clock below sm_clock_low_pct of max (a limit set
# below the card's own, or a power-starved box).
POWER_BUDGET_REASONS = frozenset({"sw_power_cap"})


def gpu_alerts(
    snap: HostSnapshot, state: HealthState, th: Thresholds, spare: tuple[str, ...] = ()
) -> list[Alert]:
    """Clock-vs-util (U21), throttling (U23), Xid (U22), zombie VRAM (U11), sharing (GEN7)."""
    alerts: list[Alert] = []
    procs = snap.gpu_processes
    for g in snap.gpus:
        subject = f"GPU {g.index}"
        clock = g.sm_clock_fraction
        busy = g.util_pct is not None and g.util_pct >= th.util_high_pct
        if busy and clock is not None and clock * 100 < th.sm_clock_low_pct:
            alerts.append(
                Alert(
                    "gpu.sm_clock_low",
                    "warning",
                    f"{subject} util {g.util_pct:.0f}% but SM clock only {_pct(clock)} of max: "
                    "busy, not productive",
                    "U21",
                    subject,
                )
            )
        hot = g.temp_c is not None and g.temp_c >= th.temp_c
        slow = clock is not None and clock * 100 < th.sm_clock_low_pct
        reasons = [r for r in g.throttle_reasons if r not in POWER_BUDGET_REASONS or slow]
        if hot or reasons:
            why = ", ".join(reasons) or "temperature"
            temp = f"{g.temp_c:.0f} °C" if g.temp_c is not None else "temperature unknown"
            alerts.append(
                Alert(
                    "gpu.throttle",
                    "warning",
                    f"{subject} throttling ({why}) at {temp}",
                    "U23",
                    subject,
                )
            )
        if procs is not None:
            mine = [p for p in procs if p.gpu_index == g.index]
            idle = g.util_pct is not None and g.util_pct < th.idle_util_pct
            held = _unowned_vram(snap, g.index, g.mem_used)
            # In containers the process list is often empty for a healthy run, so only
            # VRAM that is held while the GPU does nothing counts as a zombie.
            if not mine and idle and held and held >= th.zombie_vram_mib * 2**20:
                alerts.append(
                    Alert(
                        "gpu.zombie_vram",
                        "warning",
                        f"{subject} holds {_mib(held)} with no listed process and no work",
                        "U11",
                        subject,
                    )
                )
            if len(mine) > 1:
                # "name (pid N)", not "name[N]": a notification escapes every bracket
                # (Markdown links), and read "memhog\[11327\]" (a user's hour).
                names = ", ".join(f"{p.name} (pid {p.pid})" for p in mine)
                alerts.append(
                    Alert(
                        "gpu.shared",
                        "warning",
                        f"{subject} is shared by {len(mine)} processes: {names}",
                        "GEN7",
                        subject,
                    )
                )
    alerts += dead_gpu_alerts(snap, state, spare)
    return alerts


def dead_gpu_alerts(
    snap: HostSnapshot, state: HealthState, spare: tuple[str, ...] = ()
) -> list[Alert]:
    """Xid 48/79 in the kernel log, or — where it cannot be read, as in most containers —
    a GPU that nvidia-smi/NVML call lost, whose volatile ECC count rose, or that left the
    listing this boot (U22): hardware, so the fix is another box (or a ``spare`` host)."""
    dead = [x for x in state.xids if x.xid in DEAD_GPU_XIDS]
    signs = [f"Xid {dead[-1].xid} in the kernel log"] if dead else []
    signs += [printable(x, 160) for x in state.watch.gpu_dead]
    if not signs:
        return []
    blind = " (the kernel log is not readable here)" if snap.kmsg_readable is False else ""
    return [
        Alert(
            "gpu.xid",
            "critical",
            "; ".join(signs[:3]) + f"{blind}: the GPU is failing — re-rent the box "
            "(stop it, rent another, relaunch from the last checkpoint)"
            + spare_move(snap.cell, spare),
            "U22",
        )
    ]


def data_bound_alerts(snap: HostSnapshot, state: HealthState, th: Thresholds) -> list[Alert]:
    """A cell starving for data (U24/U38): its log advances while every GPU stays under
    ``data_bound_util_pct`` and the cgroup CPU sits at its quota, ``data_bound_minutes``."""
    w = state.watch
    since, used, budget = w.starving_since, w.cpu_vcpus, cpu_budget(snap)
    if since is None or used is None or budget is None:
        return []
    minutes = (snap.t - since) / 60
    if minutes < th.data_bound_minutes:
        return []
    util = max(g.util_pct or 0.0 for g in snap.gpus)
    cell = printable(snap.cell, 80) if snap.cell else ""
    return [
        Alert(
            "gpu.data_bound",
            "warning",
            f"cell {cell}: GPU util ≤ {util:.0f}% for {minutes:.0f} min while its log advances "
            f"and the cgroup CPU is {used / budget * 100:.0f}% of its {budget:g}-vCPU quota: "
            "starving for data — raise DataLoader num_workers (up to the quota − 1), "
            "pin_memory=True, persistent_workers=True; a bigger CPU quota; data on a network "
            "or spinning disk: stage it to local NVMe (U8)",
            "U24",
            cell,
        )
    ]


def threads_alerts(snap: HostSnapshot) -> list[Alert]:
    """Torch/OpenMP pools sized to host cores on a vCPU slice (U40)."""
    cg, procs = snap.cgroup, snap.gpu_processes
    if cg is None or cg.cpu_quota_vcpus is None or not procs or not snap.host_cpus:
        return []
    quota = cg.cpu_quota_vcpus
    alerts = []
    for p in procs:
        pool = p.omp_threads if p.omp_threads is not None else snap.host_cpus
        if pool > max(1.0, quota) * 1.5:
            source = (
                f"OMP_NUM_THREADS={p.omp_threads}"
                if p.omp_threads is not None
                else "OMP_NUM_THREADS unset"
            )
            alerts.append(
                Alert(
                    "cpu.threads",
                    "warning",
                    f"{p.name}[{p.pid}]: {source} → {pool} threads on a {quota:g}-vCPU quota",
                    "U40",
                    str(p.pid),
                )
            )
    return alerts


def overflow_alerts(snap: HostSnapshot) -> list[Alert]:
    """Lists the box sent longer than the parser keeps (``snapshot.MAX_GPUS`` and the
    others): no real machine has 50,000 GPUs, so a broken driver or a hostile box; the
    alert names it instead of the fleet's metrics growing by a series per entry."""
    return [
        Alert(
            "host.overflow",
            "warning",
            f"box sent {o.sent:,} {o.what}; only the first {o.kept} are kept — "
            "its report cannot be trusted: check the box (nvidia-smi -L, df)",
            "RGT1",
            o.what,
        )
        for o in snap.overflows
    ]


def _ago(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{max(0.0, seconds):.0f} s"


def liveness_alerts(snap: HostSnapshot, th: Thresholds) -> list[Alert]:
    """The running cell's log silent while its outputs still advance (U43).

    The single most common false "dead run": the log is block-buffered or sparse, the
    run is alive, and the reflex is to kill it. Fires when the log has been silent for
    ``log_silent_minutes``, a file in the cell's output directory was written well after
    the log's last line, and outputs are still being written (within that window, or
    the last 2 min): a run whose outputs stopped too is not "alive", so not this alert.
    """
    if snap.log_mtime is None or snap.artifact_mtime is None:
        return []
    window = th.log_silent_minutes * 60
    silent = snap.t - snap.log_mtime
    since_output = snap.t - snap.artifact_mtime
    after_log = snap.artifact_mtime - snap.log_mtime
    if silent < window or after_log < min(60.0, window) or since_output > max(window, 120.0):
        return []
    # The name comes from the box's file names: shown escaped, on one line (hostile box).
    cell = printable(snap.cell, 80) if snap.cell else ""
    who = f"cell {cell}" if cell else "the run"
    return [
        Alert(
            "log.silent",
            "warning",
            f"log silent {_ago(silent)} while {who}'s outputs still change (newest "
            f"{_ago(since_output)} ago): alive, not hung — do not kill it (its output is "
            "block-buffered or sparse: python -u, stdbuf -oL)",
            "U43",
            cell,
        )
    ]


def cadence_alerts(snap: HostSnapshot, mtbf_s: float | None) -> list[Alert]:
    """The running cell checkpoints more than 2·W apart (issue 40, Young/Daly): a
    preemption of this interruptible box costs more rework than it should."""
    found = cadence_seen(snap.checkpoints, mtbf_s) if snap.cell is not None else None
    if found is None or not found.too_slow:
        return []
    return [Alert("ckpt.cadence", "info", cadence_line(found), "P8", snap.cell or "")]


def _lost_words(ctx: HealthContext, snap: HostSnapshot | None) -> str:
    """What a lost connection means: a dropped poll is not a dead run (GEN8), except on
    an interruptible box, where the silence is how a preemption looks (docs/spot.md),
    and a box whose last sample said its queue had finished (hours s22a #8, s24b #8:
    "the run may still be alive" over "queue 3/4 done · finished")."""
    if ctx.interruptible:
        return "connection lost — preempted? (an interruptible box)"
    if queue_finished(snap):
        return "connection lost — its queue had finished at its last sample"
    return "connection lost — the run may still be alive"


def queue_finished(snap: HostSnapshot | None) -> bool:
    """The sample says the box's queue had finished: its last launch's done record, and
    no cell running."""
    return snap is not None and snap.cell is None and snap.queue_done_at is not None


def evaluate(
    snap: HostSnapshot | None, state: HealthState, ctx: HealthContext
) -> tuple[Alert, ...]:
    """Every active alert for a host, most severe first."""
    th = ctx.thresholds
    alerts: list[Alert] = []
    if ctx.connection in ("reconnecting", "lost"):
        alerts.append(Alert("connection.lost", "warning", _lost_words(ctx, snap), "GEN8"))
    if state.rebooted:
        alerts.append(
            Alert(
                "host.rebooted",
                "critical",
                "the box rebooted: every tmux/nohup job on it died",
                "GEN6",
            )
        )
    if snap is not None:
        alerts += disk_alerts(snap, th, ctx.mounts_named)
        alerts += cgroup_alerts(snap, state, th)
        alerts += gpu_alerts(snap, state, th, ctx.spare)
        alerts += threads_alerts(snap)
        if ctx.connection not in ("reconnecting", "lost"):
            # "alive, not hung" is said of now: a box that no longer answers is neither
            # (a preempted box's pane said it under GEN8, s43 spot hour #7).
            alerts += liveness_alerts(snap, th)
        alerts += data_bound_alerts(snap, state, th)
        alerts += overflow_alerts(snap)
        alerts += cadence_alerts(snap, ctx.mtbf_s)
        # state.idle_since is None while a queue cell runs (HealthState.observe).
        # A box of no known rate is told too (h513 #1); cost_per_hour = 0: free, never.
        if ctx.cost_per_hour != 0 and state.idle_since is not None and snap.cell is None:
            idle_min = (snap.t - state.idle_since) / 60
            billed = (
                f"billed ${ctx.cost_per_hour:.2f}/h"
                if ctx.cost_per_hour is not None
                else f"billed at a rate not set ({UNKNOWN_RATE_FIX})"
            )
            if idle_min >= th.idle_minutes:
                alerts.append(
                    Alert(
                        IDLE_ALERT,
                        "warning",
                        # The way on, as GEN1's says its own (h513 #7: the notice named none).
                        f"GPUs idle {idle_min:.0f} min with no queue cell running while {billed}: "
                        "give it work, or pull, verify and stop it",
                        "P1",
                    )
                )
    alerts.sort(key=lambda a: SEVERITY_ORDER[a.severity])
    return tuple(alerts)
