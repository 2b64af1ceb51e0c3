#!/usr/bin/env python3
"""Benchmark `rgt-tui pull` against `rsync -a` (and `scp -r`) over OpenSSH's sshd, on
loopback and through far links.

A data set is served by a private `sshd -D` on 127.0.0.1 and pulled, in the same run, by
`rgt-tui pull` (only through its command line: manifest hashed on the box, every file
hashed locally and checked, fsync) and by `rsync -a` / `scp -r` through the `ssh` client
with the same key, in ``--repeat`` rounds (5): each tool once per round, each round
starting with the next tool; the median of each tool's runs counts, and every run starts
alike (``same_start``). Links (``--link``):

- ``loopback`` (the default): straight to sshd; rgt-tui, rsync and scp on 3 × 300 MiB +
  3000 small files (about 1 GB). Then a pull is interrupted by stopping sshd mid-file,
  restarted and resumed; a small TCP proxy in front of sshd counts the bytes the server
  sent, so the bytes sent twice are measured on the wire: (interrupted + resumed) − (a
  clean pull) − (a no-op re-pull: handshake and manifest). ``--skip-resume`` skips it.
- ``far``: through ``scripts/far_link.py``, a relay of our own in front of sshd that adds
  a one-way delay, caps the rate (shared by every connection, each way) and bounds its
  queue (this kernel has no netem): (a) 200 ms round trip at 1 Gbit/s, (b) 100 ms at
  400 Mbit/s. rsync and rgt-tui on 3 × 100 MiB + 600 small files, the whole set and then
  the large files alone (``--no-large-only`` skips that), with each run's bytes on the
  wire and the relay's CPU; then a ceiling: bare asyncssh SFTP reads of the large files.
- ``near``: the same relay at 4 ms / 1 Gbit/s (a box in the same region or campus), on
  the far links' data set; ``far`` runs it after its two links.
- ``big``: the issue's 3 GB set (3 × 1 GiB + 600 small files) at 200 ms / 1 Gbit/s,
  rgt-tui alone: rsync is bound there by its one SSH channel's window (about 9 MB/s at
  200 ms: 35 s for the 300 MiB set), so 3 GB would take it 5-6 minutes a run, and the
  figure asked of this set is not a ratio to rsync but how much of the whole command is
  the copy stage. Each run's copy stays on disk until the
  end, so ``--dir`` needs room for ``--repeat`` copies of 3.2 GB beside the set.
- ``all``: far (with near), then loopback; not big. ``--rtt-ms R --rate-mbit M``: a
  custom far link.
- ``compress``: ``pull --compress off|on|auto`` on a text-heavy set near and far
  (``scripts/bench_compress.py``; U15). Not in ``all``.
- ``bwlimit``: is ``pull --bwlimit`` a limit? (``scripts/bench_bwlimit.py``): for each
  limit, a fresh pull, Ctrl-C, and the resumed pull, each measured on disk over every
  10 s window against the limit ±10 %; a table with pass/fail. Not in ``all``.

Each far, near and loopback link prints ``ratio: X× ...`` = rsync's seconds / rgt-tui's
seconds (median), with the issue's target beside it where it has one (200 ms / 1 Gbit/s
≥ 6.0×, 100 ms / 400 Mbit/s ≥ 2.2×, near ≥ 1.0×), each tool's seconds and the share of
the link's capacity reached (data set bytes / seconds / link rate). Each far or near
link, and big, also prints the whole command's seconds beside its copy stage's (read from
the pull's summary line, "copy stage: X MB/s over Y s"): the rest is connecting, the
manifest, hashing and fsync. Far and near links also pull on a connection already open,
as the TUI's ``p`` and ``watch``'s periodic pull do (``scripts/pull_open.py``, timed from
the pull's start; ``--no-open-connection`` skips it). Big ends on ``big: whole / copy X
(target ≤ 1.30)``. A last summary repeats those lines when there are several links.

Usage: .venv/bin/python scripts/bench_pull.py [--link loopback|far|near|big|all|custom]
       [--rtt-ms 200 --rate-mbit 1000] [--big-files 3] [--big-mib 300]
       [--small-files 3000] [--dir /tmp/rgt-bench] [--repeat 5] [--no-large-only]
One script past 450 lines on purpose: every link shares the same sshd, data sets, same-start
rule and timing, so its figures compare; each link's measurement is one function.

Needs /usr/sbin/sshd, ssh, rsync and scp. Everything lives under --dir (the data sets are
kept between runs, so each is made once; each run's copy goes to a new folder under
``--dir/out``, deleted at the end); nothing else is touched.
One script on purpose, past 450 lines: a benchmark is run and read as one file (its
sshd, data sets, links and report share one run's state); it is not imported by the product.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import json
import os
import re
import shutil
import signal
import socket
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
import bench_bwlimit  # noqa: E402
import bench_compress  # noqa: E402
import bench_cpu  # noqa: E402

SSHD = "/usr/sbin/sshd"
MIB = 1 << 20


# -- a private sshd (the minimal part of tests/sshd_server.py) ----------------------------


class Sshd:
    """`sshd -D` on a loopback port with its own host key, client key and known_hosts."""

    def __init__(self, base: Path, extra_config: tuple[str, ...] = ()) -> None:
        self.base = base
        self.extra_config = extra_config  # more sshd_config lines, e.g. MaxStartups
        self.user = getpass.getuser()
        self.port = _free_port()
        self.client_key = base / "client_key"
        self.known_hosts = base / "known_hosts"
        self.proc: subprocess.Popen | None = None
        self.alias_ports: list[int] = []

    def start(self) -> None:
        """Start sshd (same port as before) and write known_hosts for it and its aliases."""
        host_pub = _ensure_key(self.base / "host_key")
        if self.proc is not None:
            self._write_known_hosts(host_pub)
            return
        client_pub = _ensure_key(self.client_key)
        (self.base / "authorized_keys").write_text(client_pub + "\n")
        config = self.base / "sshd_config"
        lines = [
            f"Port {self.port}", "ListenAddress 127.0.0.1", f"HostKey {self.base / 'host_key'}",
            f"AuthorizedKeysFile {self.base / 'authorized_keys'}", "PasswordAuthentication no",
            "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no",
            f"PidFile {self.base / 'sshd.pid'}", "Subsystem sftp internal-sftp",
            "PermitRootLogin yes", "LogLevel ERROR", "UseDNS no", *self.extra_config,
            "PerSourcePenalties no",
        ]  # fmt: skip
        config.write_text("\n".join(lines) + "\n")
        check = subprocess.run([SSHD, "-t", "-f", str(config)], capture_output=True, text=True)
        if check.returncode != 0 and "PerSourcePenalties" in check.stderr:
            config.write_text("\n".join(lines[:-1]) + "\n")  # OpenSSH < 9.8
        Path("/run/sshd").mkdir(mode=0o755, parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(config)], stderr=subprocess.DEVNULL
        )
        _wait_port(self.port)
        self._write_known_hosts(host_pub)

    def _write_known_hosts(self, host_pub: str) -> None:
        ports = [self.port, *self.alias_ports]  # the counting proxy shows sshd's key too
        self.known_hosts.write_text("".join(f"[127.0.0.1]:{p} {host_pub}\n" for p in ports))

    def stop(self) -> None:
        """Kill every connection's sshd, then the listener: the box goes down."""
        if self.proc is None:
            return
        for pid in _children(self.proc.pid):
            _kill(pid)
        self.proc.terminate()
        self.proc.wait()
        self.proc = None

    def ssh_options(self, cipher: str | None = None) -> list[str]:
        """Options shared by ssh and scp: the key, known_hosts, and the cipher if given."""
        return [
            "-i", str(self.client_key), "-o", f"UserKnownHostsFile={self.known_hosts}",
            "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
            *(["-c", cipher] if cipher else []),
        ]  # fmt: skip


