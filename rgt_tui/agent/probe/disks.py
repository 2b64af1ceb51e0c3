"""Disks (U7: inodes run out before bytes, so both are reported)."""

import os
import re
import time

from .common import read_optional, safe

MOUNTS_REFRESH_S = 60.0  # the mount table is read again at least this often


def _unescape_mount(field):
    """Mount points in mountinfo escape space, tab, newline and backslash as octal (\\040)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def read_mount_points(proc_root):
    """Mount points from <proc>/self/mountinfo, else <proc>/mounts; None if neither reads."""
    text = read_optional(os.path.join(proc_root, "self/mountinfo"))
    if text is not None:
        return [
            _unescape_mount(line.split()[4]) for line in text.splitlines() if len(line.split()) > 4
        ]
    text = read_optional(os.path.join(proc_root, "mounts"))
    if text is not None:
        return [
            _unescape_mount(line.split()[1]) for line in text.splitlines() if len(line.split()) > 1
        ]
    return None


def mount_of(path, mount_points):
    """The mount point holding path: the longest mount point that prefixes its realpath."""
    real = os.path.realpath(path)
    if mount_points:
        best = None
        for mp in mount_points:
            holds = mp == "/" or real == mp or real.startswith(mp.rstrip("/") + "/")
            if holds and (best is None or len(mp) > len(best)):
                best = mp
        if best is not None:
            return best
    # No readable mount table: walk up until a mount boundary.
    while not os.path.ismount(real):
        parent = os.path.dirname(real)
        if parent == real:
            break
        real = parent
    return real


def _entry(path, mount, st):
    """statvfs of the file system holding path, in bytes and inodes. The bytes' total is
    what can be filled, used plus available (``f_bavail``), as df's Use% counts it: blocks
    the file system keeps back (ext4's 5 % for root, a quota) are not free to the run.
    A box with 252G of blocks, 48G used and 55G available is 47 % full, as df says; of
    the blocks it would read 19 %, and a disk alert would come far too late."""
    used = st.f_blocks - st.f_bfree
    # More inodes free than exist (CephFS reports f_ffree as -1, some FUSE mounts junk):
    # no inode figure, as a file system that reports none, not a negative one that the
    # client refuses together with the disk's bytes (a review).
    files, free = (st.f_files, st.f_ffree) if st.f_ffree <= st.f_files else (0, 0)
    return {
        "path": path,
        "mount": mount,
        "bytes_used": used * st.f_frsize,
        "bytes_total": (used + st.f_bavail) * st.f_frsize,
        "inodes_used": files - free,
        "inodes_total": files,
    }


class DiskProbe:
    """Disks of the watched paths, one entry per path (a path that cannot be read is an
    error naming it): statvfs of every path each sample, but the mount table (hundreds
    of lines on a container host, parsed line by line) read again only when a path's
    device changed (something mounted over it, or unmounted) or every ``refresh_s``
    seconds, which catches a bind mount of the same file system. Which mount holds a
    path is a label; the figures are read fresh every sample."""

    def __init__(self, proc_root, refresh_s=MOUNTS_REFRESH_S, clock=time.monotonic):
        self.proc_root = proc_root
        self.refresh_s = refresh_s
        self.clock = clock
        self.read_at = None
        self.mounts = {}  # path -> (st_dev, its mount point)
        self.table_errors = []  # why the mount table could not be read, said every sample
        # The watched paths the last sample could not read, [path, why] each: a typo in
        # ``mounts`` (or a folder not made yet) leaves its disk unwatched, and the client
        # tells it as such rather than by an error line only ``--json`` shows.
        self.unread = []

    def sample(self, paths, errors):
        """One entry per readable path; the others are errors naming them."""
        self.unread = []
        now = self.clock()
        stale = self.read_at is None or now - self.read_at >= self.refresh_s
        mount_points = None
        read = False
        disks = []
        for path in paths:
            try:
                dev = os.stat(path).st_dev
                known = self.mounts.get(path)
                if stale or known is None or known[0] != dev:
                    if not read:
                        self.table_errors = []
                        mount_points = safe(
                            self.table_errors, "mounts", lambda: read_mount_points(self.proc_root)
                        )
                        read = True
                    known = (dev, mount_of(path, mount_points))
                    self.mounts[path] = known
                st = os.statvfs(path)
            except OSError as exc:
                self.mounts.pop(path, None)
                errors.append(f"disk {path}: {exc.strerror or exc}")
                self.unread.append([path, str(exc.strerror or exc)])
                continue
            disks.append(_entry(path, known[1], st))
        if read:
            self.read_at = now
        errors.extend(self.table_errors)
        return disks
