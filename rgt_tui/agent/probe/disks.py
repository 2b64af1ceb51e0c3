"""Disks (U7: inodes run out before bytes, so both are reported)."""

import os
import re

from .common import read_optional, safe


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


def disk_entry(path, mount_points):
    """statvfs of the file system holding path, in bytes and inodes."""
    st = os.statvfs(path)
    return {
        "path": path,
        "mount": mount_of(path, mount_points),
        "bytes_used": (st.f_blocks - st.f_bfree) * st.f_frsize,
        "bytes_total": st.f_blocks * st.f_frsize,
        "inodes_used": st.f_files - st.f_ffree,
        "inodes_total": st.f_files,
    }


def probe_disks(paths, proc_root, errors):
    """One entry per watched path; a path that cannot be read is an error naming it."""
    mount_points = safe(errors, "mounts", lambda: read_mount_points(proc_root))
    disks = []
    for path in paths:
        try:
            disks.append(disk_entry(path, mount_points))
        except OSError as exc:
            errors.append(f"disk {path}: {exc.strerror or exc}")
    return disks
