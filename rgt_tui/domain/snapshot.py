"""One telemetry sample of one host, as frozen data.

Past 450 lines on purpose: it is the one parser of the box's hostile output, and its
types, bounds and readers are reviewed side by side.

The on-box agent (``rgt_tui.agent.probe``) prints one JSON object per line; this module
is the only place that turns those objects into typed values. Its rule for bad remote
output: a field that is missing or of the wrong type becomes ``None`` ("not known") and
the problem is recorded in ``HostSnapshot.problems``, never raised, so one odd box cannot
take the fleet view down.

Agent JSON (version 1), every key optional except ``v``::

    {"v": 1, "t": <unix s>, "seq": <int>, "hostname": str, "boot_id": str,
     "box_id": str|null,                # ~/.rgt/box-id (rgt_tui.domain.box_identity)
     "container_start": float|null,     # when PID 1 started: a restarted container (issue 40)
     "uptime_s": float, "loadavg": [1m, 5m, 15m], "host_cpus": int,
     "host_mem_total": int, "host_mem_available": int,      # host-wide (U41)
     "disks": [{"path", "mount", "bytes_used", "bytes_total",
                "inodes_used", "inodes_total"}],
     "cgroup": {"version": 1|2|null, "memory_current": int|null,
                "memory_max": int|"unlimited"|null, "oom_kill": int|null,
                "cpu_quota_vcpus": float|"unlimited"|null,
                "cpu_usage_usec": int|null,     # total CPU time used (U24/U38)
                "memory_pressure_avg10": float|null},
     "gpu_source": "nvml"|"nvidia-smi"|"none", "gpu_unavailable_reason": str|null,
     "gpus": [{"index", "name", "uuid", "util_pct", "mem_util_pct", "sm_clock_mhz",
               "sm_clock_max_mhz", "mem_used", "mem_total", "power_w",
               "power_limit_w", "temp_c", "throttle_reasons": [str], "ecc_volatile",
               "lost": bool}],                       # the driver lost this GPU (U22)
     "gpu_processes": [{"gpu_index", "pid", "name", "used_mem",
                        "threads", "omp_threads"}] | null,   # null: not polled this sample
     "proc_every": int,                 # processes are polled when seq % proc_every == 0
     "xids": [{"xid": int, "text": str}],                   # new Xid kernel lines
     "kmsg_readable": bool|null,        # false in most containers: no Xid lines (U22)
     "gpu_lost": [str],                 # nvidia-smi/NVML lines saying a GPU is lost (U22)
     "cell": str|null,                  # the queue cell running now (U43, P1)
     "log_mtime": float|null,           # that cell's log (cells/<cell>.log)
     "artifact_mtime": float|null,      # newest file under its output dir
     "ckpt": {"name", "mtime", "size", "writes": [[at, write_s|null, size]],
              "writing": bool}|null,    # its checkpoints (issue 40: domain/at_risk.py)
     "queue_done_at": float|null,       # box clock: the last launch's done record (GEN1)
     "queue_stopped": bool,             # it stopped before its last cell (a stop record)
     "cell_started": float|null,        # box clock: when the running cell's attempt began
     "tracker_seen": bool|null,         # its log printed a --tracker-pattern line (U35);
                                        # null: no patterns, or not read to its end yet
     "errors": [str]}

Sizes are bytes, clocks MHz, power watts, temperatures degrees Celsius.

A box is hostile input, and one agent line (up to the transport's 1 MiB) could list tens
of thousands of GPUs, each a dozen metric series and alert candidates. So the parser keeps
the first ``MAX_GPUS`` GPUs, ``MAX_DISKS`` disks, ``MAX_GPU_PROCESSES`` processes and
``MAX_THROTTLE_REASONS`` reasons per GPU, in the sample's order, and records what it
dropped in ``HostSnapshot.overflows``: the health rule ``host.overflow`` names it.

The agent lists GPU processes only every ``proc_every`` samples (listing them costs a
driver call, or an ``nvidia-smi`` run). ``carry_processes`` gives the samples in between
the last list, marked with when it was taken (``ProcessListing``), so the rules that read
it (U11, GEN7, U40) hold steady instead of showing on one sample in five.

Over 400 lines on purpose: some 30 of them are the agent's JSON written out above, and
the typed samples and the one reader that fills them change together, field by field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from rgt_tui.domain.at_risk import CheckpointsSeen, read_checkpoints
from rgt_tui.domain.box_identity import valid_box_id
from rgt_tui.domain.text import printable
from rgt_tui.domain.units import plural

AGENT_PROTOCOL_VERSION = 1
UNLIMITED = "unlimited"
# What one sample may list; the largest real boxes have 8-16 GPUs and a few watched paths.
MAX_GPUS = 64
MAX_DISKS = 64
MAX_GPU_PROCESSES = 256
MAX_THROTTLE_REASONS = 32  # NVML knows about ten
MAX_LOST_LINES = 8  # lost-GPU lines of one sample (U22)
PROCESSES_OVERFLOW = "GPU processes"  # the Overflow.what of a process list cut short
PROCESS_NAME_CHARS = 256  # a GPU process's name as kept (a path; shown, never matched)
# No count, size, clock or time a box reports comes near 2^63; a number past it (or NaN,
# or Infinity) is bad output, refused by field like any other: int() of it raises, and
# arithmetic on it (a fraction, a rate) overflows or goes NaN in every rule after it.
MAX_NUMBER = 1 << 63


@dataclass(frozen=True)
class DiskSample:
    """Bytes and inodes of the file system that holds one watched path."""

    path: str
    mount: str
    bytes_used: int
    bytes_total: int
    inodes_used: int
    inodes_total: int

    @property
    def bytes_fraction(self) -> float:
        return self.bytes_used / self.bytes_total if self.bytes_total else 0.0

    @property
    def inodes_fraction(self) -> float:
        # Some file systems (btrfs, many overlays) report 0 inodes: no inode limit.
        return self.inodes_used / self.inodes_total if self.inodes_total else 0.0


@dataclass(frozen=True)
class CgroupSample:
    """The container's own memory and CPU budget (U41): not the host's."""

    version: int | None
    memory_current: int | None
    memory_max: int | None  # None with memory_unlimited=False means "not readable"
    memory_unlimited: bool
    oom_kill: int | None
    cpu_quota_vcpus: float | None
    cpu_unlimited: bool
    memory_pressure_avg10: float | None = None
    cpu_usage_usec: int | None = None  # total CPU time used; its rate vs the quota (U24)

    @property
    def memory_fraction(self) -> float | None:
        if self.memory_current is None or not self.memory_max:
            return None
        return self.memory_current / self.memory_max


@dataclass(frozen=True)
class GpuSample:
    """Counters of one GPU."""

    index: int
    name: str
    uuid: str | None
    util_pct: float | None
    mem_util_pct: float | None
    sm_clock_mhz: float | None
    sm_clock_max_mhz: float | None
    mem_used: int | None
    mem_total: int | None
    power_w: float | None
    power_limit_w: float | None
    temp_c: float | None
    throttle_reasons: tuple[str, ...]
    ecc_volatile: int | None
    lost: bool = False  # nvidia-smi/NVML said this GPU is lost or needs a reset (U22)

    @property
    def sm_clock_fraction(self) -> float | None:
        if self.sm_clock_mhz is None or not self.sm_clock_max_mhz:
            return None
        return self.sm_clock_mhz / self.sm_clock_max_mhz


@dataclass(frozen=True)
class GpuProcess:
    """A compute process holding VRAM on one GPU."""

    gpu_index: int
    pid: int
    name: str
    used_mem: int | None
    threads: int | None = None
    omp_threads: int | None = None  # OMP_NUM_THREADS from its environment, if set


@dataclass(frozen=True)
class ProcessListing:
    """When a host's GPU process list was taken: that sample's box clock and number,
    and each GPU's VRAM in use then (a GPU index and bytes, None where not known)."""

    t: float
    seq: int
    vram: tuple[tuple[int, int | None], ...] = ()

    def vram_of(self, gpu_index: int) -> int | None:
        """The VRAM GPU ``gpu_index`` had in use when the list was taken."""
        return next((used for index, used in self.vram if index == gpu_index), None)


