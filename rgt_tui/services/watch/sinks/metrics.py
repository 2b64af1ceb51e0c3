"""Prometheus metrics of a watched fleet (``rgt-tui watch --metrics ADDR:PORT``).

``FleetMetrics`` is a watch sink: ``on_host`` keeps each host's latest ``HostState`` and
nothing else, and a collector of its own turns those into metric families when the
text is built (``metrics_http``: on the event loop, about once per scrape, just before it
is due). So a scrape says what the latest samples said, an alert that cleared (or a
GPU, mount or throttle reason that went away) simply stops being exported instead of
lingering as a stale series, and the 1 Hz samples cost only a dict assignment.
docs/metrics.md lists every name and label.

Sample figures (GPU, disk, cgroup, host) are exported only while the host is connected:
a box that stopped answering has no current utilization, and the last one it reported,
held forever, would skew a fleet average. Its last sample's time, its alerts, its queue
and its cost stay. Text that comes from the box (GPU names, mounts, throttle reasons,
alert subjects) is made printable and cut before it becomes a label value.

A box cannot grow the scrape without bound (the snapshot keeps at most
``snapshot.MAX_GPUS`` GPUs and ``MAX_DISKS`` disks; more is the ``host.overflow`` alert),
and every series of a host is distinct: Prometheus drops a sample whose name and labels
repeat another's. GPUs that share an index, disks without a mount, mounts equal after
the cut and alerts whose subjects are equal after it get a suffix ``#2``, ``#3``, … in
the order the sample lists them (``gpu="0"``, ``gpu="0#2"``), so the same entity keeps
the same label from one scrape to the next.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping

from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.health import Alert
from rgt_tui.domain.queue_state import CELL_STATUSES
from rgt_tui.domain.snapshot import HostSnapshot
from rgt_tui.domain.text import is_digits, printable
from rgt_tui.services.watch.events import EVENT_KINDS, HostState, WatchEvent
from rgt_tui.services.watch.sinks import Sink
from rgt_tui.services.watch.sinks.metrics_http import MetricsServer

__all__ = ["FleetMetrics", "MetricsServer", "parse_listen_address"]

CONNECTION_STATES = (
    "connecting", "connected", "reconnecting", "lost", "unreached", "stopped", "ended",
)  # fmt: skip
LABEL_CHARS = 120  # a label value from the box: long enough for a path, bounded

H, G = ("host",), ("host", "gpu")
# name: (help, labels). Gauges unless listed in COUNTERS; base units in the name.
FAMILIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "rgt_host_info": ("A host of the fleet file (always 1), with its provider profile.", (*H, "profile")),
    "rgt_connection_state": ("1 for the host's connection state now, 0 for the others.", (*H, "state")),
    "rgt_connection_lost_since_timestamp_seconds": ("When the host's connection was lost (Unix time).", H),
    "rgt_sample_timestamp_seconds": ("Box clock of the host's latest sample (Unix time).", H),
    "rgt_host_uptime_seconds": ("Seconds since the box booted.", H),
    "rgt_host_memory_capacity_bytes": ("Host-wide memory (not the container's budget).", H),
    "rgt_host_memory_available_bytes": ("Host-wide available memory.", H),
    "rgt_gpu_info": ("A GPU of the host (always 1), with its name and UUID.", (*G, "name", "uuid")),
    "rgt_gpu_utilization_ratio": ("GPU utilization, 0-1.", G),
    "rgt_gpu_memory_controller_utilization_ratio": ("GPU memory controller utilization, 0-1.", G),
    "rgt_gpu_sm_clock_ratio": ("SM clock over its maximum, 0-1 (low under load: throttled).", G),
    "rgt_gpu_sm_clock_hertz": ("SM clock.", G),
    "rgt_gpu_sm_clock_max_hertz": ("Maximum SM clock.", G),
    "rgt_gpu_memory_used_bytes": ("GPU memory in use.", G),
    "rgt_gpu_memory_capacity_bytes": ("GPU memory in all.", G),
    "rgt_gpu_power_watts": ("GPU power draw.", G),
    "rgt_gpu_power_limit_watts": ("GPU power limit.", G),
    "rgt_gpu_temperature_celsius": ("GPU temperature.", G),
    "rgt_gpu_throttle_reasons": ("Number of active clock throttle reasons.", G),
    "rgt_gpu_throttle": ("1 for each active clock throttle reason.", (*G, "reason")),
    "rgt_gpu_ecc_volatile_errors": ("Volatile (since boot) ECC errors.", G),
    "rgt_disk_used_bytes": ("Bytes used on a watched file system.", (*H, "mount")),
    "rgt_disk_capacity_bytes": ("Size of a watched file system.", (*H, "mount")),
    "rgt_disk_inodes_used": ("Inodes used on a watched file system.", (*H, "mount")),
    "rgt_disk_inodes_capacity": ("Inodes of a watched file system (0: no inode limit).", (*H, "mount")),
    "rgt_cgroup_memory_used_bytes": ("The container's memory in use (its cgroup, U41).", H),
    "rgt_cgroup_memory_limit_bytes": ("The container's memory limit (absent: unlimited).", H),
    "rgt_cgroup_oom_kills": ("OOM kills in the container's cgroup since boot.", H),
    "rgt_queue_cells": ("Queue cells by status.", (*H, "state")),
    "rgt_queue_state": ("1 for the queue's state now (running, finished, ...).", (*H, "state")),
    "rgt_cost_per_hour": ("What the box bills per hour (the fleet file's currency).", H),
    "rgt_cost_so_far": ("What the box has billed since started_at, else since first seen (same currency).", H),
    "rgt_alert": ("1 for each active alert (severity, gotcha, subject).", (*H, "alert", "severity", "gotcha", "subject")),
    "rgt_watch_events": ("Events the watch derived (notifications), by kind.", ("kind",)),
    "rgt_fleet_entry_left_out": ("1 for each entry of the fleet file watch runs without (a mistake in it).", H),
    "rgt_pull_failing": ("1 while the host's periodic pulls fail, 0 once one came through.", H),
    "rgt_pull_last_success_timestamp_seconds": ("When the host's last periodic pull came through (Unix time).", H),
}  # fmt: skip
COUNTERS = frozenset({"rgt_cgroup_oom_kills", "rgt_watch_events"})


def _box_text(value: object) -> str:
    """A label value from the box: one printable line, bounded."""
    return printable(value, LABEL_CHARS)


def _distinct(keys: Iterable[tuple[str, ...]]) -> list[str]:
    """The last part of each key, suffixed ``#2``, ``#3``, … where the whole key repeats
    an earlier one (or an earlier suffixed one): distinct, and stable for a given order."""
    used: set[tuple[str, ...]] = set()
    out = []
    for key in keys:
        head, last = key[:-1], key[-1]
        label, n = last, 1
        while (*head, label) in used:
            n += 1
            label = f"{last}#{n}"
        used.add((*head, label))
        out.append(label)
    return out


class _Families:
    """The metric families of one scrape, made on first use (empty ones not exported)."""

    def __init__(self) -> None:
        self.made: dict[str, GaugeMetricFamily | CounterMetricFamily] = {}

    def add(self, name: str, labels: Iterable[str], value: float | None) -> None:
        if value is None:
            return
        family = self.made.get(name)
        if family is None:
            doc, names = FAMILIES[name]
            kind = CounterMetricFamily if name in COUNTERS else GaugeMetricFamily
            family = self.made[name] = kind(name, doc, labels=names)
        # The last fence: no label value carries a control character, whatever its source
        # (box text is already cleaned and cut; this catches one a future series forgets).
        family.add_metric([printable(v, None) for v in labels], float(value))


class FleetMetrics(Collector, Sink):
    """The fleet's figures for Prometheus: a watch sink (``on_host``, ``on_event``) and the
    collector of its own ``registry`` (with the watch process's CPU and memory)."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet
        self._states: dict[str, HostState] = {}
        self._events: Counter[str] = Counter({kind: 0 for kind in EVENT_KINDS})
        # Entries watch started without (their ``left_out`` events), until the file is
        # applied whole: no other series names them, so RgtHostLost could not fire.
        self._left_out: set[str] = set()
        # Boxes recorded as torn down that answered the latest look (``on_torn_down``):
        # after a watch restart they are not watched, and only this names them.
        self._torn_down: dict[str, Alert] = {}
        # Each host's periodic pulls (``on_pull``): failing or not, and when one last came
        # through. Nothing said it: a full local disk all night read green (an overnight
        # hour, s39 watch #5). From the first pull after a start.
        self._pull_failing: dict[str, bool] = {}
        self._pulled_at: dict[str, float] = {}
        # on_host, on_event and the scrape's text (MetricsServer) all run on the watch's
        # event loop: no lock. ``version`` moves with every change, so the server rebuilds
        # its text only when there is something new to say.
        self.version = 0
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)
        ProcessCollector(registry=self.registry)

    def on_host(self, host: HostConfig, state: HostState) -> None:
        """Keep ``state`` as the host's latest; the next scrape reports it."""
        self._states[host.name] = state
        self.version += 1

    def on_fleet(self, fleet: Fleet) -> None:
        """The fleet file changed: added hosts are listed (``rgt_host_info``), and a
        removed host's series go with it, rather than stay at their last values."""
        self.fleet = fleet
        self._left_out.clear()  # a reading with a mistake is refused whole, never applied
        kept = {h.name for h in fleet.hosts}
        self._states = {name: s for name, s in self._states.items() if name in kept}
        self._pull_failing = {n: v for n, v in self._pull_failing.items() if n in kept}
        self._pulled_at = {n: v for n, v in self._pulled_at.items() if n in kept}
        self.version += 1

    def on_torn_down(self, answering: Mapping[str, Alert]) -> None:
        """Keep the torn-down boxes that answered the latest look; the next scrape
        exports their alert, and drops one no longer answering."""
        self._torn_down = dict(answering)
        self.version += 1

    def on_pull(self, host: str, ok: bool, at: float) -> None:
        """Keep how ``host``'s latest periodic pull ended; the next scrape reports it. A
        pull of a host the fleet file no longer has (it ended after the reload) is
        dropped: its series would fire ``RgtPullFailing`` for a host that is gone."""
        if host not in {h.name for h in self.fleet.hosts}:
            return
        self._pull_failing[host] = not ok
        if ok:
            self._pulled_at[host] = at
        self.version += 1

    def on_event(self, event: WatchEvent) -> None:
        """Count the event by kind (``rgt_watch_events_total``)."""
        self._events[event.kind] += 1
        if event.kind == "left_out":
            self._left_out.add(event.host)
        self.version += 1

    def describe(self) -> list[Metric]:
        """Nothing up front: the families depend on what the hosts report."""
        return []

    def collect(self) -> Iterator[Metric]:
        """The metric families from every host's latest state (called per scrape)."""
        out = _Families()
        for host in self.fleet.hosts:
            out.add("rgt_host_info", (host.name, host.profile), 1)
        for name, state in sorted(self._states.items()):
            _host_metrics(out, name, state)
        for kind, count in sorted(self._events.items()):
            out.add("rgt_watch_events", (kind,), count)
        for name in sorted(self._left_out):
            out.add("rgt_fleet_entry_left_out", (name,), 1)
        for name, failing in sorted(self._pull_failing.items()):
            out.add("rgt_pull_failing", (name,), int(failing))
        for name, at in sorted(self._pulled_at.items()):
            out.add("rgt_pull_last_success_timestamp_seconds", (name,), at)
        listed = {h.name: h for h in self.fleet.hosts}
        for name, alert in sorted(self._torn_down.items()):
            state = self._states.get(name)
            if name not in listed or (state and any(a.id == alert.id for a in state.alerts)):
                continue  # removed since the look, or watched and said by its own state
            out.add("rgt_alert", (name, alert.id, alert.severity, alert.gotcha, ""), 1)
            if state is None:
                # It answers, so it may still bill: its rate counts in sum(...) (h513 #2:
                # after a restart the fleet's $/h read $0 beside this alert).
                out.add("rgt_cost_per_hour", (name,), listed[name].cost_per_hour)
        yield from out.made.values()

    async def serve(self, address: str, port: int) -> MetricsServer:
        """Serve ``/metrics`` on ``address:port`` only (port 0: any free one) from the
        running event loop, from text prepared on it (``metrics_http``); OSError (the port
        taken, an address not of this machine) is the caller's to word, with the
        ``--metrics`` value it came from."""
        return await MetricsServer.start(self.registry, lambda: self.version, address, port)


