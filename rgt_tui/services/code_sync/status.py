"""``code_status``: does the box hold the code this machine has (U42)?"""

from __future__ import annotations

from rgt_tui.domain.code_identity import CodeIdentity, tree_hash
from rgt_tui.domain.config import HostConfig
from rgt_tui.services.code_sync.box import hash_on_box
from rgt_tui.services.code_sync.sync import local_tree
from rgt_tui.services.code_sync.types import MAX_DIFFERS, CodeStatus
from rgt_tui.transport import Transport


async def code_status(host: HostConfig, transport: Transport) -> CodeStatus | None:
    """The local tree's identity against the box's copy of the same paths; None when
    the host names no ``code``. Reads only: nothing on the box changes. SyncError when
    the local tree cannot be listed, TransportError when the box is unreachable."""
    if host.ready.code is None:
        return None
    tree = await local_tree(host)
    await transport.connect()
    box = await hash_on_box(transport, host.name, host.workdir, [f.path for f in tree.files])
    differs = [f.path for f in tree.files if box.files.get(f.path) != f.file_hash()]
    box_id = CodeIdentity(tree_hash(box.files.values())) if box.dir_exists else None
    return CodeStatus(
        host=host.name,
        local=tree.identity,
        box=box_id,
        differs=tuple(differs[:MAX_DIFFERS]),
        code_dir=str(tree.root),
        differ_count=len(differs),
        files=len(tree.files),
    )
