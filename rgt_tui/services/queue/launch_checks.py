"""What a launch plan checks on this machine before anything reaches the box.

Credentials: the launch reads each one here and sends it (``services.credentials``,
U34); the plan reads them all first, so one refusal names every credential that cannot
be read, each with its fix, instead of Launch finding them out one at a time. A value is
read and dropped at once: it never reaches a plan, a message or a log.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from rgt_tui.domain.config import Credential, HostConfig
from rgt_tui.services.credentials import CredentialError, resolve


async def unreadable_credentials(host: HostConfig) -> list[str]:
    """One refusal per credential of ``host`` that cannot be read on this machine now
    (the credential, its source, why and the fix; never a value), read off the event
    loop."""
    creds = host.ready.credentials
    if not creds:
        return []
    return await asyncio.to_thread(_unreadable, host.name, creds)


def _unreadable(host: str, credentials: Iterable[Credential]) -> list[str]:
    found = []
    for cred in credentials:
        try:
            resolve(host, cred)  # the value is dropped here: only whether it can be read
        except CredentialError as exc:
            found.append(f"cannot read {exc.message}")
    return found
