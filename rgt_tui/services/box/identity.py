"""Which box answers under a host's name right now (``rgt_tui.domain.box_identity``).

The telemetry samples and every manifest scan already report the box's id; this is for
when neither runs: a host recorded as torn down, whose telemetry is stopped, must still
be looked at once in a while, since a box re-created under its name is a new box with a
closed gate, not a torn-down one. It runs the manifest scan over no pull roots (one
python3 start, nothing listed) and pairs the id with the connection's host key.
"""

from __future__ import annotations

from dataclasses import replace

from rgt_tui.domain.box_identity import BoxIdentity
from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.manifest import ManifestError
from rgt_tui.services.manifest import take_manifest
from rgt_tui.transport.base import Transport


async def identify_box(host: HostConfig, transport: Transport) -> BoxIdentity:
    """The box answering as ``host`` now (its ``~/.rgt/box-id``, written if missing, and
    the host key). Raises TransportError when it cannot be reached and ManifestError
    when it cannot say which box it is (the message says why)."""
    await transport.connect()
    scan = await take_manifest(replace(host, pull=()), transport, hash_files=False)
    if scan.identity is None:
        why = scan.box_id_error or "no id reported"
        raise ManifestError(f"{host.name}: the box did not say which box it is: {why}")
    return scan.identity
