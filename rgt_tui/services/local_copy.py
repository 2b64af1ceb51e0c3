"""Re-check the pulled copy on this machine against the manifest, at the gate.

The Iron Law is "the results are safely on the local disk", not "a record says they were
pulled": every file the manifest promises must be under ``<results_dir>/<host>/`` (the
layout ``Manifest.local_relpath`` gives, as the pull wrote it) and still hash to the
manifest's SHA-256.

Full re-hash, every time, no shortcut. A recorded size + mtime + inode check would be
cheaper, but mtime is whatever any process sets it to (``touch -r``, ``os.utime``), and an
in-place edit keeps the inode and may keep the size: that check would trust the very
metadata a damaged copy can still carry. The box is destroyed for good after this check,
so it reads every byte once; it costs one read of the copy (hashlib releases the GIL, and
callers run it through ``asyncio.to_thread``, so the event loop never waits on it).

Each file is checked by ``fsutil.differs`` (the check a resume move makes of the
checkpoint it pushes): reached from the host folder (which may itself be the user's link)
one component at a time, a link at any step is "changed", never followed. Blocking: call
it off the event loop.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from rgt_tui.domain.teardown_gate import FileFacts, LocalCopyChecked
from rgt_tui.domain.text import printable
from rgt_tui.fsutil import NotThere, differs  # a resume checks what it pushes so too


def check_local_copy(
    folder: Path, files: Iterable[tuple[str, FileFacts]], at: float
) -> LocalCopyChecked:
    """Re-hash every manifest file (local path, facts) under ``folder`` now (blocking)."""
    files = list(files)
    missing: list[str] = []
    changed: list[str] = []
    matched = 0
    try:
        root = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return LocalCopyChecked(str(folder), at, 0, tuple(p for p, _ in files))
    try:
        for rel, facts in files:
            try:
                why = differs(root, rel, facts.size, facts.sha256)
            except NotThere:
                missing.append(rel)
                continue
            if why is None:
                matched += 1
            else:
                changed.append(f"{rel}: {printable(why, 300)}")
    finally:
        os.close(root)
    return LocalCopyChecked(str(folder), at, matched, tuple(missing), tuple(changed))
