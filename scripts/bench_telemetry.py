#!/usr/bin/env python3
"""Telemetry cost: persistent agent channels vs a fresh `ssh` per poll.

N loopback SSH boxes (real asyncssh servers, in a separate process so their CPU is not
counted) are sampled two ways, in the same run:

  (a) rgt-tui's way: one persistent connection per host, the agent streaming JSON lines;
  (b) a patrol script's way: every poll spawns `ssh` (new process, new connection, new key
      exchange) running an equivalent shell probe (boot id, uptime, df bytes and inodes,
      cgroup memory/oom/cpu files, nvidia-smi).

For each it measures local CPU seconds per host-sample (this process plus its children)
and sample latency, then prints `ratio: X` = (b)'s CPU per sample / (a)'s. Target ≥ 50.

  (c) the floor: as many ~1 KB lines at the same rate and phases over plain loopback
      TCP, read by asyncio with no SSH and no parsing: what one event-loop wakeup per
      sample costs on this machine. `ceiling` = (b) / (c): the best ratio any client
      that wakes once per sample could show here.

With ``--sshd`` the hosts are served by OpenSSH's own sshd (``bench_pull.Sshd``, one
sshd, a fleet entry per host), what rented boxes run: (b)'s `ssh` then negotiates what a
real box offers (OpenSSH's default key exchange is the post-quantum sntrup761x25519,
several times the client CPU of curve25519; the bench prints the one used). ``--kex``
sets (b)'s KexAlgorithms, e.g. ``curve25519-sha256`` for a patrol script that asks for
the classical one.

    python scripts/bench_telemetry.py [--hosts 32] [--seconds 10] [--interval 1]
                                      [--sshd [--kex ALGS]]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

# As rgt_tui/entry.py does: asyncssh's import warns of cryptography's DSA deprecation,
# two lines of nothing the bench measures before its figures.
warnings.filterwarnings("ignore", message="DSA is deprecated", module=r"asyncssh\.")

from rgt_tui.domain.config import Fleet, HostConfig  # noqa: E402
from rgt_tui.services.fleet.file import load_fleet  # noqa: E402
from rgt_tui.services.telemetry import HostMonitor, HostUpdate  # noqa: E402
from rgt_tui.transport import transport_for  # noqa: E402

SHELL_PROBE = r"""
cat /proc/sys/kernel/random/boot_id /proc/uptime /proc/loadavg
df -P {path} | tail -n 1
df -Pi {path} | tail -n 1
for f in /sys/fs/cgroup/memory.current /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory.events \
         /sys/fs/cgroup/cpu.max /sys/fs/cgroup/memory/memory.usage_in_bytes \
         /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/memory/memory.oom_control \
         /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us; do
  [ -r "$f" ] && cat "$f"
done
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv,noheader
true
"""


def cpu_now() -> float:
    """CPU seconds of this process and every child it has waited for."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def pct(values: list[float], q: float) -> float:
    return (
        statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else (values or [0.0])[0]
    )


async def bench_persistent(fleet: Fleet, seconds: float, interval: float) -> dict:
    latencies: list[float] = []
    counting = False
    count = 0
    started: set[str] = set()

    def emit(update: HostUpdate) -> None:
        nonlocal count
        if update.snapshot is None:
            return
        started.add(update.host)
        if counting:
            count += 1
            latencies.append(time.time() - update.snapshot.t)

    monitors = [HostMonitor(h, transport_for(h), interval=interval) for h in fleet.hosts]
    tasks = [asyncio.create_task(m.run(emit)) for m in monitors]
    deadline = time.monotonic() + 60
    while len(started) < len(monitors) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    # Steady state only: connection set-up happens once per host per session.
    counting = True
    cpu0, wall0 = cpu_now(), time.monotonic()
    await asyncio.sleep(seconds)
    cpu1, wall1 = cpu_now(), time.monotonic()
    counting = False
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for m in monitors:
        await m.transport.close()
    return {"samples": count, "cpu_s": cpu1 - cpu0, "wall_s": wall1 - wall0, "latencies": latencies}