def _ensure_key(path: Path) -> str:
    if path.exists():
        key = asyncssh.read_private_key(str(path))
    else:
        key = asyncssh.generate_private_key("ssh-ed25519")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key.export_private_key())
    return " ".join(key.export_public_key("openssh").decode().split()[:2])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port}")


def _children(ppid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == ppid:
                found.append(int(entry.name))
    return found


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


# -- a byte-counting TCP proxy (its own process, so it does not share our event loop) ---

PROXY = r"""
import asyncio, os, sys
listen, target, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
total = 0
def save():  # atomically: the bench reads it while this runs
    with open(out + ".tmp", "w") as f: f.write(str(total))
    os.replace(out + ".tmp", out)
async def pipe(r, w, count):
    global total
    try:
        while True:
            data = await r.read(1 << 16)
            if not data: break
            if count: total += len(data)
            w.write(data); await w.drain()
    except Exception: pass
    finally:
        w.close(); save()
async def handle(cr, cw):
    try: sr, sw = await asyncio.open_connection("127.0.0.1", target)
    except OSError:
        cw.close(); return
    await asyncio.gather(pipe(cr, sw, False), pipe(sr, cw, True))
async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", listen)
    while True:
        await asyncio.sleep(0.1); save()
asyncio.run(main())
"""


class CountingProxy:
    """127.0.0.1:port → sshd; counts the bytes sshd sends to clients."""

    def __init__(self, base: Path, target: int) -> None:
        self.port = _free_port()
        self.file = base / "proxy.count"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", PROXY, str(self.port), str(target), str(self.file)]
        )
        _wait_port(self.port)

    def total(self) -> int:
        time.sleep(0.3)  # the proxy saves every 0.1 s and at each close
        return int(self.file.read_text() or 0)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait()


# -- data set, fleet file, runs ---------------------------------------------------------


def make_data(root: Path, big_files: int, big_mib: int, small_files: int) -> int:
    """Create the data set once (kept between runs) and warm the page cache; its bytes."""
    stamp = root / ".spec"
    spec = f"{big_files} {big_mib} {small_files}"
    if not (stamp.exists() and stamp.read_text() == spec):
        shutil.rmtree(root, ignore_errors=True)
        (root / "ckpt").mkdir(parents=True)
        for i in range(big_files):
            with open(root / "ckpt" / f"epoch_{i:02d}.dat", "wb") as f:
                for _ in range(big_mib):
                    f.write(os.urandom(MIB))
        for i in range(small_files):
            d = root / "evals" / f"cell_{i % 30:02d}"
            d.mkdir(parents=True, exist_ok=True)
            (d / f"sample_{i:05d}.dat").write_bytes(os.urandom(4096 + (i * 7919) % 36000))
        stamp.write_text(spec)
    return warm(root)


def warm(root: Path) -> int:
    """Read every file of the data set, so each tool finds it in the page cache; its bytes."""
    total = 0
    for path in root.rglob("*"):
        if path.is_file() and path.name != ".spec":
            total += path.stat().st_size
            with open(path, "rb") as f:
                while f.read(8 * MIB):
                    pass
    return total


def hosts_file(base: Path, sshd: Sshd, port: int, data: Path, results: Path, name: str) -> Path:
    """A fleet file with one host, ``bench``, whose pull root is the data set."""
    path = base / f"hosts-{name}.toml"
    path.write_text(
        f'[fleet]\nresults_dir = "{results}"\n\n[[hosts]]\nname = "bench"\n'
        f'ssh = "{sshd.user}@127.0.0.1:{port}"\nidentity_file = "{sshd.client_key}"\n'
        f'known_hosts = "{sshd.known_hosts}"\ndurable_dir = "{data}"\n'
    )
    return path


def rgt_command() -> list[str]:
    """The command line of this checkout (``python -m rgt_tui``), whatever is on PATH."""
    return [sys.executable, "-m", "rgt_tui"]


TOUCH = r"""
import mmap, sys
size = int(sys.argv[1])
m = mmap.mmap(-1, size)
for offset in range(0, size, mmap.PAGESIZE):
    m[offset] = 1
"""


