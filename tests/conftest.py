"""Shared fixtures: loopback SSH fleets and a real OpenSSH server."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from queue_support import QueueFleet, QueueSshServer
from sshd_server import INSTALL_HINT, SSHD, OpenSshServer

from rgt_tui.demo.loopback import LoopbackFleet


@pytest.fixture(autouse=True)
def _own_state_dir(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No test writes the user's journal or settings: state goes to a folder of its own
    (a test that needs to read it back sets XDG_STATE_HOME itself)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))


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
