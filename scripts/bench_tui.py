#!/usr/bin/env python3
"""Benchmark the TUI under a streaming fleet: the app's CPU share and key latency.

By default 100 real loopback boxes (asyncssh servers, each running the real agent at
1 Hz) are served by a *separate* process, so that their CPU is not counted; this process
runs the app headless with one real ``HostMonitor`` (SSH client) per box, which is what
a user's ``rgt-tui`` process does. ``--synthetic`` swaps the SSH fleet for in-process
monitors that emit agent-shaped samples at the same rate (no servers, no agents).

After a warm-up (every host connected and sampled) it measures, over ``--seconds``:
this process's CPU time / wall time, and for keypresses sent every ``--key-every``
seconds the time from sending the key to the screen update that follows it.

``--hosts 25,100,250,500`` runs each size in turn (fresh boxes each) and prints a table
of how the cost grows, with RSS and the load average (the machine may be busy with other
work). Last line (the last size): ``cpu_percent: X p95_ms: Y``. Targets: X ≤ 15 at 100
hosts and ≤ 25 at 500, Y ≤ 50.

    .venv/bin/python scripts/bench_tui.py [--hosts 25,100,250,500] [--seconds 60] [--synthetic]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import gc
import itertools
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import psutil
from textual import events

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# As rgt_tui/entry.py does: asyncssh's import warns of cryptography's DSA deprecation,
# lines of nothing the bench measures before its figures.
warnings.filterwarnings("ignore", message="DSA is deprecated", module=r"asyncssh\.")

from rgt_tui.app import RgtApp  # noqa: E402
from rgt_tui.domain.health import HealthContext, HealthState, evaluate  # noqa: E402
from rgt_tui.domain.snapshot import snapshot_from_agent  # noqa: E402
from rgt_tui.messages import HostUpdated  # noqa: E402
from rgt_tui.services.fleet.file import load_fleet  # noqa: E402
from rgt_tui.services.telemetry import ConnectionState, HostUpdate  # noqa: E402

# A cycle in which every key moves the selection from where the previous one left it
# (right, down, left, up returns to the start; j and k are down and up again). "l" is
# launch and "h" at the first column moves nothing: either would wait out the timeout.
KEYS = ["right", "down", "left", "up", "j", "k"]
GIB = 2**30


# -- the fleet side (a separate process) ---------------------------------------------


async def serve(n: int, folder: Path) -> None:
    """Run n loopback boxes until stdin closes."""
    from rgt_tui.demo.loopback import LoopbackFleet

    fleet = LoopbackFleet(n, folder)
    await fleet.start()
    print("READY", flush=True)
    try:
        await asyncio.to_thread(sys.stdin.read)
    finally:
        await fleet.stop()


def start_fleet_process(n: int, folder: Path) -> subprocess.Popen[str]:
    """This script in ``--serve`` mode; returns once its boxes listen."""
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(n), "--dir", str(folder)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line.strip() != "READY":
        proc.kill()
        raise SystemExit(f"fleet process failed to start: {line!r}")
    return proc


def tree_cpu(proc: psutil.Process) -> float:
    """CPU seconds of a process and its living children (the agents)."""
    total = 0.0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            continue
    return total


# -- the synthetic source --------------------------------------------------------------


class SyntheticMonitor:
    """Emits one agent-shaped sample per second, with moving figures."""

    def __init__(self, host: str, interval: float = 1.0) -> None:
        self.host = host
        self.interval = interval
        self.health = HealthState()

    def sample(self, seq: int) -> HostUpdate:
        """What HostMonitor would emit for sample ``seq``: parsed, health rules applied."""
        util = random.uniform(20, 100)
        data = {
            "v": 1, "t": time.time(), "seq": seq, "hostname": self.host, "boot_id": "b",
            "uptime_s": 3600.0 + seq, "host_cpus": 32,
            "disks": [{"path": "/", "mount": "/", "bytes_used": int(random.uniform(50, 400) * GIB),
                       "bytes_total": 500 * GIB, "inodes_used": random.randint(10**5, 9 * 10**6),
                       "inodes_total": 10**7}],
            "cgroup": {"version": 2, "memory_current": int(random.uniform(8, 60) * GIB),
                       "memory_max": 64 * GIB, "oom_kill": 0, "cpu_quota_vcpus": 8.0},
            "gpu_source": "nvml",
            "gpus": [{"index": i, "name": "A100", "util_pct": util, "sm_clock_mhz": 1300,
                      "sm_clock_max_mhz": 1410, "mem_used": 60 * GIB, "mem_total": 80 * GIB,
                      "power_w": 300, "power_limit_w": 400, "temp_c": 70, "throttle_reasons": []}
                     for i in range(2)],
            "gpu_processes": [],
        }  # fmt: skip
        snap = snapshot_from_agent(self.host, data)
        self.health = self.health.observe(snap)
        conn = ConnectionState("connected", 0.0)
        alerts = evaluate(snap, self.health, HealthContext())
        return HostUpdate(self.host, conn, snap, alerts, self.health)

    async def run(self, emit) -> None:  # type: ignore[no-untyped-def]
        await asyncio.sleep(random.random() * self.interval)  # spread the hosts out
        for seq in itertools.count(1):
            emit(self.sample(seq))
            await asyncio.sleep(self.interval)

    def request_reconnect(self) -> None:
        pass


# -- the measurement ---------------------------------------------------------------------


async def key_to_screen(app: RgtApp, key: str) -> float:
    """Milliseconds from a keypress arriving to the screen update that shows its effect.

    The key goes in as the terminal driver would deliver it (not through Pilot, whose
    "wait until the CPU is idle" would measure the stream, not the key). Every key in
    KEYS moves the selection, so the effect is a change of focus; the update is the
    refresh that follows it.
    """
    loop = asyncio.get_running_loop()
    before = app.screen.focused
    t0 = time.perf_counter()
    app.post_message(events.Key(key, key if len(key) == 1 else None))
    while app.screen.focused is before and time.perf_counter() - t0 < 5:
        await asyncio.sleep(0.002)
    refreshed = loop.create_future()
    app.call_after_refresh(lambda: refreshed.done() or refreshed.set_result(time.perf_counter()))
    try:
        return (await asyncio.wait_for(refreshed, 10) - t0) * 1000
    except asyncio.TimeoutError:
        raise SystemExit(
            f"no screen update after {key!r}; app running: {app.is_running}, error: {app._exception!r}"
        ) from None


def print_heap() -> None:
    """The objects the collector walks (not frozen), most common types first."""
    from collections import Counter

    counts = Counter(type(o).__qualname__ for o in gc.get_objects())
    print(
        f"gc tracked (not frozen): {sum(counts.values())}; frozen: {gc.get_freeze_count()}",
        file=sys.stderr,
    )
    for name, n in counts.most_common(25):
        print(f"  {n:>8} {name}", file=sys.stderr)


async def measure(args: argparse.Namespace, folder: Path) -> dict[str, float]:
    """Run the app headless on the fleet in ``folder``; warm up, then measure the window."""
    if args.synthetic:
        price = f"cost_per_hour = {args.price}\n" if args.price else ""
        toml = "".join(
            f'[[hosts]]\nname = "h{i}"\nssh = "root@10.9.0.{i % 250}"\n{price}\n'
            for i in range(args.hosts)
        )
        (folder / "hosts.toml").write_text(toml)
        fleet = load_fleet(folder / "hosts.toml")
        monitors = {h.name: SyntheticMonitor(h.name) for h in fleet.hosts}
    else:
        # The app's own monitors, over its own connections: what a user's rgt-tui runs.
        fleet = dataclasses.replace(load_fleet(folder / "hosts.toml"), poll_seconds=args.interval)
        monitors = None

    processed = 0

    def hook(message: object) -> None:
        nonlocal processed
        if isinstance(message, HostUpdated):
            processed += 1

    app = RgtApp(fleet, monitors=monitors, config_dir=folder / "config")  # type: ignore[arg-type]
    width, height = (int(v) for v in args.size.split("x"))
    async with app.run_test(headless=True, size=(width, height), message_hook=hook):
        loop = asyncio.get_running_loop()
        deadline = loop.time() + args.warmup
        while sum(1 for u in app.latest.values() if u.snapshot is not None) < len(fleet.hosts):
            if loop.time() > deadline:
                ready = sum(1 for u in app.latest.values() if u.snapshot is not None)
                raise SystemExit(
                    f"only {ready}/{len(fleet.hosts)} hosts sampled after {args.warmup:g}s"
                )
            await asyncio.sleep(0.5)
        await asyncio.sleep(2)  # let the first wave of draws settle

        draws0 = sum(p.draws for p in app.fleet_screen.panes.values())
        processed0 = processed
        profiler = None
        if args.profile:
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        # Full (generation 2) collections stop the loop for as long as the heap takes to
        # walk: with 100 hosts they, not the drawing, decide the slowest keys.
        full_gc_ms: list[float] = []
        gc_started = 0.0

        def on_gc(phase: str, info: dict[str, int]) -> None:
            nonlocal gc_started
            if info["generation"] != 2:
                return
            if phase == "start":
                gc_started = time.perf_counter()
            else:
                full_gc_ms.append((time.perf_counter() - gc_started) * 1000)

        gc.callbacks.append(on_gc)
        me = psutil.Process()
        rss0, load0 = me.memory_info().rss, os.getloadavg()[0]
        cpu0, wall0 = time.process_time(), time.perf_counter()
        latencies: list[float] = []
        keys = itertools.cycle(KEYS)
        end = wall0 + args.seconds
        while time.perf_counter() < end:
            await asyncio.sleep(args.key_every)
            latencies.append(await key_to_screen(app, next(keys)))
        wall = time.perf_counter() - wall0
        cpu = time.process_time() - cpu0
        rss1, load1 = me.memory_info().rss, os.getloadavg()[0]
        gc.callbacks.remove(on_gc)
        if profiler is not None:
            import pstats

            profiler.disable()
            stats = pstats.Stats(profiler, stream=sys.stderr)
            stats.sort_stats(args.profile).print_stats(40)
            if args.profile_file:
                stats.dump_stats(args.profile_file)
        draws = sum(p.draws for p in app.fleet_screen.panes.values()) - draws0
        if args.heap:
            print_heap()
        samples = processed - processed0
    latencies.sort()
    return {
        "hosts": args.hosts,
        "rss_start_mib": rss0 / 2**20,
        "rss_end_mib": rss1 / 2**20,
        "load": (load0 + load1) / 2,
        "cpu_percent": cpu / wall * 100,
        "p50_ms": statistics.median(latencies),
        "p95_ms": latencies[max(0, int(len(latencies) * 0.95) - 1)],
        "keys": len(latencies),
        "samples_per_s": samples / wall,
        "pane_draws_per_s": draws / wall,
        "full_gc_per_min": len(full_gc_ms) / wall * 60,
        "full_gc_max_ms": max(full_gc_ms, default=0.0),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--hosts",
        type=lambda text: [int(n) for n in text.split(",")],
        default=[100],
        help="fleet sizes, e.g. 25,100,250,500: one run each, then a table",
    )
    parser.add_argument(
        "--seconds", type=float, default=60.0, help="measurement window (p95 of ~2 keys/s)"
    )
    parser.add_argument(
        "--warmup", type=float, default=120.0, help="max seconds to get every host sampled"
    )
    parser.add_argument("--interval", type=float, default=1.0, help="agent sample interval (s)")
    parser.add_argument("--key-every", type=float, default=0.5)
    parser.add_argument("--size", default="200x50", help="terminal size, WxH")
    parser.add_argument("--synthetic", action="store_true", help="in-process samples, no SSH")
    parser.add_argument(
        "--price", type=float, help="with --synthetic: every host's cost_per_hour (USD)"
    )
    parser.add_argument(
        "--profile", metavar="SORT", help="cProfile the window (e.g. cumulative), to stderr"
    )
    parser.add_argument(
        "--profile-file", type=Path, help="with --profile: also save it (pstats format)"
    )
    parser.add_argument(
        "--heap", action="store_true", help="the collector's heap by type, to stderr"
    )
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.serve:
        asyncio.run(serve(args.serve, args.dir))
        return 0

    if args.one:  # one size, for the table's parent process: its figures as JSON
        args.hosts = args.hosts[0]
        print(json.dumps(run_size(args)), flush=True)
        return 0

    sizes, rows = args.hosts, []
    for n in sizes:
        # Each size in a process of its own, as a user runs one fleet: one after another
        # in this process, the larger sizes carried the smaller ones' heap (500 hosts
        # read 31 % of a core after 25/100/250, 23-24 % alone).
        rows.append(one_size(n))
        print(f"{n} hosts: " + ", ".join(f"{k} {v:.1f}" for k, v in rows[-1].items()), flush=True)
    mode = "synthetic in-process samples" if args.synthetic else "real agents over loopback SSH"
    print(
        f"\nTUI headless, {mode} at {args.interval:g} s (boxes in another process); a key "
        f"every {args.key_every:g} s; window {args.seconds:g} s; terminal {args.size}; "
        f"cores {os.cpu_count()}"
    )
    print(table(rows))
    last = rows[-1]
    print(f"cpu_percent: {last['cpu_percent']:.1f} p95_ms: {last['p95_ms']:.1f}")
    return 0


def one_size(hosts: int) -> dict[str, float]:
    """Run this script for ``hosts`` hosts in a child process, with this run's options."""
    argv, skip = [], False
    for arg in sys.argv[1:]:  # every option but --hosts (and its value)
        if skip:
            skip = False
        elif arg == "--hosts":
            skip = True
        elif not arg.startswith("--hosts="):
            argv.append(arg)
    child = [sys.executable, str(Path(__file__).resolve()), *argv, "--hosts", str(hosts), "--one"]
    out = subprocess.run(child, stdout=subprocess.PIPE, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def table(rows: list[dict[str, float]]) -> str:
    """How the TUI's cost grows with the fleet: one line per fleet size."""
    lines = [
        "hosts | CPU % of a core | key p50 / p95 ms | samples/s | full GCs/min (max ms) | "
        "RSS MiB (window start -> end) | load avg",
        "---|---|---|---|---|---|---",
    ]
    for r in rows:
        lines.append(
            f"{r['hosts']:.0f} | {r['cpu_percent']:.1f} | {r['p50_ms']:.1f} / {r['p95_ms']:.1f} | "
            f"{r['samples_per_s']:.0f} | {r['full_gc_per_min']:.1f} ({r['full_gc_max_ms']:.0f}) | "
            f"{r['rss_start_mib']:.1f} -> {r['rss_end_mib']:.1f} | {r['load']:.1f}"
        )
    return "\n".join(lines)


def run_size(args: argparse.Namespace) -> dict[str, float]:
    """One fleet size: its boxes in a process of their own, the app in this one."""
    with tempfile.TemporaryDirectory(prefix="rgt-bench-") as tmp:
        folder = Path(tmp)
        # The boxes are new on every run: in the user's journal each run would retire the
        # last run's boxes under the same names, and the journal (read at start) would
        # grow with every run, and the app's heap with it.
        os.environ["XDG_STATE_HOME"] = str(folder / "state")
        fleet_proc = None if args.synthetic else start_fleet_process(args.hosts, folder)
        try:
            fleet_cpu0 = tree_cpu(psutil.Process(fleet_proc.pid)) if fleet_proc else 0.0
            t0 = time.perf_counter()
            result = asyncio.run(measure(args, folder))
            if fleet_proc:
                fleet_share = (tree_cpu(psutil.Process(fleet_proc.pid)) - fleet_cpu0) / (
                    time.perf_counter() - t0
                )
                result["fleet_process_cpu_percent"] = fleet_share * 100
        finally:
            if fleet_proc:
                assert fleet_proc.stdin is not None
                fleet_proc.stdin.close()
                try:
                    fleet_proc.wait(15)
                except subprocess.TimeoutExpired:
                    fleet_proc.kill()
    return result


if __name__ == "__main__":
    raise SystemExit(main())