def same_start(touch_bytes: int) -> None:
    """Give every run the same start: no dirty pages, and free memory that has been used.

    Without the sync a run pays for the previous run's writes. Without the touch, on a VM
    the page cache a run fills can be memory the guest has never touched, which the
    hypervisor backs on first use: measured here, writing 900 MiB cost 2.2 s of system time
    into such memory and 0.2-0.3 s into memory used before. Which tool met which kind
    depended on what the tool before it had freed, so the order of the runs, not the
    tools, decided up to 2 s of each figure. A process that touches ``touch_bytes`` and
    exits leaves that much used memory free for the next run.
    """
    if touch_bytes:
        subprocess.run([sys.executable, "-c", TOUCH, str(touch_bytes)], check=True)
    os.sync()


def compile_package() -> None:
    """Write rgt-tui's bytecode, as any install does, so each run does not compile it.

    An editable install writes ``__pycache__`` on first import, unless
    PYTHONDONTWRITEBYTECODE is set (it is on the development VM): then every ``rgt-tui``
    start compiled all of its modules again, 0.07-0.08 s of each run (imports 0.34 s ->
    0.27 s measured). rsync and scp have nothing to compile.
    """
    import compileall

    import rgt_tui

    compileall.compile_dir(Path(rgt_tui.__file__).parent, quiet=1)


def timed(command: list[str], touch_bytes: int = 0, **kw) -> float:
    """Seconds a command took (it must succeed), from the same start as every other run."""
    return timed_output(command, touch_bytes, **kw)[0]


def timed_output(command: list[str], touch_bytes: int = 0, **kw) -> tuple[float, str]:
    """``timed``, and what the command printed on stdout (a pull's summary)."""
    seconds, out, _ = timed_cpu(command, touch_bytes, None, **kw)
    return seconds, out


def timed_cpu(
    command: list[str], touch_bytes: int, box_pid: int | None, **kw
) -> tuple[float, str, bench_cpu.Cpu]:
    """``timed_output``, and the CPU seconds of the run's client tree and of the box's
    sessions (sshd ``box_pid``'s reaped children; 0 without one), see ``bench_cpu``."""
    same_start(touch_bytes)
    client0 = bench_cpu.children_cpu()
    box0 = bench_cpu.box_settled(box_pid) if box_pid else 0.0
    machine0 = bench_cpu.machine_cpu()
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, **kw)
    seconds = time.monotonic() - start
    if done.returncode != 0:  # progress lines go to stderr: shown only when a run fails
        sys.stderr.write(done.stderr.decode(errors="replace"))
        raise subprocess.CalledProcessError(done.returncode, command)
    client = bench_cpu.children_cpu() - client0
    box = bench_cpu.box_settled(box_pid) - box0 if box_pid else 0.0
    # The flusher threads write back what the run left dirty: a sync, as the next run's
    # same start does, puts that writeback inside this run's machine figure.
    os.sync()
    machine = bench_cpu.machine_cpu() - machine0
    return seconds, done.stdout.decode(errors="replace"), bench_cpu.Cpu(client, box, machine)


COPY_STAGE = re.compile(r"copy stage: ([0-9.]+) MB/s over ([0-9.]+) s")  # pull's summary
# The pull's summary line of where its time went (issue 44), when it prints one.
STAGES = re.compile(r"stages: [^\n]*")
SPAN = re.compile(r"(handshake|listing|copy|tail) ([0-9.]+) s")
# A pull on a connection already open (the TUI's p, watch's periodic pull): its time is
# the pull alone, printed by scripts/pull_open.py, not the process's (issue 44).
OPEN = "rgt-tui p, open"
PULL_OPEN = Path(__file__).with_name("pull_open.py")
OPEN_PULL = re.compile(r"pull on the open connection: ([0-9.]+) s")


def stage_text(seconds: float, stages: str) -> str:
    """A run's whole seconds, its start-up (the command's imports and fleet file: the
    whole less the pull's four stages) and the stages the pull printed."""
    pulled = sum(float(s) for _, s in SPAN.findall(stages))
    return f"whole {seconds:.2f} s = start-up {seconds - pulled:.2f} s + {stages}"


