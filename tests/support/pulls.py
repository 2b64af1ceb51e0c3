"""Helpers for the pull and verify tests: hosts over loopback boxes, fast options, counters."""

from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path

from rgt_tui.demo.loopback import LoopbackFleet
from rgt_tui.domain.config import HostConfig
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.pull import PullOptions, pull_host
from rgt_tui.transport import transport_for
from rgt_tui.transport.backoff import Backoff
from rgt_tui.transport.base import Transport


def host_of(fleet: LoopbackFleet, name: str = "box1", **changes: object) -> HostConfig:
    """The fleet file's entry for ``name``, with fields replaced (pull roots, queue...)."""
    host = load_fleet(fleet.hosts_file).host(name)
    return dataclasses.replace(host, **changes) if changes else host


def box_results(fleet: LoopbackFleet, name: str = "box1") -> Path:
    """The box's durable folder (its default and only pull root)."""
    return fleet.box(name).root / "results"


def fast(**changes: object) -> PullOptions:
    """Options for tests: no 1 GiB free-space margin, quick retries."""
    base = PullOptions(
        margin_min_bytes=0,
        backoff=Backoff(base=0.02, cap=0.05),
        max_attempts=4,
        stall_timeout_s=20,  # a box's scan starts slowly on a loaded machine (5 s stalled one)
        block_size=256 << 10,  # with max_requests: at most 4 MiB in flight per file
        max_requests=16,
        # The full width (4 files × 2 sessions) whatever the link, so the copy's sessions
        # and workers are exercised on loopback too; test_pull_width checks the choice.
        adapt_width=False,
    )
    return dataclasses.replace(base, **changes)


def random_file(path: Path, size: int) -> str:
    """Write ``size`` random bytes; returns their SHA-256."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = os.urandom(size)
    path.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class Counted:
    """The transport a pull is handed, counting the file bytes the box sends it (SFTP
    pieces and tar streams); everything else goes to the real transport."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.total = 0

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self.inner, name)

    async def open_reader(self, path: str, **kw: object):  # type: ignore[no-untyped-def]
        return _CountedReader(await self.inner.open_reader(path, **kw), self)

    async def stream_bytes(self, command: str, **kw: object):  # type: ignore[no-untyped-def]
        async for chunk in self.inner.stream_bytes(command, **kw):
            self.total += len(chunk)
            yield chunk


class _CountedReader:
    def __init__(self, inner, counter: Counted) -> None:  # type: ignore[no-untyped-def]
        self.inner, self.counter = inner, counter

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self.inner, name)

    async def blocks(self, offset: int, length: int):  # type: ignore[no-untyped-def]
        async for at, data in self.inner.blocks(offset, length):
            self.counter.total += len(data)
            yield at, data


async def pull(host: HostConfig, results: Path, *, counted: bool = False, **kw: object):  # type: ignore[no-untyped-def]
    """pull_host over a transport of its own, closed afterwards. ``counted``: returns
    (result, bytes the box sent for files)."""
    transport = transport_for(host)
    counter = Counted(transport)
    try:
        result = await pull_host(host, results, counter, **kw)  # type: ignore[arg-type]
        return (result, counter.total) if counted else result
    finally:
        await transport.close()
