"""Checkpoint writes in the running cell's output folder (issue 40: work at risk).

What a preemption would cost right now is the age of the newest checkpoint on the box;
how often the run checkpoints and how long one write takes give the Young/Daly interval
(``domain.young_daly``). ``CheckpointWatch`` learns them without walking the folder more
often than ``ArtifactScanner`` already does (every ``--scan-every`` seconds): the walk
hands it each file (``saw``); between walks it only stats a few known paths each sample —
the newest checkpoint (an overwrite of ``latest.pt`` is a new write) and the unfinished
writes (``checkpoint.pt.tmp``) the walks found, so a ``.tmp`` appearing and its rename
time a write at the sample cadence.

A write's time: from when its ``.tmp`` was first seen to the checkpoint's mtime after
the rename; when the ``.tmp`` already held bytes then, its growth between looks gives the
rate, and the start is extrapolated back. A write whose ``.tmp`` was never seen growing
is not timed (None), never guessed.
"""

import os
import time

# The rule of rgt_tui/domain/checkpoints.py (is_checkpoint), duplicated on purpose: the
# agent is stdlib-only and sent to the box alone, it cannot import rgt_tui.domain. Keep
# the two in step (tests/agent/test_checkpoint_watch.py checks them against each other).
CKPT_SUFFIXES = (".pt", ".pth", ".ckpt", ".safetensors")
NOT_CKPT_SUFFIXES = (".json", ".jsonl", ".ndjson", ".txt", ".log", ".csv", ".md", ".yaml")
LEFTOVER_SUFFIXES = (".tmp", ".part")
NAMED = ("ckpt", "checkpoint")
MAX_WRITES = 8  # the writes a sample carries: enough for a median interval
MAX_FOLLOWED = 4  # unfinished-write paths stat'ed each sample
MAX_NAME = 200  # characters of a checkpoint's name in a sample


def is_checkpoint(name):
    """Whether a file name is a checkpoint (domain.checkpoints.is_checkpoint's rule)."""
    lower = os.path.basename(name).lower()
    if lower.endswith(LEFTOVER_SUFFIXES) or lower.endswith(NOT_CKPT_SUFFIXES):
        return False
    return lower.endswith(CKPT_SUFFIXES) or any(w in lower for w in NAMED)


def finished_name(name):
    """The checkpoint an unfinished write becomes (``x.pt.tmp`` -> ``x.pt``); None when
    ``name`` is no unfinished write of a checkpoint."""
    lower = name.lower()
    for suffix in LEFTOVER_SUFFIXES:
        if lower.endswith(suffix) and is_checkpoint(name[: -len(suffix)]):
            return name[: -len(suffix)]
    return None


def _stat(path):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime, st.st_size


class CheckpointWatch:
    """The checkpoints of one output folder (see the module docstring)."""

    def __init__(self, root, clock=time.time):
        self.root = root
        self.clock = clock
        self.newest = None  # (rel, mtime, size)
        self.writes = []  # [at, write_s or None, size], oldest first, at most MAX_WRITES
        self._recorded = set()  # (rel, mtime) of each write recorded
        self._scanned = False
        self._this_scan = []
        self._unfinished = []  # rel of each unfinished write seen (newest last)
        self._following = {}  # rel of a .tmp -> [(t, size), ...] looks while it exists

    # -- fed by the walk (ArtifactScanner._scan) -----------------------------------------

    def begin_scan(self):
        self._this_scan = []

    def saw(self, path, mtime, size):
        """One file the walk found (its full path, mtime, size)."""
        rel = os.path.relpath(path, self.root)
        if finished_name(rel) is not None:
            if rel in self._unfinished:
                self._unfinished.remove(rel)
            self._unfinished.append(rel)
            del self._unfinished[:-MAX_FOLLOWED]
            self._look_at_unfinished(rel, (mtime, size))
        elif is_checkpoint(rel):
            self._this_scan.append((mtime, rel, size))

    def end_scan(self):
        found = sorted(self._this_scan)
        if not self._scanned:
            # The first walk: the checkpoints kept so far are the writes up to now (their
            # mtimes are when each was written; how long each took is not known).
            for mtime, rel, size in found[-MAX_WRITES:]:
                self._record(rel, mtime, size, None)
            self._scanned = True
        else:
            last = self.writes[-1][0] if self.writes else None
            for mtime, rel, size in found:
                if last is None or mtime > last:
                    self._record(rel, mtime, size, None)
        if found:
            mtime, rel, size = found[-1]
            if self.newest is None or mtime >= self.newest[1]:
                self.newest = (rel, mtime, size)
        self._this_scan = []

    # -- every sample --------------------------------------------------------------------

    def sample(self):
        """The sample's ``ckpt`` dict (None before any checkpoint or unfinished write)."""
        for rel in list(self._unfinished):
            self._look_at_unfinished(rel, _stat(os.path.join(self.root, rel)))
        if self.newest is not None:
            rel = self.newest[0]
            now = _stat(os.path.join(self.root, rel))
            if now is not None and now[0] > self.newest[1]:  # overwritten: a new write
                self._record(rel, now[0], now[1], None)
        if self.newest is None and not self._following:
            return None
        name, mtime, size = self.newest if self.newest is not None else (None, None, None)
        return {
            "name": name[:MAX_NAME] if name is not None else None,
            "mtime": mtime,
            "size": size,
            "writes": [list(w) for w in self.writes],
            "writing": bool(self._following),
        }

    def _look_at_unfinished(self, rel, stat):
        looks = self._following.get(rel)
        if stat is not None:
            if looks is None:
                self._following[rel] = [(self.clock(), stat[1])]
            elif stat[1] != looks[-1][1]:
                looks.append((self.clock(), stat[1]))
                del looks[1:-1]  # the first look and the latest are enough
            return
        if looks is None:
            return
        del self._following[rel]  # renamed (or removed): the write is over
        final = finished_name(rel)
        done = _stat(os.path.join(self.root, final))
        if done is None or done[0] < looks[0][0] - 1.0:
            return  # removed, not renamed into place
        self._record(final, done[0], done[1], _write_time(looks, done))

    def _record(self, rel, mtime, size, write_s):
        key = (rel, mtime)
        if key in self._recorded:
            if write_s is not None:  # the walk saw it first: now it is timed too
                for w in self.writes:
                    if w[0] == mtime and w[1] is None:
                        w[1] = write_s
            return
        self._recorded.add(key)
        if len(self._recorded) > 4 * MAX_WRITES:
            self._recorded = {(r, m) for r, m in self._recorded if m >= self.writes[0][0]}
        self.writes.append([mtime, write_s, size])
        self.writes.sort(key=lambda w: w[0])
        del self.writes[:-MAX_WRITES]
        if self.newest is None or mtime >= self.newest[1]:
            self.newest = (rel, mtime, size)


def _write_time(looks, done):
    """Seconds one write took: from its first look (extrapolated back over the bytes it
    already held, at the rate its growth shows) to the checkpoint's mtime."""
    t0, s0 = looks[0]
    end, final_size = done
    if s0 <= 0:
        return round(max(0.0, end - t0), 3)
    t1, s1 = looks[-1]
    if t1 > t0 and s1 > s0:
        rate = (s1 - s0) / (t1 - t0)
    elif end > t0 and final_size > s0:
        rate = (final_size - s0) / (end - t0)
    else:
        return None  # written whole before it was first seen: not timed
    return round(max(0.0, end - (t0 - s0 / rate)), 3)
