#!/usr/bin/env python3
"""Benchmark `rgt-tui pull` against `rsync -a` and `scp -r` over OpenSSH's sshd on loopback.

One data set (by default 3 × 300 MiB plus 3000 small files, about 1 GB) is served by a
private `sshd -D` on 127.0.0.1 and pulled, in the same run, by:

- `rgt-tui pull` (manifest hashed on the box, every file hashed locally and checked, fsync);
- `rsync -a` and `scp -r` through the `ssh` client with the same key;

in ``--repeat`` rounds (5): each tool once per round, each round starting with the next
tool; the median of each tool's runs counts, and every run starts alike (``same_start``).
Then a pull is interrupted by stopping sshd mid-file and resumed. A small TCP proxy in
front of sshd counts the bytes the server sent, so the bytes sent twice are measured on
the wire: (interrupted + resumed) − (a clean pull) − (a no-op re-pull: handshake and
manifest). The last line is ``ratio: X`` = rsync's seconds / rgt-tui's seconds.

Usage: .venv/bin/python scripts/bench_pull.py [--big-files 3] [--big-mib 300]
       [--small-files 3000] [--dir /tmp/rgt-bench] [--repeat 5]
Needs /usr/sbin/sshd, ssh, rsync and scp. Everything lives under --dir (the data set is
kept between runs, so it is made once; each run's copy goes to a new folder under
``--dir/out``, deleted at the end); nothing else is touched.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import asyncssh

SSHD = "/usr/sbin/sshd"
MIB = 1 << 20


# -- a private sshd (the minimal part of tests/sshd_server.py) ----------------------------


class Sshd:
    """`sshd -D` on a loopback port with its own host key, client key and known_hosts."""

    def __init__(self, base: Path) -> None:
        self.base = base
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
            "PermitRootLogin yes", "LogLevel ERROR", "UseDNS no", "PerSourcePenalties no",
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
    total = 0
    for path in root.rglob("*"):
        if path.is_file() and path.name != ".spec":
            total += path.stat().st_size
            with open(path, "rb") as f:  # warm the page cache the same way for every tool
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
    """`rgt-tui pull` when the console script has it, else this package's own entry point."""
    exe = Path(sys.executable).with_name("rgt-tui")
    if (
        exe.exists()
        and subprocess.run([exe, "pull", "--help"], capture_output=True).returncode == 0
    ):
        return [str(exe)]
    return [sys.executable, "-m", "rgt_tui.cli_pull"]


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
    same_start(touch_bytes)
    start = time.monotonic()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, **kw)
    return time.monotonic() - start


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


async def interrupted_pull(hosts: Path, sshd: Sshd, stop_at: float) -> tuple[object, object]:
    """Pull until a big file passes ``stop_at`` of its size, stop sshd, restart, resume."""
    from rgt_tui.domain.config import load_fleet
    from rgt_tui.services.pull import PullError, PullOptions, pull_host
    from rgt_tui.transport import transport_for
    from rgt_tui.transport.backoff import Backoff

    fleet = load_fleet(hosts)
    host = fleet.host("bench")
    stopped: list[bool] = []
    parts: dict[str, int] = {}

    def on_progress(p) -> None:  # noqa: ANN001
        if not stopped and any(f.size >= 64 * MIB and f.done >= stop_at * f.size for f in p.active):
            stopped.append(True)
            parts.update({f.path: f.done for f in p.active})
            sshd.stop()  # blocks the loop for a moment: the box is gone when it returns

    options = PullOptions(max_attempts=2, backoff=Backoff(0.05, 0.1), progress_interval_s=0.05)
    transport = transport_for(host)
    try:
        await pull_host(
            host, fleet.results_dir, transport, options=options, on_progress=on_progress
        )
        raise RuntimeError("the pull finished before it could be interrupted")
    except PullError as exc:
        first = exc
    finally:
        await transport.close()
    sshd.start()  # same port: the proxy forwards there
    transport = transport_for(host)
    try:
        second = await pull_host(host, fleet.results_dir, transport, options=PullOptions())
    finally:
        await transport.close()
    return first, second


async def transport_ceiling(hosts: Path, paths: list[Path]) -> float:
    """MB/s of bare SFTP reads of ``paths`` over rgt-tui's own transport (no hash, no disk)."""
    from rgt_tui.domain.config import load_fleet
    from rgt_tui.transport import transport_for

    transport = transport_for(load_fleet(hosts).host("bench"))
    await transport.connect()
    try:
        sftp = await transport.sftp()  # type: ignore[attr-defined]
        start, total = time.monotonic(), 0
        for path in paths:
            async with await sftp.open(
                str(path), "rb", block_size=255 * 1024, max_requests=16
            ) as f:
                async for _, data in await f.read_parallel(path.stat().st_size, 0):
                    total += len(data)
        return total / (time.monotonic() - start) / 1e6
    finally:
        await transport.close()


