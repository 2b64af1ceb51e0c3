"""Each rank of a group as a box-runner host, its connection, and its environment file.

Rank ``k`` runs on the group's ``k``-th box with the box runner's own machinery (tmux or
``setsid nohup``, records in that box's ``~/.rgt/queue/``): a HostConfig that is the box
(reached as the box is) carrying the group's name, queue, workdir and durable dir, and
the group's template made the rank's (``domain.group_run.rank_template``). The name is
the group's, so the queue check finds the group's queue file and every rank runs under
the one tmux session name ``rgt-<group>``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Protocol, TypeVar

from rgt_tui.domain.config import HostConfig, Readiness
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.group_run import ENV_FILE, env_file_text
from rgt_tui.domain.text import printable
from rgt_tui.services.box_ctl import CTL_TIMEOUT_S, QueueError
from rgt_tui.services.connections import FleetConnections
from rgt_tui.transport import Transport

T = TypeVar("T")


class MemberLinks(Protocol):
    """Where a group borrows its boxes' connections (the fleet's ``FleetConnections``)."""

    def transport(self, host: str) -> Transport: ...


def rank_hosts(group: HostConfig) -> tuple[HostConfig, ...]:
    """Every rank's host, rank 0 first."""
    from rgt_tui.domain.group_run import rank_template

    info = group.group
    assert info is not None, f"{group.name} is not a group"
    return tuple(
        replace(
            box,
            name=group.name,
            queue=group.queue,
            run=rank_template(group.run, info, rank) if group.run is not None else None,
            workdir=group.workdir,
            durable_dir=group.durable_dir,
            mounts=box.mounts,
            pull=group.pull,
            epochs=group.epochs,
            ready=rank_ready(group, box),
            teardown=None,
            group=None,
        )
        for rank, box in enumerate(info.members)
    )


def rank_ready(group: HostConfig, box: HostConfig) -> Readiness:
    """A rank's readiness keys (docs/groups.md): the group's stand for every rank when it
    gives any, else the box's own; ``python`` key by key (a group without one runs each
    box's own interpreter, which may live in another place on each box)."""
    info = group.group
    assert info is not None
    if not info.ready_keys:
        return box.ready
    if "python" in info.ready_keys:
        return group.ready
    return replace(group.ready, python=box.ready.python)


def who(group: HostConfig, rank: int) -> str:
    """``rank 1 (box2)``: how a rank is named in messages."""
    assert group.group is not None
    return f"rank {rank} ({group.group.hosts[rank]})"


@contextlib.asynccontextmanager
async def rank_transports(
    group: HostConfig, transport: Transport, links: MemberLinks | None
) -> AsyncIterator[tuple[Transport, ...]]:
    """Each rank's connection: rank 0's is the group's own; the others are borrowed from
    ``links`` (the fleet's shared connections), or opened here and closed on the way out."""
    assert group.group is not None
    members = group.group.members[1:]
    if links is not None:
        yield (transport, *(links.transport(m.name) for m in members))
        return
    own = FleetConnections(members)
    try:
        yield (transport, *(own.transport(m.name) for m in members))
    finally:
        await own.close_all()


async def each_rank(
    transports: Sequence[Transport], work: Callable[[int, Transport], Awaitable[T]]
) -> list[T | BaseException]:
    """``work(rank, transport)`` on every rank at once; an error is that rank's result."""
    return list(
        await asyncio.gather(
            *(work(rank, t) for rank, t in enumerate(transports)), return_exceptions=True
        )
    )


def reason(error: BaseException) -> str:
    """One line for a rank's error (its message, without the host it names)."""
    if isinstance(error, (TransportError, QueueError)):
        return printable(error.message)
    return printable(f"{type(error).__name__}: {error}")


async def write_env(group: str, transport: Transport, env: dict[str, str]) -> None:
    """Write the rank's environment file (0600, tmp then rename) over stdin."""
    await transport.connect()
    command = (
        f'umask 077 && mkdir -p "$HOME/.rgt" && cat > "$HOME/{ENV_FILE}.tmp" && '
        f'mv -f "$HOME/{ENV_FILE}.tmp" "$HOME/{ENV_FILE}"'
    )
    result = await transport.run(command, input=env_file_text(env), timeout=CTL_TIMEOUT_S)
    if result.exit_status != 0:
        raise QueueError(
            group, f"cannot write ~/{ENV_FILE}: {printable(result.stderr.strip())} (disk full?)"
        )
