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
from rgt_tui.domain.errors import NoAnswer, TransportError
from rgt_tui.domain.manifest import ManifestError
from rgt_tui.domain.text import printable
from rgt_tui.services.connect import host_connection
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


async def box_still_answers(host: HostConfig, box: BoxIdentity) -> str | None:
    """Why ``box`` cannot be recorded destroyed: it answers under ``host``'s name now (one
    connection, its id read, as ``identify_box``), or whether it does cannot be told.
    None when nothing answers at its address (``NoAnswer``: refused, timed out, no route,
    the name gone — what a destroyed box does), or another box does (its id new: the
    confirmed one is gone). A missing key file, a refused login or host key, a jump host
    down: something of this side or between, not the box's absence (h462 #1: a missing
    identity_file recorded a box that still answered)."""
    try:
        async with host_connection(host) as transport:
            now = await identify_box(host, transport)
    except NoAnswer:
        return None
    except TransportError as exc:
        return (
            f"cannot tell whether {host.name} is destroyed: {printable(str(exc), 300)}. A "
            "destroyed box does not answer at all (its connection refused, timed out or "
            "without a route); nothing was recorded — fix what this names, then record it "
            "again"
        )
    except ManifestError as exc:
        # Its host key passed the check: most likely the same box, whose python3 or home
        # cannot say its id. A destroyed box answers nothing at all.
        return (
            f"{host.name} still answers over SSH with its host key, though it cannot say "
            f"which box it is ({printable(str(exc), 200)}): it is not destroyed; nothing was "
            "recorded — destroy it, then record it again"
        )
    if now.box_id != box.box_id:
        return None
    return (
        f"{host.name} still answers: box {box.short()} took a connection just now, so it "
        "is not destroyed (it may still bill); nothing was recorded — destroy it in the "
        "provider's console, and once it no longer answers (a provider may take a minute), "
        "record it again"
    )
