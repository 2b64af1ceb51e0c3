"""Helpers for the pull and verify tests: hosts over loopback boxes, fast options, counters."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import asyncssh
import pytest

from rgt_tui.demo.loopback import LoopbackFleet
from rgt_tui.domain.config import HostConfig, load_fleet
from rgt_tui.services import remote_file
from rgt_tui.services.pull import PullOptions, pull_host
from rgt_tui.transport import transport_for
from rgt_tui.transport.backoff import Backoff
from rgt_tui.transport.base import SocketRefused

MIB = 1 << 20


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
        margin_min_bytes=0, backoff=Backoff(base=0.02, cap=0.05), max_attempts=4, stall_timeout_s=5
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


class BoxBytes:
    """Counts the file bytes that reach this process from the box for large files, over
    SFTP reads or the box's sender stream (independent of the pull's own counts)."""

    def __init__(self) -> None:
        self.total = 0

    @contextlib.contextmanager
    def counting(self) -> Iterator[BoxBytes]:
        original = asyncssh.SFTPClientFile.read_parallel
        original_feed = remote_file._OneFile.feed
        counter = self

        async def read_parallel(self, size=-1, offset=None):  # type: ignore[no-untyped-def]
            inner = await original(self, size, offset)

            async def counted():  # type: ignore[no-untyped-def]
                async for at, data in inner:
                    counter.total += len(data)
                    yield at, data

            return counted()

        def feed(self, chunk):  # type: ignore[no-untyped-def]
            data = original_feed(self, chunk)
            counter.total += len(data)
            return data

        asyncssh.SFTPClientFile.read_parallel = read_parallel  # type: ignore[method-assign]
        remote_file._OneFile.feed = feed  # type: ignore[method-assign]
        try:
            yield self
        finally:
            asyncssh.SFTPClientFile.read_parallel = original  # type: ignore[method-assign]
            remote_file._OneFile.feed = original_feed  # type: ignore[method-assign]


@contextlib.contextmanager
def tmpfs(path: Path, size: str = "8m") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``path`` for the duration of the block."""
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.fail(f"cannot mount a tmpfs (these tests need root): {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


async def pull(host: HostConfig, results: Path, **kw: object):  # type: ignore[no-untyped-def]
    """pull_host over a transport of its own, closed afterwards."""
    transport = transport_for(host)
    try:
        return await pull_host(host, results, transport, **kw)  # type: ignore[arg-type]
    finally:
        await transport.close()


class CountedSenders:
    """Counts the senders a pull starts as commands and as socket connections."""

    def __init__(self, transport) -> None:
        self.commands: list[str] = []
        self.sockets = 0  # sender connections (not the control one)
        self.controls = 0
        self.refused = 0
        self.paths: set[str] = set()
        stream_bytes, stream_socket = transport.stream_bytes, transport.stream_socket

        def counting_command(command, **kw):
            self.commands.append(command)
            return stream_bytes(command, **kw)

        async def counting_socket(path, **kw):
            self.paths.add(path)
            if kw.get("input", "").startswith("C"):
                self.controls += 1
            else:
                self.sockets += 1
            try:
                async for chunk in stream_socket(path, **kw):
                    yield chunk
            except SocketRefused:
                self.refused += 1
                raise

        transport.stream_bytes = counting_command
        transport.stream_socket = counting_socket