@dataclass(frozen=True)
class XidEvent:
    """An NVIDIA Xid error line from the kernel log (U22)."""

    xid: int
    text: str


@dataclass(frozen=True)
class Overflow:
    """A list the box sent longer than the parser keeps: ``sent`` entries, the first
    ``kept`` kept (``what`` says which list: "GPUs", "throttle reasons of GPU 3")."""

    what: str
    sent: int
    kept: int


@dataclass(frozen=True)
class HostSnapshot:
    """Everything one agent sample says about one host."""

    host: str
    t: float
    seq: int = 0
    hostname: str | None = None
    boot_id: str | None = None
    uptime_s: float | None = None
    loadavg: tuple[float, float, float] | None = None
    host_cpus: int | None = None
    host_mem_total: int | None = None
    host_mem_available: int | None = None
    disks: tuple[DiskSample, ...] = ()
    # The watched paths (``mounts``) the agent could not read, (path, why) each: their
    # disks go unwatched (a typo, or a folder not made yet).
    disks_unread: tuple[tuple[str, str], ...] = ()
    cgroup: CgroupSample | None = None
    gpu_source: str = "none"
    gpu_unavailable_reason: str | None = None
    gpus: tuple[GpuSample, ...] = ()
    gpu_processes: tuple[GpuProcess, ...] | None = None
    # When gpu_processes was listed: this sample, or (carry_processes) an earlier one.
    processes_listed: ProcessListing | None = None
    process_every: int | None = None  # the agent lists processes every N samples
    xids: tuple[XidEvent, ...] = ()
    log_mtime: float | None = None
    artifact_mtime: float | None = None
    problems: tuple[str, ...] = field(default_factory=tuple)
    # The queue, as its records on the box say: the cell running now (None: none runs,
    # or the box has no queue) and, once the last launch finished, when (box clock).
    cell: str | None = None
    queue_done_at: float | None = None
    queue_stopped: bool = False  # ...and it stopped before its last cell (user, group)
    # The running cell's attempt start (box clock) and whether its log printed the
    # tracker's run line (U35): None when no tracker is checked or not known yet.
    cell_started: float | None = None
    tracker_seen: bool | None = None
    # The id the box keeps in ~/.rgt/box-id: a different one under the same host name is
    # a new box (rgt_tui.domain.box_identity). None: the agent could not read or write it.
    box_id: str | None = None
    # When the box's PID 1 started (box clock, whole seconds): a new value under the same
    # boot id is a restarted container (a preempted spot box come back). None: not known.
    container_start: float | None = None
    # Lists the box sent longer than the parser keeps (the module's MAX_* limits).
    overflows: tuple[Overflow, ...] = ()
    # Whether the agent could read /dev/kmsg (None: not said), and what nvidia-smi/NVML
    # printed about a lost GPU: in a container the only sign of a dead card (U22).
    kmsg_readable: bool | None = None
    gpu_lost: tuple[str, ...] = ()
    # The running cell's checkpoints on the box (issue 40: work at risk). None: none seen.
    checkpoints: CheckpointsSeen | None = None


