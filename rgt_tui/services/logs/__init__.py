"""Following a log on a box by byte offset, across dropped connections and rotations.

The follower reads new bytes from the last offset over the Transport's file access (SFTP
on a box, plain files locally); nothing runs on the box. Guarantees:

- A line is delivered once it is complete (its newline arrived), exactly once. The
  position a caller may resume from (``LogChunk.position``) only ever moves past complete
  lines that were delivered, so a partial line is read again after a drop, never lost
  or shown twice.
- On a drop the follower waits in ``reconnect`` (or raises TransportError so its caller
  can start a new follower with ``resume=`` the last position) and continues where it
  left off.
- Rotation by rename: the old file is drained through the still-open handle, then the
  new file is read from offset 0. Copytruncate (the file shrank under us) restarts at 0
  of the same file.

The box's SFTP has no inode (v3), so identity is checked by content: the bytes just
before the offset must still be there (``ANCHOR_BYTES`` of them), backed by size/mtime
monotonicity. Where the transport reports inodes (local), those decide.

One module per job: ``paths`` (where the queue runner writes its logs), ``cursor`` (one
open file read forward by offset, anchored against rewrites), ``follow`` (the follower
above) and ``read`` (a one-shot read of a log as it is now, for ``rgt-tui logs``).
"""

from rgt_tui.services.logs.cursor import Tail
from rgt_tui.services.logs.follow import LogFollower, reconnect_with_backoff
from rgt_tui.services.logs.paths import cell_log_path, queue_log_path
from rgt_tui.services.logs.read import LogRead, iter_log, read_log

__all__ = [
    "LogFollower", "LogRead", "Tail", "cell_log_path", "iter_log", "queue_log_path", "read_log",
    "reconnect_with_backoff",
]  # fmt: skip
