#!/usr/bin/env python3
"""Benchmark ``rgt-tui watch`` with Prometheus metrics: the watch's CPU share, scrape
latency, and whether its memory stays flat.

Three processes, so that each one's CPU is counted apart: the fleet (100 real loopback
boxes, asyncssh servers each running the real agent at 1 Hz), the watch, and this
driver, which scrapes the watch's ``/metrics`` every ``--scrape-every`` seconds as
Prometheus would and samples the watch process's CPU time and resident memory.

The watch process is ``rgt-tui watch --metrics`` when the command line has it (``--mode
cli``, the default when it does); ``--mode metrics`` runs instead, in a process of this
script, one real HostMonitor per box feeding FleetMetrics through ``host_state`` — the
telemetry and metrics half of the watch, without its notification, pull and stop sinks.

It is scraped every ``--scrape-every`` seconds from its first answer on; measuring (CPU,
scrape p50/p95, RSS) starts ``--settle`` seconds (35) after every host's first sample,
past the start's bursts (every host's first queue poll), and "p95 from the first scrape"
counts the start's scrapes too; scrapes over 100 ms are listed with when they happened.
``--hosts 25,100,250,500`` runs each size in turn and prints a table of how the cost
grows (with the load average: the machine may be doing other work); ``--minutes 10``
is the RSS check. ``--memory-hour`` runs an hour-equivalent in-process instead: ``--hosts`` hosts' agent
samples (real parser and health rules) at 1 Hz for 3600 rounds, a scrape every 5,
printing resident memory every 10 minutes-equivalent. Last line of a normal run:
``cpu_percent: X p95_ms: Y``. Targets: X ≤ 10, Y ≤ 50.

    .venv/bin/python scripts/bench_watch.py [--hosts 25,100,250,500] [--seconds 120] [--mode metrics]
    .venv/bin/python scripts/bench_watch.py --hosts 500 --minutes 10
    .venv/bin/python scripts/bench_watch.py --memory-hour
One script on purpose, past 450 lines: the fleet, the watch and the scraper are three
processes of this one file, run and read together; the product never imports it.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import gzip
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GIB = 2**30


# -- the fleet (a separate process) ----------------------------------------------------


async def serve_fleet(n: int, folder: Path, gpus: bool) -> None:
    """Run n loopback boxes until stdin closes (``gpus``: each replays a recorded H100)."""
    from rgt_tui.demo.loopback import LoopbackFleet

    fleet = LoopbackFleet(n, folder, gpus=gpus, costs=[("runpod", 2.49)] * n)
    await fleet.start()
    print("READY", flush=True)
    try:
        await asyncio.to_thread(sys.stdin.read)
    finally:
        await fleet.stop()


def start_child(args: list[str], ready: str | None) -> subprocess.Popen[str]:
    """This script (or rgt-tui) as a child; with ``ready``, wait for that first line."""
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    if ready is not None:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if line.strip() != ready:
            proc.kill()
            raise SystemExit(f"{args[1:3]} failed to start: {line!r}")
    return proc


def stop_child(proc: subprocess.Popen[str], stdin_stops: bool = True) -> None:
    """Close its stdin (this script's children stop on that), then terminate (``rgt-tui
    watch`` stops on SIGTERM), then kill."""
    if proc.stdin is not None:
        proc.stdin.close()
    try:
        proc.wait(10 if stdin_stops else 0.1)
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


# -- the watch's metrics half (a separate process, --mode metrics) -----------------------


async def watch_metrics(hosts_file: Path, port: int) -> None:
    """One HostMonitor per host over one FleetConnections, feeding FleetMetrics."""
    from rgt_tui.services.connections import FleetConnections
    from rgt_tui.services.fleet.file import load_fleet
    from rgt_tui.services.telemetry import HostMonitor, HostUpdate
    from rgt_tui.services.watch.sinks.metrics import FleetMetrics
    from rgt_tui.services.watch.state import host_state
    from rgt_tui.transport import transport_for

    fleet = load_fleet(hosts_file)
    metrics = FleetMetrics(fleet)
    server = await metrics.serve("127.0.0.1", port)
    transports = {h.name: transport_for(h) for h in fleet.hosts}
    connections = FleetConnections(list(fleet.hosts), factory=lambda h: transports[h.name])
    by_name = {h.name: h for h in fleet.hosts}

    def emit(update: HostUpdate) -> None:
        host = by_name[update.host]
        metrics.on_host(host, host_state(host, update, None, time.time()))

    monitors = [
        HostMonitor(
            h,
            transports[h.name],
            interval=fleet.poll_seconds,
            thresholds=fleet.thresholds,
            connections=connections,
        )
        for h in fleet.hosts
    ]
    tasks = [asyncio.create_task(m.run(emit)) for m in monitors]
    print("READY", flush=True)
    try:
        await asyncio.to_thread(sys.stdin.read)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(*(t.close() for t in transports.values()), return_exceptions=True)
        server.close()


def cli_has_watch() -> bool:
    """Whether ``rgt-tui watch --metrics`` exists yet."""
    done = subprocess.run(
        [sys.executable, "-m", "rgt_tui", "watch", "--help"], capture_output=True, text=True
    )
    return done.returncode == 0 and "--metrics" in done.stdout


# -- the measurement ----------------------------------------------------------------------


# What Prometheus 2.x sends: it asks for OpenMetrics (the costlier of the two formats to
# write) and gzip, so the figures are those of a real scrape.
SCRAPE_HEADERS = {
    "Accept": "application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
    "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
    "Accept-Encoding": "gzip",
}


def scrape(url: str) -> tuple[float, str]:
    """Milliseconds for one full scrape (as Prometheus asks for it), and its body."""
    t0 = time.perf_counter()
    request = urllib.request.Request(url, headers=SCRAPE_HEADERS)
    with urllib.request.urlopen(request, timeout=30) as response:
        body = response.read()
        gzipped = response.headers.get("Content-Encoding") == "gzip"
    ms = (time.perf_counter() - t0) * 1000
    return ms, (gzip.decompress(body) if gzipped else body).decode()


SLOW_MS = 100  # a scrape this slow is listed, with when it happened


def proc_cpu(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return t.user + t.system


def measure(args: argparse.Namespace, folder: Path) -> dict[str, float]:
    hosts_file = folder / "hosts.toml"
    # Every host sampled at --interval: the fleet's poll, as a user's fleet file says it.
    hosts_file.write_text(f"[fleet]\npoll_seconds = {args.interval}\n\n" + hosts_file.read_text())
    port = args.port
    url = f"http://127.0.0.1:{port}/metrics"
    if args.mode == "cli":
        profile = ["-m", "cProfile", "-o", str(args.profile)] if args.profile else []
        command = [sys.executable, *profile, "-m", "rgt_tui", "--hosts", str(hosts_file), "watch"]
        watch = start_child([*command, "--metrics", f"127.0.0.1:{port}"], None)
    else:
        command = [sys.executable, __file__, "--watch-metrics", str(hosts_file)]
        watch = start_child([*command, "--port", str(port)], "READY")
    try:
        process = psutil.Process(watch.pid)
        rss_start = process.memory_info().rss
        deadline = time.monotonic() + args.warmup
        # Scraped every --scrape-every from the first answer on, as Prometheus would: the
        # start's scrapes (until every host is sampled, then --settle) count in
        # "p95 from the first scrape"; the window after them gives CPU and p50/p95.
        start_ms: list[float] = []
        slow_start: list[str] = []
        started = time.perf_counter()
        sampled = 0
        while sampled < args.hosts:
            if watch.poll() is not None:
                raise SystemExit(f"the watch process exited with {watch.returncode}")
            if time.monotonic() > deadline:
                raise SystemExit(
                    f"only {sampled}/{args.hosts} hosts sampled after {args.warmup:g}s"
                )
            try:
                ms, body = scrape(url)
            except OSError:
                time.sleep(1)
                continue
            start_ms.append(ms)
            if ms > SLOW_MS:
                slow_start.append(f"{ms:.0f} ms at {time.perf_counter() - started:.0f} s")
            sampled = body.count("\nrgt_sample_timestamp_seconds{")
            time.sleep(max(0.0, args.scrape_every - ms / 1000))
        settled = time.monotonic() + args.settle
        while time.monotonic() < settled:
            ms, _ = scrape(url)
            start_ms.append(ms)
            time.sleep(max(0.0, args.scrape_every - ms / 1000))

        latencies: list[float] = []
        slow: list[str] = []
        rss: list[tuple[float, int]] = []
        series = 0
        load0 = os.getloadavg()[0]
        cpu0, wall0 = proc_cpu(process), time.perf_counter()
        end = wall0 + args.seconds
        while time.perf_counter() < end:
            at = time.perf_counter() - wall0
            ms, body = scrape(url)
            latencies.append(ms)
            if ms > SLOW_MS:
                slow.append(f"{ms:.0f} ms at {at:.0f} s")
            series = sum(1 for line in body.splitlines() if line and line[0] != "#")
            rss.append((time.perf_counter() - wall0, process.memory_info().rss))
            time.sleep(max(0.0, args.scrape_every - ms / 1000))
        wall = time.perf_counter() - wall0
        cpu = proc_cpu(process) - cpu0
        load1 = os.getloadavg()[0]
    finally:
        stop_child(watch, stdin_stops=args.mode != "cli")
    if slow_start:  # while every host connects and sends its first sample
        print(f"start-up scrapes over {SLOW_MS} ms: {', '.join(slow_start)}", file=sys.stderr)
    if slow:  # when: a stall every 30 s, say, points at what runs every 30 s
        print(f"scrapes over {SLOW_MS} ms: {', '.join(slow)}", file=sys.stderr)
    everything = sorted(start_ms + latencies)
    latencies.sort()
    half = len(rss) // 2
    first, last = (statistics.mean(r for _, r in part) for part in (rss[:half], rss[half:]))
    return {
        "hosts": args.hosts,
        "cpu_percent": cpu / wall * 100,
        "scrapes": len(latencies),
        "series_per_scrape": series,
        "p50_ms": statistics.median(latencies),
        "p95_ms": percentile(latencies, 0.95),
        "p95_from_first_ms": percentile(everything, 0.95),
        "max_ms": everything[-1],
        "rss_start_mib": rss_start / 2**20,
        "rss_measured_start_mib": rss[0][1] / 2**20,
        "rss_end_mib": rss[-1][1] / 2**20,
        "rss_first_half_mib": first / 2**20,
        "rss_second_half_mib": last / 2**20,
        "load": (load0 + load1) / 2,
    }


def percentile(ordered: list[float], q: float) -> float:
    """The q-th value of a sorted list (nearest rank)."""
    return ordered[max(0, round(len(ordered) * q) - 1)]


def table(rows: list[dict[str, float]]) -> str:
    """How the watch's cost grows with the fleet: one line per fleet size."""
    lines = [
        "hosts | CPU % of a core | scrape p50 / p95 ms | p95 from first scrape | max ms | "
        "series | RSS MiB (window start -> end) | load avg",
        "---|---|---|---|---|---|---|---",
    ]
    for r in rows:
        lines.append(
            f"{r['hosts']:.0f} | {r['cpu_percent']:.1f} | {r['p50_ms']:.1f} / {r['p95_ms']:.1f} | "
            f"{r['p95_from_first_ms']:.1f} | {r['max_ms']:.0f} | {r['series_per_scrape']:.0f} | "
            f"{r['rss_measured_start_mib']:.1f} -> {r['rss_end_mib']:.1f} | {r['load']:.1f}"
        )
    return "\n".join(lines)