class _Reader:
    """Typed field access that records, rather than raises, on bad remote output."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems

    def get(self, obj: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
        value = obj.get(key)
        if value is None:
            return None
        if type(value) is not bool and isinstance(value, kind):
            return value  # the usual case, checked first: every field of every sample
        # bool is an int subclass; a boolean where a number belongs is bad output.
        if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
            self.problems.append(f"{where}.{key}: expected a number, got {value!r}")
            return None
        if not isinstance(value, kind):
            self.problems.append(f"{where}.{key}: expected {_kind_name(kind)}, got {value!r}")
            return None
        return value

    def num(
        self, obj: dict[str, Any], key: str, where: str, span: tuple[float, float] | None = None
    ) -> float | None:
        """A finite number; with ``span`` (low, high), one within it (a percentage of
        -50, a temperature of -273 °C or a GPU index of -1 is no reading: a hostile
        hour had them shown and exported as they came)."""
        value = self.get(obj, key, (int, float), where)
        if value is None:
            return None
        if not -MAX_NUMBER < value < MAX_NUMBER:  # NaN fails both
            self.problems.append(f"{where}.{key}: expected a finite number, got {_cut(value)}")
            return None
        if span is not None and not span[0] <= value <= span[1]:
            low, high = span
            self.problems.append(
                f"{where}.{key}: expected a number from {low:g} to {high:g}, got {_cut(value)}"
            )
            return None
        return value

    def int_(
        self, obj: dict[str, Any], key: str, where: str, span: tuple[float, float] | None = None
    ) -> int | None:
        value = self.num(obj, key, where, span)
        return None if value is None else int(value)

    def str_(self, obj: dict[str, Any], key: str, where: str) -> str | None:
        # The box's text, made printable where it enters (uncut: a mount path or a cell
        # name is matched as well as shown, and printable is identity on a plain name).
        value = self.get(obj, key, str, where)
        if value is None or value.isprintable():
            # isprintable() is False for every character printable() escapes (Cc, Cf,
            # Zl, Zp, Cs): a plain name is kept as it is without the regex pass.
            return value
        return printable(value, None)

    def objects(self, obj: dict[str, Any], key: str, where: str) -> list[dict[str, Any]]:
        items = self.get(obj, key, list, where) or []
        good = [item for item in items if isinstance(item, dict)]
        if len(good) != len(items):
            self.problems.append(
                f"{where}.{key}: not a JSON object: {plural(len(items) - len(good), 'entry', 'entries')}"
            )
        return good


def _first(items: list[Any], limit: int, what: str, overflows: list[Overflow]) -> list[Any]:
    """The first ``limit`` of ``items``; a longer list is recorded in ``overflows``."""
    if len(items) > limit:
        overflows.append(Overflow(what, len(items), limit))
    return items[:limit]


def _cut(value: Any) -> str:
    """``value`` as the box wrote it, cut to a readable length (a 4,000-digit number)."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:40]}…"