def _host_metrics(out: _Families, host: str, state: HostState) -> None:
    """One host's series: connection, sample figures (while connected), queue, cost, alerts."""
    for status in CONNECTION_STATES:
        out.add("rgt_connection_state", (host, status), 1 if state.connection == status else 0)
    if state.connection not in CONNECTION_STATES:  # a state this list does not know yet
        out.add("rgt_connection_state", (host, _box_text(state.connection)), 1)
    out.add("rgt_connection_lost_since_timestamp_seconds", (host,), state.lost_since)
    snap = state.snapshot
    if snap is not None:
        out.add("rgt_sample_timestamp_seconds", (host,), snap.t or None)
        if state.connection == "connected":
            _sample_metrics(out, host, snap)
    if state.queue is not None:
        counts = Counter(cell.status for cell in state.queue.cells)
        for status in (*CELL_STATUSES, *sorted(set(counts) - set(CELL_STATUSES))):
            out.add("rgt_queue_cells", (host, status), counts.get(status, 0))
        out.add("rgt_queue_state", (host, state.queue.state), 1)
    out.add("rgt_cost_per_hour", (host,), state.cost_per_hour)
    out.add("rgt_cost_so_far", (host,), state.cost_so_far)
    keys = [(a.id, a.severity, a.gotcha, _box_text(a.subject)) for a in state.alerts]
    for key, subject in zip(keys, _distinct(keys), strict=True):
        out.add("rgt_alert", (host, *key[:-1], subject), 1)


