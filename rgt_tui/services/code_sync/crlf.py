"""The ``crlf`` preflight check (U26, GEN4), made here from the files that come from this
machine: the synced code tree (the listing marks CRLF files as it hashes them) and the
host's local queue file. No box round trip: a CRLF file is caught before it is sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.crlf import crlf_check
from rgt_tui.domain.preflight import Check
from rgt_tui.services.code_sync.sync import local_tree
from rgt_tui.services.code_sync.types import SyncError

_QUEUE_READ = 4 << 20  # a queue file is a few KB; read no more than this of it


def queue_has_crlf(path: Path) -> bool:
    """Whether the local queue file has CRLF line endings (unreadable: no; the queue's
    own check says why). Blocking."""
    try:
        with path.expanduser().open("rb") as f:
            return b"\r\n" in f.read(_QUEUE_READ)
    except OSError:
        return False


async def crlf_preflight(host: HostConfig, withhold: Iterable[Path] = ()) -> Check:
    """The ``crlf`` check of ``host``: its code tree's scripts and configs (less
    ``withhold``: the fleet file and its queue files, which sync never sends), and its
    queue file. SyncError's text is the check's when the tree cannot be listed."""
    found: list[tuple[str, str]] = []
    looked: list[str] = []
    if host.ready.code is not None:
        try:
            tree = await local_tree(host, withhold)
        except SyncError as exc:
            return Check("crlf", False, exc.message, exc.fix)
        found += list(tree.crlf)
        looked.append(f"the code tree {tree.root} ({len(tree.files)} files)")
    if host.queue is not None:
        if await asyncio.to_thread(queue_has_crlf, host.queue):
            found.append((str(host.queue), "queue file"))
        looked.append(f"the queue file {host.queue}")
    if not looked:
        return Check("crlf", True, "no code key and no queue file: nothing sent to check")
    return crlf_check(host.name, found, " and ".join(looked))