# -- the hour-equivalent (in-process) ---------------------------------------------------


def sample(host: str, seq: int, t: float) -> dict:
    """An agent line with moving figures (two GPUs, two mounts)."""
    util = random.uniform(0, 100)
    return {
        "v": 1, "t": t, "seq": seq, "hostname": host, "boot_id": "b", "uptime_s": 3600.0 + seq,
        "host_cpus": 32, "host_mem_total": 512 * GIB, "host_mem_available": 300 * GIB,
        "disks": [{"path": p, "mount": p, "bytes_used": int(random.uniform(50, 400) * GIB),
                   "bytes_total": 500 * GIB, "inodes_used": random.randint(10**5, 9 * 10**6),
                   "inodes_total": 10**7} for p in ("/", "/workspace")],
        "cgroup": {"version": 2, "memory_current": int(random.uniform(8, 60) * GIB),
                   "memory_max": 64 * GIB, "oom_kill": 0, "cpu_quota_vcpus": 8.0},
        "gpu_source": "nvml",
        "gpus": [{"index": i, "name": "A100", "uuid": f"GPU-{host}-{i}", "util_pct": util,
                  "sm_clock_mhz": 1300, "sm_clock_max_mhz": 1410, "mem_used": 60 * GIB,
                  "mem_total": 80 * GIB, "power_w": 300, "power_limit_w": 400, "temp_c": 70,
                  "throttle_reasons": ["sw_power_cap"] if util > 95 else []} for i in range(2)],
    }  # fmt: skip


