"""The one run-state object a pull's stages share (passed explicitly; no stage calls
back), and the stall watch that drops its connection when no bytes come."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.egress import EgressPrice, plan_line
from rgt_tui.domain.manifest import Manifest
from rgt_tui.services.pull.local_tree import HostTree, current_umask
from rgt_tui.services.pull.plan import FilePlan, PulledRecord
from rgt_tui.services.pull.progress import ProgressTracker
from rgt_tui.services.pull.tar_squeeze import StreamStats
from rgt_tui.services.pull.types import (
    BULK_SSH,
    PulledFile,
    PullOptions,
    PullResult,
    TarStream,
)
from rgt_tui.transport.base import Transport
from rgt_tui.transport.openssh import OpenSsh


@dataclass
class PullRun:
    """Everything one pull knows: where it writes, what it did, and when bytes last came."""

    host: HostConfig
    dest: Path
    transport: Transport
    options: PullOptions
    tree: HostTree
    record: PulledRecord
    tracker: ProgressTracker
    manifest: Manifest | None = None
    pulled: list[PulledFile] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # local path -> why
    conflicts: list[tuple[str, str]] = field(default_factory=list)
    finished: set[str] = field(default_factory=set)  # pulled, failed or in conflict
    mismatched: set[str] = field(default_factory=set)  # one hash mismatch already
    # Files pulled again from zero after that mismatch: local path -> (bytes, why). Their
    # bytes crossed the link twice: the plan's to_move counted them once (h521 #2).
    again: dict[str, tuple[int, str]] = field(default_factory=dict)
    # Copies started on the walk's listing, before the box's hashes (early.py): the
    # listing, the complete manifest's entries by local path once whole (the install
    # gate waits for it), and the early files it lists at another size or not at all.
    listing: Manifest | None = None
    checked: asyncio.Future | None = None
    leftover: set[str] = field(default_factory=set)
    last_byte: float = field(default_factory=time.monotonic)  # for the stall watch
    stalled: str | None = None  # why the stall watch dropped the connection
    reached: bool = False  # the box answered once in this run (else nothing can be resumed)
    started: float = field(default_factory=time.monotonic)
    copy_s: float = 0.0  # seconds the copy stage took, for its rate (the CLI shows it)
    # monotonic times of the stage boundaries (issue 44: "connected", "copying",
    # "manifest", "copied"), the first of each in this run; ``stages()`` reads them.
    marks: dict[str, float] = field(default_factory=dict)
    umask: int = field(default_factory=current_umask)  # pulled files are never wider
    # Sleeps between reconnect attempts (the host's FleetConnections.wait in the TUI).
    wait: Callable[[float], Awaitable[object]] = asyncio.sleep
    retry: bool = True  # reconnect after a drop (False: a side task that the pull re-runs)
    watching: int = 0  # copies under the stall watch (one watch for them all)
    watch: asyncio.Future | None = None
    closing: set[asyncio.Future] = field(default_factory=set)  # SFTP handles being closed
    # U14 / U15: the bytes the plan moves and their price; the round trip measured for
    # the tar stream's compression, once; each tar stream's figures and why its codec.
    to_move: int = 0
    egress: EgressPrice | None = None
    # Pull roots whose files now land in another local folder (``moved_roots``).
    moved: tuple[tuple[str, str, str], ...] = ()
    rtt_s: float | None = None
    # (large files at once, SFTP sessions per file): chosen once, by ``width.copy_width``
    # from the round trip it was given (``width_rtt_s``; None: not known).
    width: tuple[int, int] | None = None
    width_rtt_s: float | None = None
    tar_streams: list[tuple[StreamStats, str]] = field(default_factory=list)
    # Large files through OpenSSH's ``ssh`` (``bulk``): its command, or why not (then
    # SFTP); None until the first large file decides it.
    bulk: OpenSsh | str | None = None
    streamed: set[str] = field(default_factory=set)  # files whose bytes came through ssh
    bulk_skipped: list[tuple[str, str]] = field(default_factory=list)  # one file by SFTP: why
    bulk_rtt_s: float | None = None  # the round trip that decided it (``bulk.round_trip``)

    def touch(self) -> None:
        """Bytes are flowing (or waiting for the bandwidth budget): not a stall."""
        self.last_byte = time.monotonic()

    def announce_move(self, nbytes: int) -> None:
        """The plan's bytes to move and their egress cost, shown before they move (U14)."""
        self.to_move = self.tracker.to_move = nbytes
        if self.egress is not None:
            self.tracker.plan_line = plan_line(nbytes, self.egress)
            self.tracker.emit(force=True)

    def remote_path(self, plan: FilePlan) -> str:
        manifest = self.manifest or self.listing
        assert manifest is not None
        return manifest.display(plan.entry.root, plan.entry.path)

    def done(self, plan: FilePlan, pulled: PulledFile) -> None:
        self.pulled.append(pulled)
        self.finished.add(plan.local)

    def fail(self, plan: FilePlan, why: str) -> None:
        if plan.early:
            # Started on the walk's listing: the complete manifest decides (the file may
            # be gone or another version by then); the pull plans it again from that.
            self.leftover.add(plan.local)
            self.tracker.drop_file(plan.local)
            return
        self.failed[plan.local] = why
        self.finished.add(plan.local)
        self.tracker.finish_file(plan.local, False)

    def conflict(self, plan: FilePlan, why: str) -> None:
        self.conflicts.append((plan.local, why))
        self.finished.add(plan.local)
        self.tracker.finish_file(plan.local, False)

    def result(self) -> PullResult:
        # The listing, when the pull stopped while the box still hashed (early copies).
        manifest = self.manifest or self.listing
        assert manifest is not None
        now = time.monotonic()  # the one end of the pull's time and of its last stage
        return PullResult(
            host=self.host.name,
            dest=self.dest,
            manifest=manifest,
            pulled=tuple(self.pulled),
            skipped=tuple(self.skipped),
            failed=tuple(self.failed.items()),
            conflicts=tuple(self.conflicts),
            bytes_received=self.tracker.bytes_received,
            elapsed_s=now - self.started,
            copy_s=self.copy_s,
            to_move=self.to_move,
            again=tuple((path, n, why) for path, (n, why) in self.again.items()),
            egress=self.egress,
            moved_roots=self.moved,
            tar_streams=tuple(
                TarStream(s.codec, s.wire, s.tar, why) for s, why in self.tar_streams
            ),
            stages=self.stages(now),
            width=self.width,
            width_rtt_s=self.width_rtt_s,
            bulk=self.bulk_text(),
            bulk_rtt_s=self.bulk_rtt_s,
        )

    def bulk_off(self, local: str, why: str) -> None:
        """ssh failed at ``local`` (``why``): the rest of the pull goes by SFTP; the first
        failure is the one the summary gives."""
        if isinstance(self.bulk, OpenSsh):
            self.bulk = f"{BULK_SSH} until {local} ({why}), then SFTP"

    def bulk_text(self) -> str | None:
        """How the large files came, for the summary (None: no large file of the size)."""
        if self.bulk is None:
            return None
        if not isinstance(self.bulk, OpenSsh):
            return self.bulk
        if not self.bulk_skipped:
            return BULK_SSH
        (local, why), more = self.bulk_skipped[0], len(self.bulk_skipped) - 1
        also = f" and {more} more" if more else ""
        return f"{BULK_SSH}, but {local}{also} by SFTP ({why})"

    def mark(self, name: str, when: float | None = None) -> None:
        """A stage boundary, once: the first time it is reached in this run counts."""
        self.marks.setdefault(name, time.monotonic() if when is None else when)

    def stages(self, now: float) -> tuple[tuple[str, float], ...]:
        """Seconds per stage (handshake, listing, copy, tail) and when the manifest was
        whole, up to ``now``; only the stages that began (a failed pull stops where it
        stopped)."""
        marks = self.marks
        bounds = [self.started, marks.get("connected"), marks.get("copying")]
        bounds += [marks.get("copied"), now]
        stages: list[tuple[str, float]] = []
        for name, start, end in zip(
            ("handshake", "listing", "copy", "tail"), bounds, bounds[1:], strict=False
        ):
            if start is None or end is None:
                break
            stages.append((name, max(end - start, 0.0)))
        if "manifest" in marks:
            stages.append(("manifest", marks["manifest"] - self.started))
        return tuple(stages)


@contextlib.asynccontextmanager
async def stall_watch(run: PullRun) -> AsyncIterator[None]:
    """No bytes for ``stall_timeout_s`` while copies run: drop the connection, so every
    read fails and the retry loop resumes each file from its part. Copies that overlap
    (early ones and the rest) share one watch: two would each drop the connection."""
    if run.watch is None:
        run.watch = asyncio.ensure_future(_watch(run))
    run.watching += 1
    try:
        yield
    finally:
        run.watching -= 1
        if not run.watching and run.watch is not None:
            run.watch.cancel()
            run.watch = None


async def _watch(run: PullRun) -> None:
    limit = run.options.stall_timeout_s
    run.last_byte = time.monotonic()
    while True:
        await asyncio.sleep(min(1.0, limit / 4))
        if time.monotonic() - run.last_byte > limit:
            run.stalled = f"stalled: no bytes for {limit:g} s"
            run.last_byte = time.monotonic()
            await run.transport.close()
