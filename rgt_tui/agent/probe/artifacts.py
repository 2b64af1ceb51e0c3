"""Queue liveness (U43): the newest file mtime under a cell's output directory; the same
walk hands each file to ``CheckpointWatch`` (issue 40: the checkpoints it writes)."""

import os
import time

from .checkpoints import CheckpointWatch

ARTIFACT_SCAN_EVERY_S = 30.0
ARTIFACT_SCAN_LIMIT = 20000


class ArtifactScanner:
    """Newest file mtime under a directory, rescanned at most every ``every`` seconds
    (30 by default), bounded in size."""

    def __init__(self, root, every=ARTIFACT_SCAN_EVERY_S):
        self.root = root
        self.every = every
        self.last_scan = None
        self.value = None
        self.checkpoints = CheckpointWatch(root)  # fed by each walk, no walk of its own

    def newest_mtime(self):
        """Return the cached newest mtime, rescanning when the cache is old."""
        now = time.monotonic()
        if self.last_scan is not None and now - self.last_scan < self.every:
            return self.value
        self.last_scan = now
        self.value = self._scan()
        return self.value

    def _scan(self):
        if not os.path.isdir(self.root):
            return None
        newest = None
        seen = 0
        stack = [self.root]
        self.checkpoints.begin_scan()
        while stack and seen < ARTIFACT_SCAN_LIMIT:
            top = stack.pop()
            try:
                entries = os.scandir(top)
            except OSError:
                continue
            with entries:
                for entry in entries:
                    seen += 1
                    if seen > ARTIFACT_SCAN_LIMIT:
                        break  # a per-sample-file eval dump (U7) must not stall the agent
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                        elif entry.is_file(follow_symlinks=False):
                            st = entry.stat(follow_symlinks=False)
                            mtime = st.st_mtime
                            if newest is None or mtime > newest:
                                newest = mtime
                            self.checkpoints.saw(entry.path, mtime, st.st_size)
                    except OSError:
                        continue  # deleted while scanning
        self.checkpoints.end_scan()
        return newest
