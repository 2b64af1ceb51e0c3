"""Reading a box's files only through the folders the scan found: no link followed.

Part of the pull's manifest scan (``rgt_tui.agent.manifest``), sent with it as one source
and run on the box's own python3 (3.6 and up, standard library only). The walk lstats a
name when it lists its folder, then lists it or opens it later: a folder swapped for a
link in between (a run re-pointing ``latest/``, a box racing the scan toward ``~/.ssh`` or
``/etc``) was followed by a path, and what it led to was hashed and pulled (h563 #1). Here
a folder is opened only while it is the one the walk found (its device and inode), each
step without following a link, and a file by its name inside that folder's fd.
"""

import errno
import hashlib
import os

BLOCK = 1 << 20  # files are read and hashed in blocks this size

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class Swapped(OSError):
    """A folder the walk listed is another one now (a link put in its place)."""


SWAPPED = "replaced by a link or another folder while the scan ran; not followed"


def open_folder(full, seen):
    """An fd of the folder ``full``, only while it is the one the walk found (``seen``,
    its lstat): its last step is not followed when a link, and a step above it swapped
    for a link shows as another device or inode here. Listing by path followed a folder
    swapped for a link to ~/.ssh or /etc after its lstat, and pulled them (h563 #1)."""
    try:
        fd = os.open(full, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | NOFOLLOW)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # a link, or a file, there now
            raise Swapped(SWAPPED) from None
        raise
    st = os.fstat(fd)
    if (st.st_dev, st.st_ino) != (seen.st_dev, seen.st_ino):
        os.close(fd)
        raise Swapped(SWAPPED)
    return fd


class LastFolder:
    """The folder of the last file read, kept open for the next one (one thread's): small
    files are read in walk order, so a folder is opened once, not once per file (an open,
    fstat and close more per file made a scan of 8000 small files 10 % slower)."""

    def __init__(self):
        self.key, self.fd = None, None

    def open(self, folder):
        if self.key != folder[0]:
            self.close()
            self.fd = open_folder(*folder)  # the fd, not the path: it stays that folder
            self.key = folder[0]
        return self.fd

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
        self.key, self.fd = None, None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def file_digest(name, folder, tick, folders=None):
    """SHA-256 of a file up to its size when opened (in blocks); fstat before, after; bytes
    read. ``folder``: (path, lstat) of the folder the walk found it in, opened as it was
    (kept open in ``folders``, a LastFolder, when given); ``tick`` is called after each
    block (the scan's sign of life)."""
    digest = hashlib.sha256()
    dir_fd = folders.open(folder) if folders is not None else open_folder(*folder)
    try:
        # Relative to that folder, the name's own link not followed: a file replaced by
        # a new one (torch.save's rename) is read as it is now; a link is never read.
        fd = os.open(name, os.O_RDONLY | NOFOLLOW, dir_fd=dir_fd)
    finally:
        if folders is None:
            os.close(dir_fd)
    read = 0
    try:
        before = os.fstat(fd)
        # No bigger than the file: zeroing a new 1 MiB buffer each time dominated small files.
        buf = bytearray(min(BLOCK, before.st_size + 1))
        view = memoryview(buf)
        with os.fdopen(fd, "rb", buffering=0, closefd=False) as f:
            while read < before.st_size:
                n = f.readinto(view[: min(len(buf), before.st_size - read)])
                if not n:
                    break
                tick()
                digest.update(view[:n])
                read += n
        after = os.fstat(fd)
    finally:
        os.close(fd)
    return digest.hexdigest(), before, after, read