def _ratio(pct: float | None) -> float | None:
    return None if pct is None else pct / 100


def _mhz(mhz: float | None) -> float | None:
    return None if mhz is None else mhz * 1e6


def _sample_metrics(out: _Families, host: str, snap: HostSnapshot) -> None:
    """The figures of one agent sample (GPU, disk, cgroup, host)."""
    out.add("rgt_host_uptime_seconds", (host,), snap.uptime_s)
    out.add("rgt_host_memory_capacity_bytes", (host,), snap.host_mem_total)
    out.add("rgt_host_memory_available_bytes", (host,), snap.host_mem_available)
    gpu_labels = _distinct((str(g.index),) for g in snap.gpus)
    for g, gpu in zip(snap.gpus, gpu_labels, strict=True):
        labels = (host, gpu)
        out.add("rgt_gpu_info", (*labels, _box_text(g.name), _box_text(g.uuid or "")), 1)
        out.add("rgt_gpu_utilization_ratio", labels, _ratio(g.util_pct))
        out.add("rgt_gpu_memory_controller_utilization_ratio", labels, _ratio(g.mem_util_pct))
        out.add("rgt_gpu_sm_clock_ratio", labels, g.sm_clock_fraction)
        out.add("rgt_gpu_sm_clock_hertz", labels, _mhz(g.sm_clock_mhz))
        out.add("rgt_gpu_sm_clock_max_hertz", labels, _mhz(g.sm_clock_max_mhz))
        out.add("rgt_gpu_memory_used_bytes", labels, g.mem_used)
        out.add("rgt_gpu_memory_capacity_bytes", labels, g.mem_total)
        out.add("rgt_gpu_power_watts", labels, g.power_w)
        out.add("rgt_gpu_power_limit_watts", labels, g.power_limit_w)
        out.add("rgt_gpu_temperature_celsius", labels, g.temp_c)
        reasons = sorted({_box_text(r) for r in g.throttle_reasons})
        out.add("rgt_gpu_throttle_reasons", labels, len(reasons))
        for reason in reasons:
            out.add("rgt_gpu_throttle", (*labels, reason), 1)
        out.add("rgt_gpu_ecc_volatile_errors", labels, g.ecc_volatile)
    mounts = _distinct((_box_text(d.mount),) for d in snap.disks)
    for d, mount in zip(snap.disks, mounts, strict=True):
        labels = (host, mount)
        out.add("rgt_disk_used_bytes", labels, d.bytes_used)
        out.add("rgt_disk_capacity_bytes", labels, d.bytes_total)
        out.add("rgt_disk_inodes_used", labels, d.inodes_used)
        out.add("rgt_disk_inodes_capacity", labels, d.inodes_total)
    cg = snap.cgroup
    if cg is not None:
        out.add("rgt_cgroup_memory_used_bytes", (host,), cg.memory_current)
        out.add("rgt_cgroup_memory_limit_bytes", (host,), cg.memory_max)
        out.add("rgt_cgroup_oom_kills", (host,), cg.oom_kill)


def parse_listen_address(text: str) -> tuple[str, int]:
    """``ADDR:PORT`` (``127.0.0.1:9101``, ``[::1]:9101``, ``:9101`` for every address)
    as (address, port); ValueError naming the fix."""
    addr, sep, port = text.rpartition(":")
    if not sep or not is_digits(port) or not 0 <= int(port) <= 65535:
        raise ValueError(f"--metrics {text!r}: expected ADDR:PORT, e.g. 127.0.0.1:9101")
    if addr.startswith("[") and addr.endswith("]"):
        addr = addr[1:-1]
    return addr or "0.0.0.0", int(port)
