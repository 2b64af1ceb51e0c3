"""Trusting a refused host key, after the user compared it and said so (DESIGN, Trust).

The UI never writes known_hosts itself: the TUI's ``K`` prompt comes here, as the add
flow goes through ``services.fleet.add_host.trust_key``. Only an unknown key is ever trusted;
a changed or revoked one is refused with its fix (``transport.known_hosts``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from rgt_tui.domain.errors import HostKeyError
from rgt_tui.transport.known_hosts import trust_host_key


async def trust_refused_key(error: HostKeyError) -> Path:
    """Append the refused unknown key's line to its known_hosts file (off the event
    loop) and return that file. ValueError for a changed or revoked key; OSError when
    the file cannot be written."""
    return await asyncio.to_thread(trust_host_key, error)
