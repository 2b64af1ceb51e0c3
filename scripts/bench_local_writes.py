#!/usr/bin/env python3
"""Benchmark how pulled bytes reach the local disk: the way rgt-tui writes vs the plain way.

Two comparisons, each against its baseline in the same run, on the folder given (by
default a new one under /tmp):

- a large file (default 900 MiB, written in 4 MiB batches, like a pulled checkpoint):
  plain buffered writes + fsync, vs ``durable.Appender`` (O_DIRECT where the file system
  takes it) + fsync. No hashing: a pull hashes the same bytes either way;
- 3000 small files (4-40 KB): an fsync per file, vs one ``durable.sync_files`` per group
  of 64, as the small-file batches do.

Each case gets a fresh folder and starts after ``os.sync()``; every file stays until the
end, as pulled files do (so buffered writes keep taking new page-cache memory). Prints
seconds (wall) and the CPU seconds this process spent (the kernel's page-cache copy
counts there), then ``speedup: large X, small Y`` (baseline / ours, wall).

Usage: .venv/bin/python scripts/bench_local_writes.py [--dir PATH] [--mib 900] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rgt_tui.services.durable import Appender, sync_files  # noqa: E402

BATCH = 4 << 20
GROUP = 64


def large_plain(path: Path, batches: list[bytes]) -> None:
    with open(path, "wb") as f:
        for data in batches:
            f.write(data)
        f.flush()
        os.fsync(f.fileno())


def large_appender(path: Path, batches: list[bytes]) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    file = Appender(path, fd, 0)
    for data in batches:
        file.append([data], lambda _: None)  # no hashing here: the same for both ways
    file.close(sync=True)


def small_files(folder: Path, sizes: list[bytes], grouped: bool) -> None:
    folder.mkdir()
    for start in range(0, len(sizes), GROUP):
        fds = []
        try:
            for i, data in enumerate(sizes[start : start + GROUP], start):
                fd = os.open(folder / f"s{i:05d}.part", os.O_WRONLY | os.O_CREAT, 0o644)
                fds.append(fd)
                os.write(fd, data)
                if not grouped:
                    os.fsync(fd)
            if grouped:
                sync_files(fds)
        finally:
            for fd in fds:
                os.close(fd)
        for i in range(start, start + len(fds)):
            os.rename(folder / f"s{i:05d}.part", folder / f"s{i:05d}")


def measure(run) -> tuple[float, float]:
    os.sync()
    before, start = os.times(), time.monotonic()
    run()
    after = os.times()
    return time.monotonic() - start, (after.user - before.user) + (after.system - before.system)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, help="where to write (default: a new /tmp folder)")
    parser.add_argument("--mib", type=int, default=900, help="size of the large file")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="rgt-writes-", dir=args.dir))
    batches = [os.urandom(BATCH) for _ in range(8)] * (args.mib // 32)
    smalls = [os.urandom(4096 + (i * 7919) % 36000) for i in range(3000)]
    results: dict[str, list[tuple[float, float]]] = {}
    try:
        for n in range(args.repeat):
            # Nothing is deleted until the end, as in a pull (its files stay), and because
            # deleting thousands of files right before a run slows that run's creations.
            cases = (
                ("large, buffered + fsync", partial(large_plain, base / f"p{n}", batches)),
                ("large, rgt-tui Appender", partial(large_appender, base / f"a{n}", batches)),
                ("small, fsync each", partial(small_files, base / f"sf{n}", smalls, False)),
                ("small, sync per group", partial(small_files, base / f"sg{n}", smalls, True)),
            )
            for name, run in cases:
                results.setdefault(name, []).append(measure(run))
        medians = {}
        for name, runs in results.items():
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            medians[name] = wall
            print(f"{name:<26} {wall:6.2f} s  cpu {cpu:5.2f} s   runs: "
                  + ", ".join(f"{r[0]:.2f}" for r in runs))  # fmt: skip
        large = medians["large, buffered + fsync"] / medians["large, rgt-tui Appender"]
        small = medians["small, fsync each"] / medians["small, sync per group"]
        print(f"speedup: large {large:.2f}, small {small:.2f}")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
