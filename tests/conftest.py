"""Fixtures for every folder: a state folder of each test's own, loopback SSH fleets, a
real OpenSSH server, a HOME of the test's own, UTC, and a private tmux server.

Helpers (not fixtures) live in ``support/``."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from support.queues import SCRIPT_RUN, QueueFleet, QueueSshServer
from support.slurm import slurm_cluster, slurm_queue_fleet  # noqa: F401 (fixtures)
from support.sshd import INSTALL_HINT, SSHD, OpenSshServer
from support.tmux import Tmux

from rgt_tui.demo.loopback import LoopbackFleet

# A run started in the background by a script (`bash .ci/run &`, nohup) inherits SIGINT
# (and under nohup SIGHUP) ignored, and so does every process the tests start: the
# Ctrl-C tests' SIGINT and a box shell's `trap … HUP` then do nothing, and fourteen
# tests failed in such a run. These tests send the signals on purpose, so they start
# from the defaults (a handler here is reset to the default in each child at exec).
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
if signal.getsignal(signal.SIGHUP) == signal.SIG_IGN:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


@pytest.fixture(autouse=True)
def state_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test writes the user's journal or settings: ``XDG_STATE_HOME`` is a folder of
    the test's own (the journal is ``state_dir / "rgt-tui" / "journal"``)."""
    state = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    return state


# A login shell's `pyenv init` (in this development machine's root ~/.bashrc) takes a
# lock file while it rehashes; a test that kills a box's shell in that instant (a queue
# kill, a box stopped) leaves the lock, and every later SSH session's shell then waits
# 60 s for it (pyenv-rehash), so every OpenSSH test after it times out. A real rehash
# holds it well under a second: one older than this is stale.
_PYENV_LOCK = Path(pwd.getpwuid(os.getuid()).pw_dir) / ".pyenv" / "shims" / ".pyenv-shim"
_STALE_S = 5.0


@pytest.fixture(autouse=True)
def _no_stale_shell_lock() -> None:
    """Before each test: a stale pyenv rehash lock (above) is removed."""
    with contextlib.suppress(OSError):
        if time.time() - _PYENV_LOCK.stat().st_mtime > _STALE_S:
            _PYENV_LOCK.unlink()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME of the test's own, no ssh-agent: no ~/.ssh until something creates it."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    return home


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Local time is UTC ('lost since hh:mm' is local time): screens match everywhere."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    """A private tmux server of the test's own, killed afterwards."""
    assert shutil.which("tmux"), "tmux is required for this test"
    server = Tmux(tmp_path)
    yield server
    server.kill()


@pytest.fixture
async def make_loopback_fleet(
    tmp_path: Path,
) -> AsyncIterator[Callable[[int], Awaitable[LoopbackFleet]]]:
    """Factory: ``await make_loopback_fleet(n)`` starts an n-box fleet; all stop at teardown."""
    fleets: list[LoopbackFleet] = []

    async def make(n: int = 3) -> LoopbackFleet:
        fleet = LoopbackFleet(n, tmp_path / f"fleet{len(fleets)}")
        fleets.append(fleet)
        await fleet.start()
        return fleet

    yield make
    for fleet in fleets:
        await fleet.stop()


@pytest.fixture
async def loopback_fleet(
    make_loopback_fleet: Callable[[int], Awaitable[LoopbackFleet]],
) -> LoopbackFleet:
    """A started 3-box loopback fleet (box1..box3) in tmp_path."""
    return await make_loopback_fleet(3)


@pytest.fixture
def openssh_server(tmp_path: Path) -> Iterator[OpenSshServer]:
    """A real OpenSSH sshd on loopback with host ``real1``; fails when sshd is missing."""
    if not SSHD.exists():
        pytest.fail(f"{SSHD} is missing: {INSTALL_HINT}")
    server = OpenSshServer(tmp_path / "openssh")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def make_queue_fleet(tmp_path: Path) -> AsyncIterator[Callable[..., Awaitable[QueueFleet]]]:
    """Factory: ``await make_queue_fleet(n, run=TEMPLATE, workload=False)`` starts a loopback
    fleet whose hosts have ``queue = queues/<box>.txt`` and the run template.

    Each fleet gets its own tmux server (a short TMUX_TMPDIR: socket paths are limited to
    108 bytes), so test runs side by side never share a ``rgt-box1`` session. Teardown
    stops the fleet and that server, and kills any runner or cell process still running
    in the fleet's directories (they detach on purpose).
    """
    made: list[QueueFleet] = []

    async def make(n: int = 1, *, run: str | None = None, workload: bool = False) -> QueueFleet:
        base = tmp_path / f"qfleet{len(made)}"
        tmux = Path(tempfile.mkdtemp(prefix="rgtq-"))
        loopback = LoopbackFleet(
            n, base, queue_dir=base / "queues", run=run, workload=workload, tmux_tmpdir=tmux
        )
        made.append(QueueFleet(loopback))
        await loopback.start()
        return made[-1]

    yield make
    for qf in made:
        await qf.loopback.stop()
        qf.cleanup()


@pytest.fixture
def openssh_queue_server(tmp_path: Path) -> Iterator[QueueSshServer]:
    """A real sshd (host ``real1``) whose sessions have HOME = the host's workdir; at
    teardown its queue's tmux session and leftover processes are gone too."""
    if not SSHD.exists():
        pytest.fail(f"{SSHD} is missing: {INSTALL_HINT}")
    server = QueueSshServer(tmp_path / "openssh")
    server.start()
    try:
        yield server
    finally:
        server.stop()
        server.cleanup()


@pytest.fixture
async def billed_queue_fleet(tmp_path: Path) -> AsyncIterator[QueueFleet]:
    """One loopback box billed like a vast.ai box, with a queue file and its own tmux."""
    base = tmp_path / "billed"
    loopback = LoopbackFleet(
        1,
        base,
        queue_dir=base / "queues",
        run=SCRIPT_RUN,
        tmux_tmpdir=Path(tempfile.mkdtemp(prefix="rgtq-")),
        costs=(("vastai", 1.89),),
    )
    qf = QueueFleet(loopback)
    await loopback.start()
    try:
        yield qf
    finally:
        await loopback.stop()
        qf.cleanup()
