"""``bench_pull.py --link bwlimit``: is ``pull --bwlimit`` a limit?

For each limit (5, 10, 40, 80, 200, 1000 Mbit/s by default) a file made for it is served
by the bench's private sshd on 127.0.0.1 and pulled by ``rgt-tui pull --bwlimit``
(through its command line only): a *fresh* pull for ``--bw-seconds`` (15), then Ctrl-C
(SIGINT), then the same pull again, which *resumes* the part, for as long. The
delivered rate is read from the disk, not from the pull: the size of the file's part
(``.rgt/parts/*.part``) every 0.2 s. Every 10 s window that starts at least 1 s after
the part began to grow is checked against the limit (±10 %); the table shows the
windows' lowest and highest rate, the progress line's last rate, and pass/fail.
``--bw-all`` adds ``pull --all`` over two hosts (two folders on the same box) under one
budget: the sum of both parts must keep to the limit.

The files are sparse-ish (a random MiB every 8 MiB, holes between: made at once, any
size), sized for each limit's two runs, so a low limit pulls a small file and 1 Gbit/s a
few GB (say so when reporting). On a loopback box, a limit above what this machine's
CPUs can hash and encrypt cannot be reached: the table says "below the limit" then.
"""

from __future__ import annotations

import os
import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

MIB = 1 << 20
DEFAULT_LIMITS = (5.0, 10.0, 40.0, 80.0, 200.0, 1000.0)
WINDOW_S = 10.0
SKIP_S = 1.0  # the first second is the budget's burst and the first round trips
TOLERANCE = 0.10
SAMPLE_S = 0.2
PROGRESS = re.compile(r"([0-9.]+)([BKMGT])/s\s+eta")  # the pull's plain progress line
UNITS = {"B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def sparse_file(path: Path, size: int) -> None:
    """A random MiB every 8 MiB and holes between (kept when already that size)."""
    if path.exists() and path.stat().st_size == size:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        for offset in range(0, size, 8 * MIB):
            f.seek(offset)
            f.write(os.urandom(min(MIB, size - offset)))
        f.truncate(size)


def parts_total(out: Path) -> int:
    """Bytes in every part under ``out`` (the pull's ``.rgt/parts``)."""
    total = 0
    for folder, _, files in os.walk(out):
        for name in files:
            if name.endswith(".part"):
                try:
                    total += os.stat(os.path.join(folder, name)).st_size
                except OSError:
                    pass
    return total


def measured_pull(command: list[str], out: Path, seconds: float) -> tuple[list, str]:
    """Run the pull for ``seconds`` after its part starts to grow (or until it ends),
    sampling the parts' bytes; then Ctrl-C. Returns the samples and its output."""
    log = out.parent / f"{out.name}.log"
    with open(log, "ab") as sink:
        proc = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
        base, samples, grew_at = parts_total(out), [], None
        deadline = time.monotonic() + 120  # the part must start growing by then
        while proc.poll() is None:
            now, size = time.monotonic(), parts_total(out)
            samples.append((now, size))
            if grew_at is None and size > base:
                grew_at = now
            if (grew_at is not None and now - grew_at >= seconds) or now > deadline:
                break
            time.sleep(SAMPLE_S)
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return samples, log.read_text(errors="replace")


def windows(samples: list[tuple[float, int]]) -> list[float]:
    """Bytes/s over every ``WINDOW_S`` window that starts ``SKIP_S`` after the part began
    to grow (one per sample; the end interpolated between samples)."""
    base = samples[0][1]
    grew = next((i for i, (_, b) in enumerate(samples) if b > base), None)
    if grew is None:
        return []
    start = samples[grew - 1][0] if grew else samples[0][0]
    rates = []
    for i, (t, b) in enumerate(samples):
        if t < start + SKIP_S:
            continue
        end = t + WINDOW_S
        later = next((j for j in range(i, len(samples)) if samples[j][0] >= end), None)
        if later is None:
            break
        (t1, b1), (t2, b2) = samples[later - 1], samples[later]
        at_end = b1 + (b2 - b1) * (end - t1) / (t2 - t1) if t2 > t1 else b2
        rates.append((at_end - b) / WINDOW_S)
    return rates


def progress_rate(output: str) -> float | None:
    """The rate on the pull's last plain progress line (bytes/s), if it printed one."""
    found = PROGRESS.findall(output)
    return float(found[-1][0]) * UNITS[found[-1][1]] if found else None


def row(label: str, limit_mbit: float, samples: list, output: str) -> tuple[str, bool]:
    rates = [r * 8 / 1e6 for r in windows(samples)]
    shown = progress_rate(output)
    line = f"  {limit_mbit:>6g} Mbit/s  {label:<8}"
    if not rates:
        return line + " no full 10 s window (the pull ended or never started)  FAIL", False
    low, high = min(rates), max(rates)
    ok = all(abs(r - limit_mbit) <= TOLERANCE * limit_mbit for r in rates)
    note = "" if ok or high >= limit_mbit * (1 - TOLERANCE) else "  (below the limit)"
    progress = f"{shown * 8 / 1e6:7.2f}" if shown is not None else "      ?"
    return (
        f"{line} {len(rates):>3} windows  min {low:8.2f}  median {statistics.median(rates):8.2f}"
        f"  max {high:8.2f}  progress {progress}  {'pass' if ok else 'FAIL'}{note}",
        ok,
    )


def run_bwlimit(ctx, args) -> list[str]:  # noqa: ANN001 - bench_pull's Bench
    """The table for every limit; returns its summary line."""
    import bench_pull as bp

    limits = args.bw_limits or DEFAULT_LIMITS
    seconds = args.bw_seconds
    print(
        f"link (bwlimit): rgt-tui pull --bwlimit, straight to sshd on 127.0.0.1; the part's "
        f"size on disk every {SAMPLE_S:g} s; every {WINDOW_S:g} s window from {SKIP_S:g} s "
        f"after it starts growing, against the limit ±{TOLERANCE:.0%}; fresh for "
        f"{seconds:g} s, Ctrl-C, then resumed for {seconds:g} s",
        flush=True,
    )
    print(
        "  limit        run      windows  lowest / median / highest Mbit/s   the pull's "
        "own last progress line (Mbit/s)",
        flush=True,
    )
    results = []
    for mbit in limits:
        rate = mbit * 1e6 / 8
        size = max(64 * MIB, -(-int(rate * 2 * (seconds + 6)) // (8 * MIB)) * 8 * MIB)
        data = ctx.base / "box" / f"bw-{mbit:g}"
        sparse_file(data / "ckpt" / "big.bin", size)
        out = ctx.outputs.new(f"bw{mbit:g}")
        hosts = bp.hosts_file(ctx.base, ctx.sshd, ctx.sshd.port, data, out, f"bw{mbit:g}")
        command = [*ctx.rgt, "pull", "bench", "--hosts", str(hosts), "--bwlimit", f"{mbit:g}"]
        for label in ("fresh", "resumed"):
            samples, output = measured_pull(command, out, seconds)
            line, ok = row(label, mbit, samples, output)
            print(line + f"  ({size / MIB:.0f} MiB file)", flush=True)
            results.append(ok)
    if args.bw_all:
        results.append(_fleet_row(ctx, args, bp))
    passed = sum(results)
    return [f"bwlimit: {passed}/{len(results)} runs within ±{TOLERANCE:.0%} in every window"]


def _fleet_row(ctx, args, bp) -> bool:  # noqa: ANN001
    """``pull --all`` over two hosts (two folders of the box) under one budget."""
    mbit = args.bw_all
    rate = mbit * 1e6 / 8
    size = max(64 * MIB, -(-int(rate * (args.bw_seconds + 6)) // (8 * MIB)) * 8 * MIB)
    out = ctx.outputs.new("bw-all")
    entries = []
    for name in ("bench1", "bench2"):
        data = ctx.base / "box" / f"bw-all-{mbit:g}" / name
        sparse_file(data / "big.bin", size)
        entries.append(
            f'[[hosts]]\nname = "{name}"\nssh = "{ctx.sshd.user}@127.0.0.1:{ctx.sshd.port}"\n'
            f'identity_file = "{ctx.sshd.client_key}"\nknown_hosts = "{ctx.sshd.known_hosts}"\n'
            f'durable_dir = "{data}"\n'
        )
    hosts = ctx.base / "hosts-bw-all.toml"
    hosts.write_text(f'[fleet]\nresults_dir = "{out}"\n\n' + "\n".join(entries))
    command = [*ctx.rgt, "pull", "--all", "--hosts", str(hosts), "--bwlimit", f"{mbit:g}"]
    samples, output = measured_pull(command, out, args.bw_seconds)
    line, ok = row("--all x2", mbit, samples, output)
    print(line + f"  (two {size / MIB:.0f} MiB files, one budget)", flush=True)
    return ok


def add_arguments(parser) -> None:  # noqa: ANN001
    parser.add_argument(
        "--bw-limits",
        type=float,
        nargs="+",
        metavar="MBIT",
        help="bwlimit: the limits to check (default 5 10 40 80 200 1000)",
    )
    parser.add_argument(
        "--bw-seconds",
        type=float,
        default=15.0,
        help="bwlimit: seconds each pull is measured, fresh and resumed (15; ≥ 11)",
    )
    parser.add_argument(
        "--bw-all",
        type=float,
        metavar="MBIT",
        help="bwlimit: also pull --all over two hosts under one budget of MBIT",
    )


if __name__ == "__main__":
    sys.exit("run it through scripts/bench_pull.py --link bwlimit")
