"""The values a pull takes and returns (kept apart so the pull's modules can share them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rgt_tui.domain.manifest import Manifest
from rgt_tui.transport.backoff import Backoff


@dataclass(frozen=True)
class PullOptions:
    """Tuning of a pull; the defaults suit a rented box over the internet."""

    concurrency: int = 4  # files >= 1 MiB in flight
    batch_streams: int = 2  # senders carrying batches of files < 1 MiB
    stall_timeout_s: float = 30.0  # no bytes for this long: reconnect and resume
    max_attempts: int = 8  # consecutive connection failures without progress
    backoff: Backoff = Backoff(base=0.5, cap=20.0)
    margin_fraction: float = 0.05  # free space must cover remaining + max(5 %, 1 GiB)
    margin_min_bytes: int = 1 << 30
    progress_interval_s: float = 0.2
    fsync: bool = True  # flush each file to disk before it counts as pulled
    # SFTP reads: block_size bytes per request, max_requests in flight per file. Their
    # product is also the most a dropped connection can make a resume fetch twice.
    block_size: int = 256 << 10
    max_requests: int = 16
    # Files >= 1 MiB streamed by one of the box's senders (SFTP only where it
    # fails); False reads them over SFTP.
    stream_large: bool = True


@dataclass(frozen=True)
class PulledFile:
    """One file this run brought in."""

    path: str  # relative to the host's results folder
    size: int
    sha256: str
    resumed_from: int  # bytes that were already in its .part
    received: int  # bytes read from the box for it in this run (restarts included)


@dataclass(frozen=True)
class PullResult:
    """What a pull did; ``ok`` only when every manifest file is here with its hash."""

    host: str
    dest: Path
    manifest: Manifest
    pulled: tuple[PulledFile, ...]
    skipped: tuple[str, ...]  # already here with a matching hash
    failed: tuple[tuple[str, str], ...]  # (path, why)
    conflicts: tuple[tuple[str, str], ...]  # local things in the way, left alone
    bytes_received: int
    elapsed_s: float

    @property
    def ok(self) -> bool:
        return not self.failed and not self.conflicts


class Abort(Exception):
    """A worker hit something that stops the whole pull (wraps a PullError)."""