def memory_hour(args: argparse.Namespace, folder: Path) -> None:
    from prometheus_client import generate_latest

    from rgt_tui.domain.health import HealthContext, HealthState, evaluate
    from rgt_tui.domain.snapshot import snapshot_from_agent
    from rgt_tui.services.fleet.file import load_fleet
    from rgt_tui.services.telemetry import ConnectionState, HostUpdate
    from rgt_tui.services.watch.sinks.metrics import FleetMetrics
    from rgt_tui.services.watch.state import host_state

    text = "".join(
        f'[[hosts]]\nname = "h{i}"\nssh = "root@10.9.0.{i % 250}"\ncost_per_hour = 1.5\n\n'
        for i in range(args.hosts)
    )
    (folder / "hosts.toml").write_text(text)
    fleet = load_fleet(folder / "hosts.toml")
    metrics = FleetMetrics(fleet)
    health = {h.name: HealthState() for h in fleet.hosts}
    process, t0 = psutil.Process(), time.time()
    scrape_ms: list[float] = []
    for second in range(3601):
        now = t0 + second
        for h in fleet.hosts:
            snap = snapshot_from_agent(h.name, sample(h.name, second, now))
            health[h.name] = health[h.name].observe(snap)
            alerts = evaluate(snap, health[h.name], HealthContext(cost_per_hour=1.5))
            update = HostUpdate(h.name, ConnectionState("connected", t0), snap, alerts, health[h.name], t0)  # fmt: skip
            metrics.on_host(h, host_state(h, update, None, now))
        if second % 5 == 0:
            started = time.perf_counter()
            generate_latest(metrics.registry)
            scrape_ms.append((time.perf_counter() - started) * 1000)
        if second % 600 == 0:
            gc.collect()
            print(f"minute {second // 60:>2}: rss {process.memory_info().rss / 2**20:.1f} MiB")
    scrape_ms.sort()
    p95 = scrape_ms[round(len(scrape_ms) * 0.95) - 1]
    print(f"hosts: {args.hosts}; {len(scrape_ms)} in-process generations, p95 {p95:.1f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--hosts",
        type=lambda text: [int(n) for n in text.split(",")],
        default=[100],
        help="fleet sizes, e.g. 25,100,250,500: one run each, then a table",
    )
    parser.add_argument("--seconds", type=float, default=120.0, help="measurement window")
    parser.add_argument(
        "--minutes", type=float, help="measurement window in minutes (the RSS check: 10)"
    )
    parser.add_argument("--warmup", type=float, default=180.0, help="max s to sample every host")
    parser.add_argument("--interval", type=float, default=1.0, help="agent sample interval (s)")
    parser.add_argument("--scrape-every", type=float, default=5.0)
    parser.add_argument(
        "--settle", type=float, default=35.0, help="s after every host sampled, before measuring"
    )
    parser.add_argument("--port", type=int, default=19101)
    parser.add_argument(
        "--boxes-nice",
        type=int,
        default=0,
        help="run the boxes' process (servers and agents) at this nice level: on one "
        "machine they compete with the watch for the CPU, as real boxes never do",
    )
    parser.add_argument(
        "--pin",
        action="store_true",
        help="the boxes on CPUs 1.. and the watch (with this driver) on CPU 0: the watch "
        "measured on a core of its own, as beside real boxes",
    )
    parser.add_argument("--mode", choices=("cli", "metrics"), help="default: cli when it exists")
    parser.add_argument(
        "--gpus", action="store_true", help="boxes replay a recorded H100 (a process per sample)"
    )
    parser.add_argument("--memory-hour", action="store_true", help="the hour-equivalent run")
    parser.add_argument(
        "--profile",
        type=Path,
        help="cProfile the watch process (start-up included) into this file; its figures "
        "then carry the profiler's cost",
    )
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--watch-metrics", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.serve:
        asyncio.run(serve_fleet(args.serve, args.dir, args.gpus))
        return 0
    if args.watch_metrics:
        asyncio.run(watch_metrics(args.watch_metrics, args.port))
        return 0

    if args.minutes:
        args.seconds = args.minutes * 60
    sizes = args.hosts
    if args.memory_hour:
        with tempfile.TemporaryDirectory(prefix="rgt-bench-watch-") as tmp:
            args.hosts = sizes[0]
            memory_hour(args, Path(tmp))
        return 0
    args.mode = args.mode or ("cli" if cli_has_watch() else "metrics")
    rows = []
    for n in sizes:
        args.hosts = n
        rows.append(run_size(args))
        print(f"{n} hosts: " + ", ".join(f"{k} {v:.1f}" for k, v in rows[-1].items()), flush=True)
    what = "rgt-tui watch --metrics" if args.mode == "cli" else "monitors + FleetMetrics only"
    print(
        f"\nwatch: {what}; real agents over loopback SSH at {args.interval:g} s (boxes in "
        f"another process); scraped every {args.scrape_every:g} s; window {args.seconds:g} s "
        f"after {args.settle:g} s settling; cores {os.cpu_count()}; boxes at nice {args.boxes_nice}"
        + ("; boxes pinned to CPUs 1.., the watch to CPU 0" if args.pin else "")
    )
    print(table(rows))
    last = rows[-1]
    print(f"cpu_percent: {last['cpu_percent']:.1f} p95_ms: {last['p95_ms']:.1f}")
    return 0