def main() -> int:
    """Run every measurement and print the figures, ending with ``ratio: X``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big-files", type=int, default=3)
    parser.add_argument("--big-mib", type=int, default=300)
    parser.add_argument("--small-files", type=int, default=3000)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/rgt-bench"))
    parser.add_argument(
        "--repeat", type=int, default=5, help="runs per tool, taken in turn; the median counts"
    )
    parser.add_argument(
        "--cipher",
        metavar="NAME",
        help="same SSH cipher for every tool (ssh -c NAME; rgt-tui through a private "
        "~/.ssh/config, which asyncssh reads), e.g. aes128-gcm@openssh.com",
    )
    args = parser.parse_args()
    for tool in (SSHD, "ssh", "rsync", "scp"):
        if not shutil.which(tool):
            print(f"bench_pull: {tool} not found", file=sys.stderr)
            return 2
    base = args.dir.resolve()
    base.mkdir(parents=True, exist_ok=True)
    data = base / "box" / "results"
    total = make_data(data, args.big_files, args.big_mib, args.small_files)
    count = sum(1 for p in data.rglob("*") if p.is_file() and p.name != ".spec")
    print(
        f"data set: {count} files, {total / MIB:.0f} MiB ({args.big_files} × {args.big_mib} MiB "
        f"+ {args.small_files} small) served by OpenSSH sshd on 127.0.0.1 (warm page cache)"
    )

    outputs = Outputs(base)
    sshd = Sshd(base)
    sshd.start()
    proxy = CountingProxy(base, sshd.port)
    sshd.alias_ports.append(proxy.port)
    sshd.start()  # rewrites known_hosts with the proxy's port (already running: no restart)
    try:
        rgt = rgt_command()
        compile_package()
        if args.cipher:
            # asyncssh reads ~/.ssh/config: a private HOME gives rgt-tui the same cipher.
            home = base / "home"
            (home / ".ssh").mkdir(parents=True, exist_ok=True)
            (home / ".ssh" / "config").write_text(f"Host *\n  Ciphers {args.cipher}\n")
            os.environ["HOME"] = str(home)
        remote = f"{sshd.user}@127.0.0.1:{data}"
        ssh = " ".join(["ssh", "-p", str(sshd.port), *sshd.ssh_options(args.cipher)])
        scp = ["scp", "-r", "-q", "-P", str(sshd.port), *sshd.ssh_options(args.cipher)]
        hosts: list[Path] = []

        def rgt_run() -> list[str]:
            hosts.append(hosts_file(base, sshd, sshd.port, data, outputs.new("rgt"), "direct"))
            return [*rgt, "pull", "bench", "--hosts", str(hosts[-1])]

        commands = {
            "rgt-tui pull": rgt_run,
            "rsync -a": lambda: [
                "rsync",
                "-a",
                "-e",
                ssh,
                remote + "/",
                f"{outputs.new('rsync')}/",
            ],
            "scp -r": lambda: [*scp, remote, str(outputs.new("scp"))],
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        touch = touch_size(total)
        names = list(commands)
        for round_ in range(args.repeat):
            # Each round starts with the next tool: whatever slows the machine's first run
            # of a round (files deleted minutes before: ext4 without a journal skips inodes
            # freed in the last 1-6 minutes when it creates files) falls on each in turn.
            for name in names[round_ % 3 :] + names[: round_ % 3]:
                times[name].append(timed(commands[name](), touch))
        direct = hosts[-1]
        start = time.monotonic()
        subprocess.run(
            [*rgt, "verify", "bench", "--hosts", str(direct), "--offline"],
            stdout=subprocess.DEVNULL,
        )
        verify_s = time.monotonic() - start
        for name, values in times.items():
            med = statistics.median(values)
            print(
                f"{name:<14} {med:6.2f} s  {total / med / 1e6:6.0f} MB/s   runs: "
                + ", ".join(f"{v:.2f}" for v in values)
            )
        print(f"(then rgt-tui verify --offline, re-hashing every local file: {verify_s:.2f} s)")
        bigs = sorted((data / "ckpt").iterdir())
        ceiling = asyncio.run(transport_ceiling(direct, bigs))
        print(
            f"transport ceiling: bare SFTP reads of the large files over rgt-tui's "
            f"connection (no hashing, no disk): {ceiling:.0f} MB/s"
        )

        # Interrupted and resumed, through the counting proxy.
        proxied = hosts_file(base, sshd, proxy.port, data, outputs.new("rgt-wire"), "proxied")
        w0 = proxy.total()
        timed([*rgt, "pull", "bench", "--hosts", str(proxied)])
        clean = proxy.total() - w0
        w0 = proxy.total()
        timed([*rgt, "pull", "bench", "--hosts", str(proxied)])
        noop = proxy.total() - w0
        proxied = hosts_file(base, sshd, proxy.port, data, outputs.new("rgt-int"), "proxied")
        w0 = proxy.total()
        first, second = asyncio.run(interrupted_pull(proxied, sshd, 0.4))
        both = proxy.total() - w0
        resumed = [f for f in second.pulled if f.resumed_from]
        resent = both - clean - noop
        print(f"interrupted: sshd stopped mid-file ({first.message.split(';')[0]})")
        for f in resumed:
            print(
                f"  {f.path}: resumed from {f.resumed_from / MIB:.1f} MiB, fetched "
                f"{f.received / MIB:.1f} MiB of {f.size / MIB:.1f} MiB"
            )
        window = 256 * 1024 * 16
        print(
            f"wire bytes: clean pull {clean / MIB:.1f} MiB, no-op re-pull {noop / MIB:.2f} MiB, "
            f"interrupted+resumed {both / MIB:.1f} MiB"
        )
        # The no-op re-pull stands for the resumed pull's second handshake and manifest;
        # the two differ by a few KiB, so nothing re-sent can come out slightly negative.
        note = f"; the wire difference was {resent / MIB:.2f} MiB" if resent < 0 else ""
        print(
            f"re-sent bytes: {max(resent, 0) / MIB:.2f} MiB over {len(resumed)} interrupted "
            f"file(s) (one chunk = {window // MIB} MiB in flight per file{note})"
        )
        ratio = statistics.median(times["rsync -a"]) / statistics.median(times["rgt-tui pull"])
        print(f"ratio: {ratio:.2f}")
    finally:
        proxy.stop()
        sshd.stop()
        outputs.remove()
    return 0


if __name__ == "__main__":
    sys.exit(main())
