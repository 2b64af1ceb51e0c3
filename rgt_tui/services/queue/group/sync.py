"""A group's code on every box (docs/groups.md): ``rgt-tui sync GROUP`` and the TUI's
``y`` push the group's tree to every rank's workdir, and ``sync GROUP --check`` compares
each, so every rank of one torchrun job runs the same code (U42; what ``same-code``
checks).

The boxes are synced one after another (a code tree is small; one progress line at a
time), each with code sync's own ``sync_code`` on that rank's host. One box failing
does not stop the others: each rank's outcome is reported on its own, naming the box.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.services.code_sync import CodeStatus, SyncError, SyncResult, code_status, sync_code
from rgt_tui.services.queue.group.ranks import MemberLinks, rank_hosts, rank_transports, who
from rgt_tui.transport import Transport

# on_progress(rank, done_bytes, total_bytes, path)
RankProgress = Callable[[int, int, int, str], None]


@dataclass(frozen=True)
class RankSync:
    """One rank's outcome: what its sync did (``result``) or its comparison
    (``status``, None with ``--check`` when no code is set), else why it failed."""

    rank: int
    who: str  # "rank 1 (box2)"
    result: SyncResult | None = None
    status: CodeStatus | None = None
    error: str = ""
    fix: str = ""

    @property
    def ok(self) -> bool:
        """The box was synced (or compared) without an error."""
        return not self.error


async def sync_group(
    group: HostConfig,
    transport: Transport,
    *,
    links: MemberLinks | None = None,
    on_progress: RankProgress | None = None,
    method: str = "auto",
    withhold: Iterable[Path] = (),
) -> tuple[RankSync, ...]:
    """Push the group's code to every rank's box in turn, rank 0 first; one RankSync per
    rank. ``transport`` is rank 0's; the others' are borrowed from ``links`` or opened
    here. ``withhold``: the fleet file and its queue files, never sent (``sync_code``)."""
    held = tuple(withhold)
    ranks = rank_hosts(group)
    out: list[RankSync] = []
    async with rank_transports(group, transport, links) as transports:
        for rank, (host, t) in enumerate(zip(ranks, transports, strict=True)):

            def progress(done: int, total: int, path: str, rank: int = rank) -> None:
                if on_progress is not None:
                    on_progress(rank, done, total, path)

            try:
                result = await sync_code(
                    host, t, on_progress=progress, method=method, withhold=held
                )
            except (SyncError, TransportError, OSError) as exc:
                out.append(_failed(group, rank, exc))
                continue
            out.append(RankSync(rank, who(group, rank), result=result))
    return tuple(out)


async def group_code_status(
    group: HostConfig,
    transport: Transport,
    *,
    links: MemberLinks | None = None,
    withhold: Iterable[Path] = (),
) -> tuple[RankSync, ...]:
    """Compare every rank's workdir with the group's tree (nothing is written)."""
    held = tuple(withhold)
    ranks = rank_hosts(group)
    out: list[RankSync] = []
    async with rank_transports(group, transport, links) as transports:
        for rank, (host, t) in enumerate(zip(ranks, transports, strict=True)):
            try:
                status = await code_status(host, t, withhold=held)
            except (SyncError, TransportError, OSError) as exc:
                out.append(_failed(group, rank, exc))
                continue
            out.append(RankSync(rank, who(group, rank), status=status))
    return tuple(out)


def _failed(group: HostConfig, rank: int, exc: BaseException) -> RankSync:
    """A rank's error as its outcome (its text as raised: the edges escape it)."""
    if isinstance(exc, (SyncError, TransportError)):
        message, fix = exc.message, exc.fix or ""
    else:
        message, fix = f"{type(exc).__name__}: {exc}", ""
    return RankSync(
        rank, who(group, rank), error=message, fix=fix or "check that box, then sync again"
    )