def ssh_argv(host: HostConfig, kex: str | None = None) -> list[str]:
    assert host.ssh is not None
    argv = [
        "ssh",
        "-p",
        str(host.ssh.port),
        "-o",
        "BatchMode=yes",
        "-o",
        "StrictHostKeyChecking=yes",
    ]
    if host.known_hosts:
        argv += ["-o", f"UserKnownHostsFile={host.known_hosts}"]
    if host.identity_file:
        argv += ["-i", str(host.identity_file), "-o", "IdentitiesOnly=yes"]
    if kex:
        argv += ["-o", f"KexAlgorithms={kex}"]
    return [*argv, f"{host.ssh.user}@{host.ssh.host}"]


def negotiated_kex(host: HostConfig, kex: str | None) -> str:
    """The key exchange (b)'s `ssh` agrees on with this host, from `ssh -v`."""
    done = subprocess.run(
        ["ssh", "-v", *ssh_argv(host, kex)[1:], "true"], capture_output=True, text=True
    )
    found = re.search(r"kex: algorithm: (\S+)", done.stderr)
    return found.group(1) if found else "unknown"


async def bench_per_poll(
    fleet: Fleet, seconds: float, interval: float, kex: str | None = None
) -> dict:
    latencies: list[float] = []
    failures: list[str] = []

    async def patrol(host: HostConfig, until: float) -> int:
        probe = SHELL_PROBE.format(path=shlex.quote(host.mounts[0]))
        done = 0
        while time.monotonic() < until:
            t0 = time.monotonic()
            proc = await asyncio.create_subprocess_exec(
                *ssh_argv(host, kex),
                probe,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            out, err = await proc.communicate()
            if proc.returncode != 0 or not out:
                failures.append(f"{host.name}: {err.decode().strip()[:120]}")
            else:
                done += 1
                latencies.append(time.monotonic() - t0)
            await asyncio.sleep(max(0.0, interval - (time.monotonic() - t0)))
        return done

    cpu0, wall0 = cpu_now(), time.monotonic()
    until = wall0 + seconds
    counts = await asyncio.gather(*(patrol(h, until) for h in fleet.hosts))
    cpu1, wall1 = cpu_now(), time.monotonic()
    return {
        "samples": sum(counts),
        "cpu_s": cpu1 - cpu0,
        "wall_s": wall1 - wall0,
        "latencies": latencies,
        "failures": failures,
    }


def send_lines(n: int, port: int, interval: float) -> None:
    """Child mode for (c): n connections each writing one ~1 KB line every interval, at
    phases spread over the interval as the agents' are."""

    async def one(i: int) -> None:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        await asyncio.sleep(interval * i / n)
        line = b"x" * 1000 + b"\n"
        while True:
            writer.write(line)
            await writer.drain()
            await asyncio.sleep(interval)

    async def main() -> None:
        await asyncio.gather(*(one(i) for i in range(n)))

    asyncio.run(main())


async def bench_floor(n: int, seconds: float, interval: float) -> dict:
    """(c): the same number of lines at the same rate over plain loopback TCP, read by
    asyncio with no SSH and no parsing: what one event-loop wakeup per sample costs here."""
    count = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal count
        with contextlib.suppress(Exception, asyncio.CancelledError):
            async for _ in reader:
                count += 1

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    args = ["--send-lines", str(port), "--hosts", str(n), "--interval", str(interval)]
    child = await asyncio.create_subprocess_exec(sys.executable, __file__, *args)
    try:
        deadline = time.monotonic() + 30
        while count < n and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        await asyncio.sleep(interval)
        c0, cpu0, wall0 = count, cpu_now(), time.monotonic()
        await asyncio.sleep(seconds)
        cpu1, wall1, c1 = cpu_now(), time.monotonic(), count
    finally:
        child.kill()
        await child.wait()
        server.close()
    return {"samples": c1 - c0, "cpu_s": cpu1 - cpu0, "wall_s": wall1 - wall0, "latencies": []}


def report(name: str, r: dict, n: int) -> float:
    per = r["cpu_s"] / max(1, r["samples"])
    lat = [x * 1000 for x in r["latencies"]]
    print(
        f"{name:<28} hosts {n:>3}  samples {r['samples']:>5}  CPU {r['cpu_s']:6.2f} s "
        f"({r['cpu_s'] / r['wall_s'] * 100:5.1f}% of a core)  "
        f"CPU/sample {per * 1000:7.3f} ms  latency p50 {pct(lat, 50):7.1f} ms  p95 {pct(lat, 95):7.1f} ms"
    )
    return per


def serve(n: int, base: Path) -> None:
    """Child mode: run the loopback fleet until stdin closes."""
    from rgt_tui.demo.loopback import LoopbackFleet

    async def main() -> None:
        fleet = LoopbackFleet(n, base)
        await fleet.start()
        print(fleet.hosts_file, flush=True)
        await asyncio.to_thread(sys.stdin.read)
        await fleet.stop()

    asyncio.run(main())


@contextlib.contextmanager
def sshd_fleet(n: int, base: Path):
    """A fleet file of n hosts, all served by one private OpenSSH sshd on loopback."""
    from bench_pull import Sshd  # scripts/ is on sys.path when run as a script

    # A patrol script's polls start together: sshd must not drop them as a flood.
    sshd = Sshd(base, extra_config=("MaxStartups 1000", "MaxSessions 1000"))
    sshd.start()
    try:
        lines = [f'[fleet]\nresults_dir = "{base / "results"}"\n']
        for i in range(n):
            lines.append(
                f'[[hosts]]\nname = "box{i}"\nssh = "{sshd.user}@127.0.0.1:{sshd.port}"\n'
                f'identity_file = "{sshd.client_key}"\nknown_hosts = "{sshd.known_hosts}"\n'
            )
        (base / "hosts.toml").write_text("\n".join(lines))
        yield base / "hosts.toml"
    finally:
        sshd.stop()


@contextlib.contextmanager
def asyncssh_fleet(n: int, base: Path):
    """A fleet file of n asyncssh loopback boxes, served from a child process."""
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(base), "--hosts", str(n)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        yield Path(server.stdout.readline().strip())
    finally:
        server.stdin.close()
        server.wait(timeout=30)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hosts", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--sshd", action="store_true", help="serve the hosts by OpenSSH's sshd")
    parser.add_argument("--kex", help="(b)'s KexAlgorithms, e.g. curve25519-sha256")
    parser.add_argument("--serve", metavar="DIR", help=argparse.SUPPRESS)
    parser.add_argument("--send-lines", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.send_lines:
        send_lines(args.hosts, args.send_lines, args.interval)
        return 0
    if args.serve:
        serve(args.hosts, Path(args.serve))
        return 0
    fleet_of = sshd_fleet if args.sshd else asyncssh_fleet
    with (
        tempfile.TemporaryDirectory(prefix="rgt-bench-") as tmp,
        fleet_of(args.hosts, Path(tmp)) as hosts_file,
    ):
        fleet = load_fleet(hosts_file)
        server = "OpenSSH sshd" if args.sshd else "asyncssh servers"
        print(
            f"{len(fleet.hosts)} loopback hosts ({server}), {args.seconds:g} s per method, "
            f"one sample per host every {args.interval:g} s; (b)'s key exchange: "
            f"{negotiated_kex(fleet.hosts[0], args.kex)}"
        )
        a = asyncio.run(bench_persistent(fleet, args.seconds, args.interval))
        b = asyncio.run(bench_per_poll(fleet, args.seconds, args.interval, args.kex))
        c = asyncio.run(bench_floor(len(fleet.hosts), args.seconds, args.interval))
    per_a = report("(a) persistent agent", a, len(fleet.hosts))
    per_b = report("(b) ssh process per poll", b, len(fleet.hosts))
    if b["failures"]:
        print(f"(b) failed polls: {len(b['failures'])}, first: {b['failures'][0]}")
    if not a["samples"] or not b["samples"]:
        print("ratio: 0 (a method produced no samples)")
        return 1
    per_c = report("(c) floor: bare TCP line", c, len(fleet.hosts))
    print(f"ratio: {per_b / per_a:.1f}")
    # What no client that wakes once per sample can beat on this machine: (a) is the
    # floor plus SSH (decrypt, channel, line reader) plus parsing and the health rules.
    if c["samples"]:
        print(f"ceiling (b / floor): {per_b / per_c:.1f}  (a) / floor: {per_a / per_c:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