def _finite(value: Any) -> bool:
    """A number a rule can compute with: not a bool, not NaN or infinite, below 2^63."""
    return (
        type(value) is not bool
        and isinstance(value, (int, float))
        and -MAX_NUMBER < value < MAX_NUMBER
    )


class BadNumber:
    """A number literal of an agent line that no field can hold (NaN, Infinity, 1e999,
    a 30-digit integer), kept as the box wrote it. Every reader's type check refuses it,
    so the field it sits in becomes None and a problem naming the field."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text if len(self.text) <= 40 else f"{self.text[:40]}…"


def _parse_int(text: str) -> int | BadNumber:
    value = int(text)
    return value if -MAX_NUMBER < value < MAX_NUMBER else BadNumber(text)


def _parse_float(text: str) -> float | BadNumber:
    value = float(text)
    return value if -MAX_NUMBER < value < MAX_NUMBER else BadNumber(text)


def decode_agent_line(line: str) -> dict[str, Any] | None:
    """One agent line as a JSON object; None when it is not one (not JSON, or nested
    past the recursion limit). A number no field can hold — ``NaN``, ``Infinity`` (which
    Python's JSON reader accepts), ``1e999``, a 30-digit integer — is decoded as a
    ``BadNumber``, so no reader of the object meets a value it cannot compute with."""
    try:
        data = json.loads(
            line, parse_constant=BadNumber, parse_int=_parse_int, parse_float=_parse_float
        )
    except (ValueError, RecursionError):  # RecursionError: a box's "[[[[…" nesting
        return None
    return data if isinstance(data, dict) else None


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {int: "a number", float: "a number", str: "a string", list: "a list", dict: "an object"}
    return " or ".join(sorted({names.get(k, k.__name__) for k in kinds}))


# What a reading can be (inclusive); outside it, the field is unknown and named.
PERCENT = (0.0, 100.0)
COUNT = (0.0, float(MAX_NUMBER))  # sizes, counts, indexes: never negative
LIMIT = (1e-9, float(MAX_NUMBER))  # a cgroup limit, a machine's CPUs: above 0
POSITIVE = (1.0, float(MAX_NUMBER))  # a pid
CLOCK_MHZ = (0.0, 100_000.0)
WATTS = (0.0, 100_000.0)
CELSIUS = (-50.0, 200.0)


def _limit(r: _Reader, obj: dict[str, Any], key: str) -> tuple[float | None, bool]:
    """A cgroup limit: a number above 0, the word "unlimited", or unknown (None). A limit
    of 0 holds no process: a box saying so read "8 threads on a 0-vCPU quota" (h582 #4)."""
    value = obj.get(key)
    if value == UNLIMITED:
        return None, True
    return r.num(obj, key, "cgroup", LIMIT), False


def snapshot_from_agent(host: str, data: dict[str, Any]) -> HostSnapshot:
    """Build a snapshot from one decoded agent line; bad fields become None and a problem."""
    errors = data.get("errors") if isinstance(data.get("errors"), list) else []
    problems: list[str] = [f"agent: {printable(e)}" for e in errors if isinstance(e, str)]
    r = _Reader(problems)
    overflows: list[Overflow] = []
    if data.get("v") != AGENT_PROTOCOL_VERSION:
        problems.append(f"agent protocol v{data.get('v')!r}, expected v{AGENT_PROTOCOL_VERSION}")

    disks: list[DiskSample] = []
    for d in _first(r.objects(data, "disks", "disks"), MAX_DISKS, "disks", overflows):
        values = [
            r.int_(d, k, "disks", COUNT)
            for k in ("bytes_used", "bytes_total", "inodes_used", "inodes_total")
        ]
        if None in values:
            continue
        mount = r.str_(d, "mount", "disks") or "?"
        if mount != "?" and any(seen.mount == mount for seen in disks):
            # Two watched paths on one filesystem (local: / and ~): the same figures,
            # shown once, under the first path that named it.
            continue
        disks.append(
            DiskSample(
                path=r.str_(d, "path", "disks") or "?",
                mount=mount,
                bytes_used=values[0],
                bytes_total=values[1],
                inodes_used=values[2],
                inodes_total=values[3],
            )
        )

    unread = r.get(data, "disks_unread", list, "sample") or []
    disks_unread = tuple(
        (printable(pair[0]), printable(pair[1]))
        for pair in _first(unread, MAX_DISKS, "unread disks", overflows)
        if isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair)
    )

    cgroup = None
    cg = r.get(data, "cgroup", dict, "sample")
    if cg is not None:
        mem_max, mem_unlimited = _limit(r, cg, "memory_max")
        cpu_quota, cpu_unlimited = _limit(r, cg, "cpu_quota_vcpus")
        cgroup = CgroupSample(
            version=r.int_(cg, "version", "cgroup"),
            memory_current=r.int_(cg, "memory_current", "cgroup", COUNT),
            memory_max=None if mem_max is None else int(mem_max),
            memory_unlimited=mem_unlimited,
            oom_kill=r.int_(cg, "oom_kill", "cgroup", COUNT),
            cpu_quota_vcpus=cpu_quota,
            cpu_unlimited=cpu_unlimited,
            memory_pressure_avg10=r.num(cg, "memory_pressure_avg10", "cgroup", PERCENT),
            cpu_usage_usec=r.int_(cg, "cpu_usage_usec", "cgroup", COUNT),
        )

    gpus = []
    for g in _first(r.objects(data, "gpus", "gpus"), MAX_GPUS, "GPUs", overflows):
        index = r.int_(g, "index", "gpus", COUNT)
        if index is None:
            continue
        reasons = g.get("throttle_reasons") or []
        reasons = [x for x in reasons if isinstance(x, str)] if isinstance(reasons, list) else []
        reasons = _first(
            reasons, MAX_THROTTLE_REASONS, f"throttle reasons of GPU {index}", overflows
        )
        reasons = [printable(x) for x in reasons]  # the box's text
        gpus.append(
            GpuSample(
                index=index,
                name=r.str_(g, "name", "gpus") or f"GPU {index}",
                uuid=r.str_(g, "uuid", "gpus"),
                util_pct=r.num(g, "util_pct", "gpus", PERCENT),
                mem_util_pct=r.num(g, "mem_util_pct", "gpus", PERCENT),
                sm_clock_mhz=r.num(g, "sm_clock_mhz", "gpus", CLOCK_MHZ),
                sm_clock_max_mhz=r.num(g, "sm_clock_max_mhz", "gpus", CLOCK_MHZ),
                mem_used=r.int_(g, "mem_used", "gpus", COUNT),
                mem_total=r.int_(g, "mem_total", "gpus", COUNT),
                power_w=r.num(g, "power_w", "gpus", WATTS),
                power_limit_w=r.num(g, "power_limit_w", "gpus", WATTS),
                temp_c=r.num(g, "temp_c", "gpus", CELSIUS),
                throttle_reasons=tuple(reasons),
                ecc_volatile=r.int_(g, "ecc_volatile", "gpus", COUNT),
                lost=r.get(g, "lost", bool, "gpus") is True,
            )
        )

    processes: tuple[GpuProcess, ...] | None = None
    if data.get("gpu_processes") is not None:
        procs = []
        rows = r.objects(data, "gpu_processes", "gpu_processes")
        for p in _first(rows, MAX_GPU_PROCESSES, PROCESSES_OVERFLOW, overflows):
            gpu_index, pid = (
                r.int_(p, "gpu_index", "gpu_processes", COUNT),
                r.int_(p, "pid", "gpu_processes", POSITIVE),
            )
            if gpu_index is None or pid is None:
                continue
            procs.append(
                GpuProcess(
                    gpu_index=gpu_index,
                    pid=pid,
                    # Cut: shown, never matched; a box's 300,000-character name went
                    # whole into every alert naming it (h532 #5).
                    name=printable(r.str_(p, "name", "gpu_processes") or "?", PROCESS_NAME_CHARS),
                    used_mem=r.int_(p, "used_mem", "gpu_processes", COUNT),
                    threads=r.int_(p, "threads", "gpu_processes", COUNT),
                    omp_threads=r.int_(p, "omp_threads", "gpu_processes", COUNT),
                )
            )
        processes = tuple(procs)

    xids = []
    for x in r.objects(data, "xids", "xids"):
        code = r.int_(x, "xid", "xids")
        if code is not None:
            xids.append(XidEvent(xid=code, text=r.str_(x, "text", "xids") or ""))

    # Read once: each bad field is one problem.
    t, seq = r.num(data, "t", "sample") or 0.0, r.int_(data, "seq", "sample") or 0
    listed = None
    if processes is not None:
        listed = ProcessListing(
            t=t,
            seq=seq,
            vram=tuple((g.index, g.mem_used) for g in gpus),
        )
    every = r.int_(data, "proc_every", "sample")

    load = data.get("loadavg")
    loadavg = None
    if isinstance(load, list) and len(load) == 3 and all(_finite(v) for v in load):
        loadavg = (float(load[0]), float(load[1]), float(load[2]))
    elif load is not None:
        problems.append(f"sample.loadavg: expected three finite numbers, got {_cut(load)}")

    box_id = r.str_(data, "box_id", "sample")
    if box_id is not None and valid_box_id(box_id) is None:
        problems.append(f"sample.box_id: not a box id: {box_id[:80]!r}")
        box_id = None

    lost_lines = r.get(data, "gpu_lost", list, "sample") or []
    # The box's text: a handful kept (the agent sends at most 8), each printable and cut.
    gpu_lost = tuple(printable(x, 300) for x in lost_lines[:MAX_LOST_LINES] if isinstance(x, str))

    cell = r.str_(data, "cell", "sample")
    checkpoints = read_checkpoints(data.get("ckpt"), problems)
    queue_done_at = r.num(data, "queue_done_at", "sample")

    source = data.get("gpu_source")
    if source not in ("nvml", "nvidia-smi", "none"):
        problems.append(f"gpu_source: unknown value {source!r}")
        source = "none"

    return HostSnapshot(
        host=host,
        t=t,
        seq=seq,
        hostname=r.str_(data, "hostname", "sample"),
        boot_id=r.str_(data, "boot_id", "sample"),
        # Never negative (h582 #4: -100 s of uptime and -1 bytes of memory were exported);
        # a machine has a CPU.
        uptime_s=r.num(data, "uptime_s", "sample", COUNT),
        loadavg=loadavg,
        host_cpus=r.int_(data, "host_cpus", "sample", LIMIT),
        host_mem_total=r.int_(data, "host_mem_total", "sample", COUNT),
        host_mem_available=r.int_(data, "host_mem_available", "sample", COUNT),
        disks=tuple(disks),
        disks_unread=disks_unread,
        cgroup=cgroup,
        gpu_source=source,
        gpu_unavailable_reason=r.str_(data, "gpu_unavailable_reason", "sample"),
        gpus=tuple(gpus),
        gpu_processes=processes,
        processes_listed=listed,
        process_every=every if every is not None and every >= 1 else None,
        xids=tuple(xids),
        log_mtime=r.num(data, "log_mtime", "sample"),
        artifact_mtime=r.num(data, "artifact_mtime", "sample"),
        cell=cell,
        queue_done_at=queue_done_at,
        queue_stopped=r.get(data, "queue_stopped", bool, "sample") is True,
        cell_started=r.num(data, "cell_started", "sample"),
        tracker_seen=r.get(data, "tracker_seen", bool, "sample"),
        problems=tuple(problems),
        box_id=box_id,
        container_start=r.num(data, "container_start", "sample"),
        overflows=tuple(overflows),
        kmsg_readable=r.get(data, "kmsg_readable", bool, "sample"),
        gpu_lost=gpu_lost,
        checkpoints=checkpoints,
    )


def carry_processes(previous: HostSnapshot | None, snap: HostSnapshot) -> HostSnapshot:
    """``snap``, given the last process list when the agent did not list processes in it.

    The list is carried only until the agent's next listing is due (``process_every``
    samples after it): a listing that then fails, or an agent that restarted (its sample
    numbers start again), leaves the list unknown rather than stale. So a process that
    left is shown at most one process interval after it left, never longer.
    """
    if snap.gpu_processes is not None or previous is None:
        return snap
    listed, every = previous.processes_listed, snap.process_every
    if previous.gpu_processes is None or listed is None or every is None:
        return snap
    if not 0 < snap.seq - listed.seq < every:
        return snap
    # The listing's own overflow travels with it, so its alert does not blink.
    cut = tuple(o for o in previous.overflows if o.what == PROCESSES_OVERFLOW)
    return replace(
        snap,
        gpu_processes=previous.gpu_processes,
        processes_listed=listed,
        overflows=snap.overflows + cut,
    )
