"""Shared fixtures: loopback SSH fleets and a real OpenSSH server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from sshd_server import INSTALL_HINT, SSHD, OpenSshServer

from rgt_tui.demo.loopback import LoopbackFleet


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
