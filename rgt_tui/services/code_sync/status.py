"""``code_status``: does the box hold the code this machine has, and nothing more (U42)?"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path

from rgt_tui.domain.code_identity import CodeIdentity
from rgt_tui.domain.config import HostConfig
from rgt_tui.services.code_sync.box_tree import in_the_way_text, scan_box
from rgt_tui.services.code_sync.sync import local_tree, outputs_of
from rgt_tui.services.code_sync.types import MAX_DIFFERS, CodeStatus
from rgt_tui.transport import Transport


async def code_status(
    host: HostConfig, transport: Transport, *, withhold: Iterable[Path] = ()
) -> CodeStatus | None:
    """The local tree's identity against the box's whole copy (``box_tree``): the listed
    files, and every file under the workdir the same rules would send; None when the
    host names no ``code``. ``withhold``: the fleet file, its queue files and its
    results_dir (``fleet_files``), never code. Reads only: nothing on the box changes. SyncError when
    the local tree cannot be listed, TransportError when the box is unreachable."""
    if host.ready.code is None:
        return None
    tree = await local_tree(host, withhold)
    await transport.connect()
    box = await scan_box(transport, host.name, tree, host.workdir, outputs=outputs_of(host))
    differs = [f.path for f in tree.files if box.hashes.files.get(f.path) != f.file_hash()]
    box_id = CodeIdentity(box.tree) if box.dir_exists else None
    removable, _changed = box.stale()  # changed ones are named by sync as it leaves them
    excluded = await asyncio.to_thread(tree.not_sent, [f.path for f in removable], host.name)
    unsent = [f.path for f in removable if f.path not in box.box_only and f.path not in excluded]
    return CodeStatus(
        host=host.name,
        local=tree.identity,
        box=box_id,
        differs=tuple(differs[:MAX_DIFFERS]),
        record_stamp=box.record_stamp,
        code_dir=str(tree.root),
        differ_count=len(differs),
        files=len(tree.files),
        box_only=box.box_only[:MAX_DIFFERS],
        box_only_count=len(box.box_only),
        box_only_synced=sum(1 for p in box.box_only if box.removable(p)),
        box_unnamed=box.unnamed[:MAX_DIFFERS],
        uncommitted=tree.uncommitted,
        uncommitted_count=tree.uncommitted_count,
        box_edited=tuple(box.edited(differs)[:MAX_DIFFERS]),
        box_found=tuple(
            p for p in differs[:MAX_DIFFERS] if p in box.hashes.files and p not in box.record
        ),
        skipped=tree.skipped[:MAX_DIFFERS],
        unsent_left=tuple(unsent[:MAX_DIFFERS]),
        in_the_way=in_the_way_text(host.workdir, box.in_the_way()),
    )


async def stale_on_box(
    host: HostConfig, transport: Transport, paths: Iterable[str], *, withhold: Iterable[Path] = ()
) -> list[str]:
    """Of ``paths`` (from the code tree's top), those the box's workdir does not hold as
    this machine does: missing there, or another content. A path sync does not send is
    not ours to judge and is left out. Reads only; SyncError / TransportError as
    ``code_status``."""
    tree = await local_tree(host, withhold)
    await transport.connect()
    box = await scan_box(transport, host.name, tree, host.workdir, outputs=outputs_of(host))
    here = {f.path: f.file_hash() for f in tree.files}
    return [p for p in paths if p in here and box.hashes.files.get(p) != here[p]]
