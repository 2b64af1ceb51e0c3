"""What a launch plan checks on this machine before anything reaches the box.

Credentials: the launch reads each one here and sends it (``services.credentials``,
U34); the plan reads them all first, so one refusal names every credential that cannot
be read, each with its fix, instead of Launch finding them out one at a time. A value is
read and dropped at once: it never reaches a plan, a message or a log.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from rgt_tui.domain.config import Credential, Fleet, HostConfig
from rgt_tui.services.credentials import CredentialError, resolve


async def unreadable_credentials(host: HostConfig) -> list[str]:
    """One refusal per credential of ``host`` that cannot be read on this machine now
    (the credential, its source, why and the fix; never a value), read off the event
    loop."""
    creds = host.ready.credentials
    if not creds:
        return []
    return await asyncio.to_thread(_unreadable, host.name, creds)


async def refused_here(fleet: Fleet, host: HostConfig) -> list[str]:
    """What a launch refuses before it asks the box, for preflight to name rather than
    say "ready" (the CLI's and the TUI's P): the queue file's problems (``queue check``'s
    for the host) and every credential this machine cannot read (hour s18b #5)."""
    from rgt_tui.services.queue.check import launch_refusals

    queue = await asyncio.to_thread(launch_refusals, fleet, host)
    return queue + await unreadable_credentials(host)


def _unreadable(host: str, credentials: Iterable[Credential]) -> list[str]:
    found = []
    for cred in credentials:
        try:
            resolve(host, cred)  # the value is dropped here: only whether it can be read
        except CredentialError as exc:
            found.append(f"cannot read {exc.message}")
    return found
