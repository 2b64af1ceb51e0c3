#!/usr/bin/env python3
"""Which way should a pull's bulk bytes move? CPU per GB of each candidate (issue 44).

One large file, served by the private OpenSSH sshd of ``bench_pull.py`` on loopback, is
read to its end and hashed (SHA-256, as a pull does; no disk writes, so only the
transport and the hash count) by:

- ``asyncssh sftp <cipher>``: asyncssh's public SFTP client, what ``rgt-tui pull`` uses
  for large files, ``read_parallel`` with 32 reads of 255 KiB in flight, once per cipher
  (``encryption_algs=[cipher]``);
- ``asyncssh exec cat <cipher>``: the same connection's exec channel running ``cat FILE``
  (no SFTP framing: the cost of asyncssh's channel and cipher alone);
- ``openssh ssh cat <cipher>``: OpenSSH's own ``ssh`` (C, AES-NI) running ``cat FILE``,
  its stdout read here in 1 MiB pieces (what a pull would do to move bytes through it);
- ``asyncssh sftp 128k-packets``: asyncssh's SFTP with ``max_pktsize`` 128 KiB (its
  default is 32 KiB: fewer, larger packets, each decrypted and parsed once).

Each prints wall seconds, MB/s, and CPU seconds per GB of this process and its children
(the client side) and of the box's sshd sessions, with the load average. Runs alternate
(``--repeat`` rounds, each in a rotated order); the medians count.

Usage: .venv/bin/python scripts/bench_bulk.py [--mib 300] [--repeat 3] [--dir /tmp/rgt-bench]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import resource
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

# As rgt_tui/entry.py does: asyncssh's import warns of cryptography's DSA deprecation,
# two lines of nothing the bench measures before its figures.
warnings.filterwarnings("ignore", message="DSA is deprecated", module=r"asyncssh\.")

import asyncssh  # noqa: E402
import bench_cpu  # noqa: E402
from bench_pull import MIB, Sshd  # noqa: E402

CIPHERS = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "chacha20-poly1305@openssh.com")
BLOCK = 255 * 1024
IN_FLIGHT = 32
PACKET = 128 * 1024  # a larger channel packet than asyncssh's 32 KiB default


def self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _connect(sshd: Sshd, cipher: str, packet: int = 0) -> asyncssh.SSHClientConnection:
    extra = {"max_pktsize": packet} if packet else {}  # asyncssh's default: 32 KiB
    return await asyncssh.connect(
        "127.0.0.1", sshd.port, username=sshd.user, client_keys=[str(sshd.client_key)],
        known_hosts=str(sshd.known_hosts), encryption_algs=[cipher], window=8 * MIB, **extra,
    )  # fmt: skip


async def asyncssh_sftp(sshd: Sshd, cipher: str, path: Path, size: int, packet: int = 0) -> str:
    digest = hashlib.sha256()
    pieces: dict[int, bytes] = {}
    at = 0
    async with (
        await _connect(sshd, cipher, packet) as conn,
        conn.start_sftp_client() as sftp,
        sftp.open(str(path), "rb", block_size=BLOCK, max_requests=IN_FLIGHT) as f,
    ):
        async for offset, data in await f.read_parallel(size, 0):
            pieces[offset] = data
            while at in pieces:  # hashed in order, as a pull's part is written
                data = pieces.pop(at)
                digest.update(data)
                at += len(data)
    return digest.hexdigest()


async def asyncssh_cat(sshd: Sshd, cipher: str, path: Path) -> str:
    digest = hashlib.sha256()
    async with (
        await _connect(sshd, cipher) as conn,
        conn.create_process(f"cat {path}", encoding=None) as proc,
    ):
        while data := await proc.stdout.read(MIB):
            digest.update(data)
    return digest.hexdigest()


def openssh_cat(sshd: Sshd, cipher: str, path: Path) -> str:
    digest = hashlib.sha256()
    command = ["ssh", "-p", str(sshd.port), *sshd.ssh_options(cipher), "-T", "-x", "-a"]
    command += ["-o", "ClearAllForwardings=yes", f"{sshd.user}@127.0.0.1", f"cat {path}"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, bufsize=0) as proc:
        assert proc.stdout is not None
        while data := proc.stdout.read(MIB):
            digest.update(data)
    if proc.returncode:
        raise SystemExit(f"bench_bulk: ssh exited {proc.returncode}")
    return digest.hexdigest()


def measure(name: str, sshd: Sshd, path: Path, expect: str) -> tuple[float, float, float]:
    """(wall s, client CPU s, box CPU s) of one read of ``path`` by ``name``."""
    kind, cipher = name.rsplit(" ", 1)
    box0 = bench_cpu.box_settled(sshd.proc.pid)
    cpu0 = self_cpu() + bench_cpu.children_cpu()
    start = time.monotonic()
    if kind == "asyncssh sftp":
        got = asyncio.run(asyncssh_sftp(sshd, cipher, path, path.stat().st_size))
    elif kind == "asyncssh sftp 128k-packets":
        got = asyncio.run(asyncssh_sftp(sshd, cipher, path, path.stat().st_size, PACKET))
    elif kind == "asyncssh exec cat":
        got = asyncio.run(asyncssh_cat(sshd, cipher, path))
    else:
        got = openssh_cat(sshd, cipher, path)
    wall = time.monotonic() - start
    client = self_cpu() + bench_cpu.children_cpu() - cpu0
    box = bench_cpu.box_settled(sshd.proc.pid) - box0
    if got != expect:
        raise SystemExit(f"bench_bulk: {name} read a different SHA-256")
    return wall, client, box


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/rgt-bench"))
    args = parser.parse_args()
    base = args.dir.resolve()
    base.mkdir(parents=True, exist_ok=True)
    path = base / f"bulk-{args.mib}.dat"
    if not path.exists() or path.stat().st_size != args.mib * MIB:
        with open(path, "wb") as f:
            for _ in range(args.mib):
                f.write(os.urandom(MIB))
    expect = hashlib.sha256(path.read_bytes()).hexdigest()  # also warms the page cache
    sshd = Sshd(base)
    sshd.start()
    names = [f"asyncssh sftp {c}" for c in CIPHERS] + [f"asyncssh exec cat {CIPHERS[0]}"]
    names.append(f"asyncssh sftp 128k-packets {CIPHERS[0]}")
    names += [f"openssh ssh cat {c}" for c in CIPHERS[::2]]
    runs: dict[str, list[tuple[float, float, float]]] = {n: [] for n in names}
    try:
        for round_ in range(args.repeat):
            for name in names[round_:] + names[:round_]:
                runs[name].append(measure(name, sshd, path, expect))
    finally:
        sshd.stop()
    size = path.stat().st_size
    print(f"one {size / MIB:.0f} MiB file read and SHA-256'd over loopback sshd (OpenSSH "
          f"9.2), medians of {args.repeat}; {bench_cpu.load()}")  # fmt: skip
    for name, values in runs.items():
        wall = statistics.median(v[0] for v in values)
        client = bench_cpu.per_gb(statistics.median(v[1] for v in values), size)
        box = bench_cpu.per_gb(statistics.median(v[2] for v in values), size)
        print(
            f"  {name:<48} {wall:6.2f} s {size / wall / 1e6:6.0f} MB/s  CPU/GB client "
            f"{client:5.2f} s box {box:5.2f} s  runs: "
            + ", ".join(f"{w:.2f}s/{c:.2f}+{b:.2f}" for w, c, b in values)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