def run_size(args: argparse.Namespace) -> dict[str, float]:
    """One fleet size: its boxes in a process of their own, the watch, the scrapes."""
    # Cleanup errors ignored: an agent still exiting may write into its box's folder as
    # it is removed, and a failed rmtree lost a ten-minute run's figures (after they
    # were measured, before they were printed).
    with tempfile.TemporaryDirectory(prefix="rgt-bench-watch-", ignore_cleanup_errors=True) as tmp:
        folder = Path(tmp)
        # A fresh journal: a run's boxes must not retire the last run's in the user's.
        os.environ["XDG_STATE_HOME"] = str(folder / "state")
        # The boxes stand for other machines, whose CPU real boxes never take from the
        # watch: --boxes-nice lowers their priority (each agent process is weighed on its
        # own, so 500 of them still outweigh the watch); --pin gives them CPUs of their own
        # (the last ones) and keeps this driver and the watch on the first.
        nice = ["nice", "-n", str(args.boxes_nice)] if args.boxes_nice else []
        cores = os.cpu_count() or 1
        pin = ["taskset", "-c", f"1-{cores - 1}"] if args.pin and cores > 1 else []
        if pin:
            os.sched_setaffinity(0, {0})  # this driver, and the watch it starts
        fleet = start_child(
            [
                *pin,
                *nice,
                sys.executable,
                __file__,
                "--serve",
                str(args.hosts),
                "--dir",
                str(folder),
            ]
            + ["--gpus"] * args.gpus,
            "READY",
        )
        try:
            return measure(args, folder)
        finally:
            stop_child(fleet)


if __name__ == "__main__":
    raise SystemExit(main())