def touch_size(data_bytes: int) -> int:
    """Memory to touch before each run: the data set and a quarter more, at most half of
    what is available (see ``same_start``)."""
    available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return min(data_bytes * 5 // 4, available // 2)


class Outputs:
    """A new, never-used output folder for every run; all of them deleted only at the end.

    Deleting thousands of files right before a measured run makes the next run's file
    creations slow on some file systems (ext4 without a journal, as on many VMs, skips
    recently deleted inodes by scanning past them: measured here, 3000 creations went from
    0.4 s to 2 s), and which tool pays depends on the order. So nothing is deleted
    between runs: ``--dir`` only needs room for every run's copy.
    """

    def __init__(self, base: Path) -> None:
        self.root = base / "out"
        shutil.rmtree(self.root, ignore_errors=True)  # left by an interrupted bench
        self.root.mkdir(parents=True)
        self.count = 0

    def new(self, name: str) -> Path:
        self.count += 1
        path = self.root / f"{self.count:02d}-{name}"
        path.mkdir()
        return path

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _part_sizes(out: Path) -> dict[str, int]:
    """Size of every ``*.part`` file under ``out`` (wherever the pull keeps them)."""
    found = {}
    for folder, _, files in os.walk(out):
        for name in files:
            if name.endswith(".part"):
                with contextlib.suppress(OSError):
                    found[os.path.join(folder, name)] = os.stat(os.path.join(folder, name)).st_size
    return found


def interrupted_pull(
    rgt: list[str], hosts: Path, out: Path, sshd: Sshd, stop_at: float, big_bytes: int
) -> tuple[dict[str, int], list[int]]:
    """`rgt-tui pull` until a large file's part passes ``stop_at`` of its size, then stop
    sshd, restart it a second later and let the pull resume (running it again if it gave
    up). Only the command line is used: the part sizes are read from the ``*.part`` files
    under ``out``. Returns the parts' sizes when sshd stopped and each run's exit code."""
    command = [*rgt, "pull", "bench", "--hosts", str(hosts)]
    same_start(0)
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    parts: dict[str, int] = {}
    while proc.poll() is None and not parts:
        found = _part_sizes(out)
        if any(size >= stop_at * big_bytes for size in found.values()):
            sshd.stop()
            parts = {os.path.relpath(k, out): v for k, v in found.items()}
        else:
            time.sleep(0.02)
    codes = []
    if parts:
        time.sleep(1.0)
        sshd.start()  # same port: the proxy forwards there
    codes.append(proc.wait())
    if parts and codes[-1] != 0:  # it gave up while the box was down: resume by a new pull
        codes.append(
            subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
        )
    return parts, codes


async def sftp_ceiling(sshd: Sshd, port: int, paths: list[Path]) -> float:
    """MB/s of bare SFTP reads of ``paths`` with asyncssh's public API (no hashing, no
    disk): what the connection and the link allow, not what rgt-tui does.

    Each file is split into ``CEILING_SPLIT`` ranges, each read on its own SFTP session
    (channel) of one connection with ``read_parallel``; the clock starts once every
    session and file is open. Each channel's window stays at 8 MiB: against OpenSSH 9.2's
    sshd, a channel with more than about 12 MiB in flight stalls (measured here: sshd at
    100 % CPU sending 3-5 MB/s for seconds, most likely moving its 16 MiB channel buffer
    on each read from sftp-server), so more in flight takes more channels.
    """
    sizes = [path.stat().st_size for path in paths]
    async with asyncssh.connect(
        "127.0.0.1", port, username=sshd.user, client_keys=[str(sshd.client_key)],
        known_hosts=str(sshd.known_hosts), window=CEILING_WINDOW,
    ) as conn:  # fmt: skip
        ranges = []
        for path, size in zip(paths, sizes, strict=True):
            step = -(-size // CEILING_SPLIT)
            ranges += [(path, o, min(step, size - o)) for o in range(0, size, step)]

        async def open_range(path: Path):  # noqa: ANN202
            sftp = await conn.start_sftp_client()
            f = await sftp.open(
                str(path), "rb", block_size=CEILING_BLOCK, max_requests=CEILING_REQUESTS
            )
            return sftp, f

        opened = await asyncio.gather(*(open_range(path) for path, _, _ in ranges))

        async def read(f, offset: int, length: int) -> int:  # noqa: ANN001
            got = 0
            async for _, data in await f.read_parallel(length, offset):
                got += len(data)
            return got

        start = time.monotonic()
        total = sum(
            await asyncio.gather(
                *(read(f, o, n) for (_, o, n), (_, f) in zip(ranges, opened, strict=True))
            )
        )
        seconds = time.monotonic() - start
        for sftp, f in opened:
            await f.close()
            sftp.exit()
        return total / seconds / 1e6


CEILING_BLOCK = 255 * 1024
CEILING_REQUESTS = 32  # 8 MiB requested per channel
CEILING_WINDOW = 8 * MIB  # per channel
CEILING_SPLIT = 3  # channels per file


# -- far links: our own relay (scripts/far_link.py) in front of sshd --------------------


class FarLink:
    """scripts/far_link.py as its own process: 127.0.0.1:port → sshd, with delay and rate."""

    def __init__(
        self, base: Path, target: int, rtt_ms: float, rate_mbit: float, args: argparse.Namespace
    ) -> None:
        self.port = _free_port()
        self.rtt_ms, self.rate_mbit = rtt_ms, rate_mbit
        self.file = base / f"far_link.{self.port}.json"
        relay = Path(__file__).with_name("far_link.py")
        self.proc = subprocess.Popen(
            [
                sys.executable, str(relay), "--listen", str(self.port), "--target", str(target),
                "--delay-ms", str(rtt_ms / 2), "--rate-mbit", str(rate_mbit),
                "--queue-kib", str(args.queue_kib), "--tcp-window-kib", str(args.tcp_window_kib),
                "--stats", str(self.file), "--chunk-kib", str(args.relay_chunk_kib),
            ]
        )  # fmt: skip
        _wait_port(self.port)

    @property
    def rate(self) -> float:
        """Bytes per second."""
        return self.rate_mbit * 1e6 / 8

    def stats(self) -> dict:
        time.sleep(0.3)  # the relay saves every 0.2 s
        return json.loads(self.file.read_text())

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait()


FAR_LINKS = {"a": (200.0, 1000.0), "b": (100.0, 400.0)}
NEAR_LINK = ("near", 4.0, 1000.0)  # a box in the same region or campus: a few ms, 1 Gbit/s
BIG_LINK = ("big", 200.0, 1000.0)  # link (a) with the 3 GB set, rgt-tui alone
FAR_DATA = (3, 100, 600)  # the data set: 300 MiB of checkpoints and 600 small files
BIG_DATA = (3, 1024, 600)  # the 3 GB set: 3 GiB of checkpoints, the same small files
LOOPBACK_DATA = (3, 300, 3000)
# Issue 33's targets: rsync's seconds / ours per link, and big's whole command / copy stage.
RATIO_TARGETS = {"a": 6.0, "b": 2.2, "near": 1.0}
BIG_TARGET = 1.30


def ratio_text(label: str, ratio: float) -> str:
    """``5.10× (target ≥ 6.0×)``: the ratio, and the issue's target for the link if any."""
    target = RATIO_TARGETS.get(label)
    return f"{ratio:.2f}×" + (f" (target ≥ {target:.1f}×)" if target else "")


def median(values: list[float]) -> float:
    return statistics.median(values)


def run_far(
    label: str, link: FarLink, ctx: Bench, data: Path, total: int, large_only: bool
) -> list[str]:
    """Both tools through ``link``, in alternating order; prints the figures and returns
    the link's ``ratio:`` line and its whole command / copy stage line (for the summary)."""
    sets = {"all": (data, total)}
    if large_only:
        ckpt = data / "ckpt"
        sets["large"] = (ckpt, sum(p.stat().st_size for p in ckpt.iterdir()))
    tools = ["rsync -a", "rgt-tui pull"] + ([OPEN] if ctx.args.open_connection else [])
    times = {(t, s): [] for s in sets for t in tools}
    wire = {(t, s): [] for s in sets for t in tools}
    cpu = {(t, s): [] for s in sets for t in tools}
    copy_rates: dict[str, list[float]] = {s: [] for s in sets}  # ours: the copy stage alone
    copy_secs: dict[str, list[float]] = {s: [] for s in sets}  # ours: its seconds
    both_cpu: dict[str, dict[str, list[bench_cpu.Cpu]]] = {s: {} for s in sets}  # issue 44
    stages: dict[str, list[str]] = {s: [] for s in sets}  # ours: where the time went
    for round_ in range(ctx.args.repeat):
        for set_name, (root, _size) in sets.items():
            for tool in tools[round_ % 2 :] + tools[: round_ % 2]:
                before = link.stats()
                command = ctx.command(tool, link.port, root)
                seconds, out, run_cpu = timed_cpu(command, ctx.touch, ctx.sshd.proc.pid)
                if tool == OPEN:  # what a user who pressed p waits: the pull alone
                    if not (found := OPEN_PULL.search(out)):
                        raise SystemExit(f"bench_pull: no '{OPEN_PULL.pattern}' in:\n{out}")
                    seconds = float(found[1])
                times[tool, set_name].append(seconds)
                both_cpu[set_name].setdefault(tool, []).append(run_cpu)
                if tool == "rgt-tui pull" and (found := COPY_STAGE.search(out)):
                    copy_rates[set_name].append(float(found[1]) * 1e6)
                    copy_secs[set_name].append(float(found[2]))
                if tool == "rgt-tui pull" and (found := STAGES.search(out)):
                    stages[set_name].append(stage_text(seconds, found[0]))
                if tool == OPEN and (found := STAGES.search(out)):
                    stages[set_name].append(f"(connection open) {found[0]}")
                after = link.stats()
                wire[tool, set_name].append(after["down_bytes"] - before["down_bytes"])
                cpu[tool, set_name].append(after["cpu_s"] - before["cpu_s"])
    print(f"link ({label}): {link.rtt_ms:.0f} ms round trip, {link.rate_mbit:.0f} Mbit/s "
          f"({link.rate / 1e6:.0f} MB/s), relay queue {ctx.args.queue_kib} KiB")  # fmt: skip
    shares: dict[tuple[str, str], float] = {}
    whole_copy: dict[str, str] = {}
    for (tool, set_name), values in times.items():
        root, size = sets[set_name]
        med = median(values)
        shares[tool, set_name] = size / med / link.rate
        what = "whole set  " if set_name == "all" else "large files"
        print(
            f"  {what} {tool:<13} {med:6.2f} s {size / med / 1e6:6.1f} MB/s "
            f"{shares[tool, set_name]:4.0%} of the link  wire {median(wire[tool, set_name]) / MIB:6.1f} MiB"
            f"  relay CPU {median(cpu[tool, set_name]):.2f} s  runs: "
            + ", ".join(f"{v:.2f}" for v in values)
        )
        if tool == "rgt-tui pull" and copy_secs[set_name]:
            # The rest of the whole command is connecting, the manifest, hashing and fsync.
            secs = copy_secs[set_name]
            whole_copy[set_name] = (
                f"rgt-tui pull: whole command {med:.2f} s, of which the copy stage "
                f"{median(secs):.2f} s (whole / copy {med / median(secs):.2f})"
            )
            print(
                f"  {what} {whole_copy[set_name]}; copy runs: "
                + ", ".join(f"{v:.2f}" for v in secs)
            )
    for set_name, (_root, size) in sets.items():
        for cpu_line in bench_cpu.cpu_lines(both_cpu[set_name], size, f"  {set_name}: "):
            print(cpu_line)
        for stage_line in stages[set_name]:
            print(f"  {set_name}: rgt-tui pull {stage_line}")
    print(f"  ({bench_cpu.load()}; relay chunk {ctx.args.relay_chunk_kib or 'default'} KiB)")
    bigs = sorted((data / "ckpt").iterdir())
    ceiling = asyncio.run(sftp_ceiling(ctx.sshd, link.port, bigs))
    print(
        f"  ceiling: bare asyncssh SFTP reads of the {len(bigs)} large files on "
        f"{len(bigs) * CEILING_SPLIT} channels of one connection (window "
        f"{CEILING_WINDOW // MIB} MiB and {CEILING_REQUESTS} × {CEILING_BLOCK // 1024} KiB "
        f"requests each, no hashing, no disk, after the opens): {ceiling:.0f} MB/s, "
        f"{ceiling * 1e6 / link.rate:.0%} of the link"
    )
    rs, ours = median(times["rsync -a", "all"]), median(times["rgt-tui pull", "all"])
    line = (
        f"ratio: {ratio_text(label, rs / ours)}  link ({label}) {link.rtt_ms:.0f} ms RTT {link.rate_mbit:.0f} "
        f"Mbit/s, whole set: rsync -a {rs:.2f} s ({shares['rsync -a', 'all']:.0%} of the "
        f"link), rgt-tui pull {ours:.2f} s ({shares['rgt-tui pull', 'all']:.0%})"
    )
    if large_only:
        rl, ol = median(times["rsync -a", "large"]), median(times["rgt-tui pull", "large"])
        line += (
            f"; large files alone: rsync {rl:.2f} s ({shares['rsync -a', 'large']:.0%}), "
            f"ours {ol:.2f} s ({shares['rgt-tui pull', 'large']:.0%}), ratio {rl / ol:.2f}"
        )
        if copy_rates["large"]:
            rate = median(copy_rates["large"])
            line += f"; our copy stage on the large files {rate / 1e6:.0f} MB/s ({rate / link.rate:.0%} of the link)"
    print(line)
    if ctx.args.open_connection:
        opened = median(times[OPEN, "all"])
        line += (
            f"; on a connection already open (the TUI's p, watch's periodic pull) "
            f"{opened:.2f} s: {rs / opened:.2f}× rsync"
        )
        print(f"  connection open: rgt-tui p {opened:.2f} s, {rs / opened:.2f}× rsync -a")
    if "all" not in whole_copy:  # the pull's summary had no copy stage: say so, not crash
        whole_copy["all"] = "rgt-tui pull: no copy stage in the pull's summary"
    return [line, f"  link ({label}) whole set, {whole_copy['all']}"]


def run_big(link: FarLink, ctx: Bench, data: Path, total: int) -> list[str]:
    """rgt-tui alone on the 3 GB set through ``link``: each run's whole command against
    its copy stage; prints the figures and returns the ``big:`` line.

    rsync is left out: bound by its one SSH channel's window (about 9 MB/s at 200 ms), it
    would take 5-6 minutes a run on this set, and the target here is not a ratio to it.
    """
    need = total * ctx.args.repeat  # every run's copy stays until the end (see Outputs)
    free = shutil.disk_usage(ctx.outputs.root).free
    if free < need + need // 10:
        raise SystemExit(
            f"bench_pull: big needs {need / 1e9:.1f} GB free under {ctx.outputs.root} for "
            f"{ctx.args.repeat} copies, {free / 1e9:.1f} GB is (lower --repeat)"
        )
    print(
        f"link (big): {link.rtt_ms:.0f} ms round trip, {link.rate_mbit:.0f} Mbit/s "
        f"({link.rate / 1e6:.0f} MB/s), relay queue {ctx.args.queue_kib} KiB; rgt-tui pull "
        "alone (rsync, window-bound at about 9 MB/s here, would take 5-6 minutes a run)",
        flush=True,
    )
    wholes, copies = [], []
    for run in range(ctx.args.repeat):
        # Every run's copy (3 GB each) stays in the page cache and can push the data set
        # out of it; read it back in, so sshd serves each run from memory as the first.
        warm(data)
        before = link.stats()
        seconds, out = timed_output(ctx.command("rgt-tui pull", link.port, data), ctx.touch)
        wire = link.stats()["down_bytes"] - before["down_bytes"]
        found = COPY_STAGE.search(out)
        if not found:
            raise SystemExit(
                f"bench_pull: no 'copy stage: X MB/s over Y s' in the pull's summary:\n{out}"
            )
        copy = float(found[2])
        wholes.append(seconds)
        copies.append(copy)
        print(
            f"  run {run + 1}: whole command {seconds:6.2f} s, copy stage {copy:6.2f} s "
            f"({found[1]} MB/s), whole / copy {seconds / copy:.2f}; "
            f"{total / seconds / 1e6:.0f} MB/s overall, {total / seconds / link.rate:.0%} of "
            f"the link, wire {wire / MIB:.0f} MiB",
            flush=True,
        )
    whole, copy = median(wholes), median(copies)
    ratio = median([w / c for w, c in zip(wholes, copies, strict=True)])  # each run's pair
    print(
        f"  median of {len(wholes)}: whole command {whole:.2f} s ({total / whole / 1e6:.0f} "
        f"MB/s, {total / whole / link.rate:.0%} of the link), copy stage {copy:.2f} s"
    )
    line = f"big: whole / copy {ratio:.2f} (target ≤ {BIG_TARGET:.2f})"
    print(line)
    detail = (
        f"  link (big) {link.rtt_ms:.0f} ms RTT {link.rate_mbit:.0f} Mbit/s, {total / MIB:.0f} "
        f"MiB: whole command {whole:.2f} s, copy stage {copy:.2f} s (medians; the ratio is "
        "the median of each run's own)"
    )
    return [line, detail]


# -- the run ------------------------------------------------------------------------------


class Bench:
    """What every measurement shares: sshd, the commands, the output folders."""

    def __init__(self, args: argparse.Namespace, base: Path, sshd: Sshd, outputs: Outputs) -> None:
        self.args, self.base, self.sshd, self.outputs = args, base, sshd, outputs
        self.rgt = rgt_command()
        self.touch = 0
        self.hosts: list[Path] = []

    def command(self, tool: str, port: int, root: Path) -> list[str]:
        """The command line of one run of ``tool`` pulling ``root`` through ``port``."""
        sshd, cipher = self.sshd, self.args.cipher
        if tool in ("rgt-tui pull", OPEN):
            out = self.outputs.new("rgt")
            self.hosts.append(hosts_file(self.base, sshd, port, root, out, f"p{port}"))
            hosts = str(self.hosts[-1])
            if tool == OPEN:
                return [sys.executable, str(PULL_OPEN), "bench", "--hosts", hosts,
                        "--bulk", self.args.bulk]  # fmt: skip
            return [*self.rgt, "pull", "bench", "--hosts", hosts, "--bulk", self.args.bulk]
        remote = f"{sshd.user}@127.0.0.1:{root}"
        if tool == "rsync -a":
            ssh = " ".join(["ssh", "-p", str(port), *sshd.ssh_options(cipher)])
            return ["rsync", "-a", "-e", ssh, remote + "/", f"{self.outputs.new('rsync')}/"]
        scp = ["scp", "-r", "-q", "-P", str(port), *sshd.ssh_options(cipher)]
        return [*scp, remote, str(self.outputs.new("scp"))]


def run_loopback(ctx: Bench, data: Path, total: int) -> str:
    """rgt-tui, rsync and scp straight to sshd; then an interrupted and resumed pull."""
    args, sshd, rgt = ctx.args, ctx.sshd, ctx.rgt
    names = ["rgt-tui pull", "rsync -a", "scp -r"]
    times: dict[str, list[float]] = {name: [] for name in names}
    cpus: dict[str, list[bench_cpu.Cpu]] = {name: [] for name in names}
    stages: list[str] = []
    for round_ in range(args.repeat):
        # Each round starts with the next tool: whatever slows the machine's first run
        # of a round (files deleted minutes before: ext4 without a journal skips inodes
        # freed in the last 1-6 minutes when it creates files) falls on each in turn.
        for name in names[round_ % 3 :] + names[: round_ % 3]:
            command = ctx.command(name, sshd.port, data)
            seconds, out, cpu = timed_cpu(command, ctx.touch, sshd.proc.pid)
            times[name].append(seconds)
            cpus[name].append(cpu)
            if found := STAGES.search(out):
                stages.append(stage_text(seconds, found[0]))
    direct = ctx.hosts[-1]
    start = time.monotonic()
    subprocess.run(
        [*rgt, "verify", "bench", "--hosts", str(direct), "--offline"], stdout=subprocess.DEVNULL
    )
    verify_s = time.monotonic() - start
    print("link (loopback): straight to sshd on 127.0.0.1, no relay")
    for name, values in times.items():
        med = median(values)
        print(
            f"{name:<14} {med:6.2f} s  {total / med / 1e6:6.0f} MB/s   runs: "
            + ", ".join(f"{v:.2f}" for v in values)
        )
    for line in bench_cpu.cpu_lines(cpus, total):
        print(line)
    print(f"  ({bench_cpu.load()}; pull stages per run: {' | '.join(stages) or 'not printed'})")
    print(f"(then rgt-tui verify --offline, re-hashing every local file: {verify_s:.2f} s)")
    bigs = sorted((data / "ckpt").iterdir())
    ceiling = asyncio.run(sftp_ceiling(sshd, sshd.port, bigs))
    print(
        f"ceiling: bare asyncssh SFTP reads of the {len(bigs)} large files on "
        f"{len(bigs) * CEILING_SPLIT} channels (no hashing, no disk): {ceiling:.0f} MB/s"
    )

    if not args.skip_resume:
        # Interrupted and resumed, through the counting proxy.
        proxy = CountingProxy(ctx.base, sshd.port)
        sshd.alias_ports.append(proxy.port)
        sshd.start()  # rewrites known_hosts with the proxy's port (running: no restart)
        try:
            proxied = hosts_file(
                ctx.base, sshd, proxy.port, data, ctx.outputs.new("rgt-wire"), "proxied"
            )
            w0 = proxy.total()
            timed([*rgt, "pull", "bench", "--hosts", str(proxied)])
            clean = proxy.total() - w0
            w0 = proxy.total()
            timed([*rgt, "pull", "bench", "--hosts", str(proxied)])
            noop = proxy.total() - w0
            out = ctx.outputs.new("rgt-int")
            proxied = hosts_file(ctx.base, sshd, proxy.port, data, out, "proxied")
            w0 = proxy.total()
            big_bytes = bigs[0].stat().st_size
            parts, codes = interrupted_pull(rgt, proxied, out, sshd, 0.4, big_bytes)
            both = proxy.total() - w0
        finally:
            proxy.stop()
            sshd.alias_ports.remove(proxy.port)
        if not parts:
            print("interrupted: the pull finished before a part file passed 40 % (not measured)")
        else:
            how = (
                "the same pull reconnected and resumed"
                if len(codes) == 1
                else f"the pull gave up (exit {codes[0]}); a second pull resumed (exit {codes[1]})"
            )
            print(f"interrupted: sshd stopped mid-file and restarted 1 s later; {how}")
            for path, size in sorted(parts.items()):
                print(f"  {path}: {size / MIB:.1f} MiB when sshd stopped")
            print(
                f"wire bytes: clean pull {clean / MIB:.1f} MiB, no-op re-pull {noop / MIB:.2f} "
                f"MiB, interrupted+resumed {both / MIB:.1f} MiB"
            )
            resent = both - clean - noop
            # The no-op re-pull stands for the resumed pull's second handshake and manifest;
            # the two differ by a few KiB, so nothing re-sent can come out slightly negative.
            note = f" (the wire difference was {resent / MIB:.2f} MiB)" if resent < 0 else ""
            print(f"re-sent bytes: {max(resent, 0) / MIB:.2f} MiB{note}")
    rs, ours = median(times["rsync -a"]), median(times["rgt-tui pull"])
    line = f"ratio: {ratio_text('loopback', rs / ours)}  link (loopback): rsync -a {rs:.2f} s, rgt-tui pull {ours:.2f} s ({bench_cpu.load()})"
    print(line)
    return line


def links_of(args: argparse.Namespace) -> list[tuple[str, float, float]]:
    """(label, rtt ms, rate Mbit/s) per link to measure; rtt 0 = loopback, no relay."""
    custom = args.rtt_ms is not None or args.rate_mbit is not None
    link = args.link or ("custom" if custom else "loopback")
    if link == "custom" and not (args.rtt_ms and args.rate_mbit):
        raise SystemExit("bench_pull: a custom link needs both --rtt-ms and --rate-mbit")
    chosen = []
    if link in ("far", "all"):
        chosen += [(name, *FAR_LINKS[name]) for name in FAR_LINKS]
    if link in ("far", "near", "all"):
        chosen.append(NEAR_LINK)
    if link == "big":  # never in "all": 3 GB a run
        chosen.append(BIG_LINK)
    if link == "bwlimit":  # never in "all": minutes of paced pulls
        chosen.append(("bwlimit", 0.0, 0.0))
    if link == "compress":  # never in "all": the tar stream's compression (U15)
        chosen.append(("compress", 0.0, 0.0))
    if link == "custom" or (custom and link != "custom"):
        chosen.append(("custom", args.rtt_ms, args.rate_mbit))
    if link in ("loopback", "all"):
        chosen.append(("loopback", 0.0, 0.0))
    return chosen


def data_set(args: argparse.Namespace, base: Path, label: str) -> tuple[Path, int]:
    """The data set for the link ``label`` (made once, kept under --dir); its bytes."""
    defaults = {"loopback": LOOPBACK_DATA, "big": BIG_DATA}.get(label, FAR_DATA)
    big_files = args.big_files if args.big_files is not None else defaults[0]
    big_mib = args.big_mib if args.big_mib is not None else defaults[1]
    small = args.small_files if args.small_files is not None else defaults[2]
    data = base / "box" / f"results-{big_files}x{big_mib}-{small}"
    total = make_data(data, big_files, big_mib, small)
    count = sum(1 for p in data.rglob("*") if p.is_file() and p.name != ".spec")
    print(
        f"data set: {count} files, {total / MIB:.0f} MiB ({big_files} × {big_mib} MiB "
        f"+ {small} small) served by OpenSSH sshd on 127.0.0.1 (warm page cache)"
    )
    return data, total


def main() -> int:
    """Run every measurement and print the figures: one ``ratio: X×`` line per link (a
    ``big:`` line for big)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--link",
        choices=["loopback", "far", "near", "big", "all", "custom", "bwlimit", "compress"],
        help="loopback (default): straight to sshd; far: through the relay at 200 ms / "
        "1 Gbit/s, 100 ms / 400 Mbit/s and a near box (4 ms / 1 Gbit/s); near: that one "
        "alone; big: the 3 GB set at 200 ms / 1 Gbit/s, rgt-tui alone; all: far then "
        "loopback; custom: --rtt-ms/--rate-mbit; bwlimit: pull --bwlimit against its limit; "
        "compress: --compress off/on/auto on a text-heavy set (--text-files) near and far",
    )
    parser.add_argument("--rtt-ms", type=float, help="a custom far link's round trip")
    parser.add_argument("--rate-mbit", type=float, help="a custom far link's rate, each way")
    parser.add_argument(
        "--queue-kib", type=int, default=4096, help="relay: bytes waiting for the rate (4096)"
    )
    parser.add_argument(
        "--tcp-window-kib",
        type=int,
        default=0,
        help="relay: emulate a TCP receive window per connection (0 = off, the default)",
    )
    parser.add_argument(
        "--relay-chunk-kib",
        type=int,
        default=0,
        help="relay: pass data on in pieces of at most this many KiB (0 = as read, up to "
        "256 KiB); smaller pieces make the relay cost more CPU per byte (issue 44)",
    )
    parser.add_argument(
        "--no-large-only",
        dest="large_only",
        action="store_false",
        help="far links: skip the second pull of the large files alone",
    )
    parser.add_argument(
        "--no-open-connection",
        dest="open_connection",
        action="store_false",
        help="far links: skip the pull on a connection already open (scripts/pull_open.py: "
        "the TUI's p and watch's periodic pull, timed from the pull's start)",
    )
    parser.add_argument("--big-files", type=int, help="default 3")
    parser.add_argument(
        "--big-mib", type=int, help="default 300 (loopback), 100 (far, near), 1024 (big)"
    )
    parser.add_argument("--small-files", type=int, help="default 3000 (loopback), 600 (far)")
    parser.add_argument(
        "--text-files", type=int, default=2000, help="compress: JSON/log files of 5-200 KB"
    )
    parser.add_argument("--dir", type=Path, default=Path("/tmp/rgt-bench"))
    parser.add_argument(
        "--repeat", type=int, default=5, help="runs per tool, taken in turn; the median counts"
    )
    parser.add_argument(
        "--skip-resume", action="store_true", help="loopback: skip the interrupted pull"
    )
    parser.add_argument(
        "--cipher",
        metavar="NAME",
        help="same SSH cipher for every tool (ssh -c NAME; rgt-tui through a private "
        "~/.ssh/config, which asyncssh reads), e.g. aes128-gcm@openssh.com",
    )
    parser.add_argument(
        "--bulk",
        choices=("auto", "ssh", "sftp"),
        default="auto",
        help="rgt-tui pull --bulk: how its large files come (auto: through OpenSSH's ssh "
        "from a near box; sftp: as before issue 44's ssh path)",
    )
    bench_bwlimit.add_arguments(parser)
    args = parser.parse_args()
    links = links_of(args)
    for tool in (SSHD, "ssh", "rsync", "scp"):
        if not shutil.which(tool):
            print(f"bench_pull: {tool} not found", file=sys.stderr)
            return 2
    base = args.dir.resolve()
    base.mkdir(parents=True, exist_ok=True)
    outputs = Outputs(base)
    sshd = Sshd(base)
    sshd.start()
    ctx = Bench(args, base, sshd, outputs)
    lines = []
    try:
        compile_package()
        if args.cipher:
            # asyncssh reads ~/.ssh/config: a private HOME gives rgt-tui the same cipher.
            home = base / "home"
            (home / ".ssh").mkdir(parents=True, exist_ok=True)
            (home / ".ssh" / "config").write_text(f"Host *\n  Ciphers {args.cipher}\n")
            os.environ["HOME"] = str(home)
        for label, rtt_ms, rate_mbit in links:
            if label == "bwlimit":
                lines += bench_bwlimit.run_bwlimit(ctx, args)
                continue
            if label == "compress":
                lines += bench_compress.run_compress(ctx, args)
                continue
            data, total = data_set(args, base, label)
            ctx.touch = touch_size(total)
            if label == "loopback":
                lines.append(run_loopback(ctx, data, total))
                continue
            link = FarLink(base, sshd.port, rtt_ms, rate_mbit, args)
            sshd.alias_ports.append(link.port)
            sshd.start()  # known_hosts for the relay's port too
            try:
                if label == "big":
                    lines += run_big(link, ctx, data, total)
                else:
                    lines += run_far(label, link, ctx, data, total, args.large_only)
            finally:
                link.stop()
        if len(links) > 1:  # one link: its lines were just printed
            print("summary:")
            for line in lines:
                print(line)
    finally:
        sshd.stop()
        outputs.remove()
    return 0


if __name__ == "__main__":
    sys.exit(main())
