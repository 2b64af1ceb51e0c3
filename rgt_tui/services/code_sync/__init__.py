"""Code sync, verified by hash (U42): push a host's ``code`` tree to its workdir and say
whether the box holds it.

``sync_code`` stages only the files that differ (rsync over the user's OpenSSH, or SFTP),
checks their hashes on the box, and switches them into place only while no queue runs;
``code_status`` compares without writing anything. The fleet file in use, the queue
files it names and the fleet's results_dir are never sent, even from inside the tree
(``fleet_files``). Modules: ``listing`` (the local
tree), ``box`` (the box's ``code-*`` verbs), ``rsync``, ``sync``, ``status``, ``rules``, ``types``.
"""

from rgt_tui.services.code_sync.rules import fleet_files
from rgt_tui.services.code_sync.status import code_status
from rgt_tui.services.code_sync.sync import METHODS, sync_code
from rgt_tui.services.code_sync.types import (
    CodeStatus,
    SyncError,
    SyncResult,
    secrets_note,
    skipped_note,
    withheld_note,
)

__all__ = [
    "METHODS",
    "CodeStatus",
    "SyncError",
    "SyncResult",
    "code_status",
    "fleet_files",
    "sync_code",
    "secrets_note",
    "skipped_note",
    "withheld_note",
]
