"""This machine as tests look at it: processes (from /proc, no psutil), its boot id, tmux
servers, the oldest python3, tmpfs mounts."""

from __future__ import annotations

import contextlib
import functools
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest


def alive(pid: int) -> bool:
    """Running and not a zombie (PID 1 here may never reap orphans)."""
    try:
        os.kill(pid, 0)
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (ProcessLookupError, FileNotFoundError):
        return False
    return state != "Z"


def children(ppid: int) -> list[int]:
    """Pids whose parent is ``ppid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # Fields after the parenthesised command name: state, ppid, ...
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == ppid:
            found.append(int(entry.name))
    return found


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``: its children, theirs, and so on."""
    found = []
    for child in children(pid):
        found += [child, *descendants(child)]
    return found


def kill_processes_under(base: Path) -> list[int]:
    """SIGKILL every process whose working directory is inside ``base`` (ours by construction)."""
    killed = []
    base_s = str(base.resolve())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if cwd == base_s or cwd.startswith(base_s + "/"):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGKILL)
                killed.append(int(entry.name))
    return killed


def free_port() -> int:
    """A loopback TCP port nothing is bound to, released at once for a server to take.

    Picked below the kernel's ephemeral range (in 10000-19999): there, no client's
    outgoing port and no server bound to port 0 (the loopback boxes, every other test's
    listener) can take it between this pick and the server's bind, which the kernel's own
    pick left open. Only another pick here can, one in thousands of ports; a server that
    finds it taken picks again, as ``OpenSshServer.start`` does.
    """
    return _port_between(10000, 20000)


def rendezvous_port() -> int:
    """A free loopback port for a server a test names long before it starts (torchrun's
    rendezvous store, bound when the job runs): below the kernel's ephemeral range, where
    the suite's outgoing connections cannot hold it by then (a CI run's rendezvous failed
    with RendezvousConnectionError), and above ``free_port``'s picks and the product's
    own default for a Slurm job's (slurm_task.sh: 20000 + job id % 20000; the test
    cluster's job ids are small)."""
    return _port_between(21000, _ephemeral_low())


# Not the random module: pytest-randomly seeds it alike in every worker, which would
# pick the same ports in each.
_PICK = random.SystemRandom()


def _port_between(low: int, high: int) -> int:
    for _ in range(200):
        port = _PICK.randrange(low, max(low + 1, high))
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free loopback port in {low}-{high - 1}")


def _ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (32768 when it cannot be read)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


@contextlib.contextmanager
def closed_port() -> Iterator[int]:
    """A loopback TCP port that refuses connections while the block runs: bound, never
    listening, so no other test (or worker running beside this one) can take it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


def this_boot_id() -> str:
    """This machine's boot id: what every loopback box and local sshd reports."""
    return Path("/proc/sys/kernel/random/boot_id").read_text().strip()


def tmux_env(tmux_tmpdir: Path) -> dict[str, str]:
    """An environment that addresses the tmux server under ``tmux_tmpdir`` — without TMUX,
    which inside a tmux pane would point every command at the enclosing server."""
    return {k: v for k, v in os.environ.items() if k != "TMUX"} | {"TMUX_TMPDIR": str(tmux_tmpdir)}


def kill_tmux_server(tmux_tmpdir: Path) -> None:
    """Stop the tmux server under ``tmux_tmpdir`` (and with it every session it runs)."""
    subprocess.run(["tmux", "kill-server"], capture_output=True, env=tmux_env(tmux_tmpdir))


def kill_session(session: str, tmux_tmpdir: Path | None = None) -> None:
    """``tmux kill-session -t =SESSION`` on the default server or the one under tmux_tmpdir."""
    env = tmux_env(tmux_tmpdir) if tmux_tmpdir else None
    subprocess.run(["tmux", "kill-session", "-t", f"={session}"], capture_output=True, env=env)


# Read at import, before any test points HOME elsewhere: pythons installed under it are found.
_HOME = Path.home()


@functools.cache
def oldest_python3() -> tuple[str, tuple[int, int]]:
    """The oldest working python3 (>= 3.6) among pyenv's and PATH's, else this one: boxes
    run old pythons, and the on-box programs must run there (3.6 on the dev image; CI has
    no 3.6 to install, so there it is the oldest it has)."""
    found = [(tuple(sys.version_info[:2]), sys.executable)]
    candidates = sorted((_HOME / ".pyenv/versions").glob("3.*/bin/python3"))
    candidates += [
        Path(p) for p in filter(None, (shutil.which(f"python3.{m}") for m in range(6, 10)))
    ]
    for candidate in candidates:
        out = subprocess.run(
            [str(candidate), "-c", "import sys; print(sys.version_info[0], sys.version_info[1])"],
            capture_output=True,
            text=True,
        )
        if out.returncode == 0:
            version = tuple(int(x) for x in out.stdout.split())
            if version >= (3, 6):
                found.append((version, str(candidate)))
    version, path = min(found)
    return path, version  # type: ignore[return-value]


@contextlib.contextmanager
def tmpfs(path: Path, size: str = "8m", inodes: int | None = None) -> Iterator[Path]:
    """A tmpfs of ``size`` (and ``inodes``, when given) mounted at ``path`` for the
    duration of the block: a full disk is a real ENOSPC (these tests need root)."""
    path.mkdir(parents=True, exist_ok=True)
    options = f"size={size}" + (f",nr_inodes={inodes}" if inodes is not None else "")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.fail(f"cannot mount a tmpfs (these tests need root): {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


@contextlib.contextmanager
def read_only_tmpfs(path: Path) -> Iterator[Path]:
    """A tmpfs mounted read-only at ``path`` (its real path): no login can write there,
    root's included (these tests run as root, where a chmod stops no one)."""
    with tmpfs(path) as mounted:
        subprocess.run(["mount", "-o", "remount,ro", str(mounted)], check=True)
        yield mounted.resolve()


def stalled_tool(tool: str, folder: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tool`` put first on PATH (the loopback boxes run with the test's PATH) as a
    wrapper that waits while the returned flag file exists, then runs the real one: a
    slow disk, a held lock or a stalled listing, started and ended by the test (touch
    the flag, unlink it)."""
    real = shutil.which(tool)
    assert real is not None, f"{tool} is not on PATH"
    flag = folder / f"stall-{tool}"
    bin_dir = folder / f"stalled-{tool}"
    bin_dir.mkdir()
    wrapper = bin_dir / tool
    wrapper.write_text(f'#!/bin/sh\nwhile [ -e {flag} ]; do sleep 0.05; done\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return flag
