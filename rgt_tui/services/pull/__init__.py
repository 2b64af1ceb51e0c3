"""Pull a host's results: resumable, hash-checked copies that never trust the box.

Four stages, one module each, one run-state object (``state.PullRun``) passed along:

1. manifest — the box lists and hashes every file under the pull roots
   (``services.manifest``, the scan ``agent/manifest.py``);
2. ``plan`` — skip, pull (resume its part), replace or conflict, per file; free bytes and
   inodes checked before anything moves;
3. ``copy`` — large files by SFTP with many reads in flight, small ones many per round trip
   through one ``tar`` stream (``tar_stream``), all over the host's one connection;
4. finalise (``copy``) — SHA-256 equal to the manifest's, fsync, rename, record.

``run`` strings them together with reconnects and a stall watch; every local write goes
through ``local_tree`` (under ``<results_dir>/<host>/``, never following a link).
"""

from rgt_tui.services.pull.plan import PulledRecord
from rgt_tui.services.pull.progress import FileProgress, PullProgress
from rgt_tui.services.pull.run import pull_host
from rgt_tui.services.pull.types import (
    LocalDiskFull,
    NotEnoughInodes,
    NotEnoughSpace,
    PullBusy,
    PulledFile,
    PullError,
    PullOptions,
    PullResult,
)

__all__ = [
    "FileProgress", "LocalDiskFull", "NotEnoughInodes", "NotEnoughSpace", "PullBusy", "PullError",
    "PullOptions", "PullProgress", "PullResult", "PulledFile", "PulledRecord", "pull_host",
]  # fmt: skip
