"""Reading a box's files only through the folders the scan walked: no link followed.

Part of the pull's manifest scan (``rgt_tui.agent.manifest``), sent with it as one source
and run on the box's own python3 (3.6 and up, standard library only). The walk lstats a
name when it lists its folder, then lists it or opens it later: a folder swapped for a
link in between (a run re-pointing ``latest/``, a box racing the scan toward ``~/.ssh`` or
``/etc``) was followed by a path, and what it led to was hashed and pulled (h563 #1).

Here a folder is opened one step at a time from ``/``, each step relative to the one
before and none followed when it is a link (``O_NOFOLLOW``), and a file by its name
inside that folder's fd. That holds above the root too (its realpath had no link when the
scan began), and needs no inode to stay the same between the walk and the hashing (FUSE
file systems renumber them). Steps above the folder are opened ``O_PATH``: only search
permission is needed there, as for a path.
"""

import errno
import hashlib
import os

BLOCK = 1 << 20  # files are read and hashed in blocks this size

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
DIRECTORY = getattr(os, "O_DIRECTORY", 0)
STEP = getattr(os, "O_PATH", os.O_RDONLY)  # a step passed through, never read


class Swapped(OSError):
    """A folder the walk listed is a link (or a file) now."""


SWAPPED = "replaced by a link or another folder while the scan ran; not followed"


def open_folder(root, rel):
    """An fd (readable) of the folder ``rel`` under ``root`` (bytes; ``root`` a realpath,
    ``rel`` '/'-separated, b"" for the root itself); Swapped when a step is a link now."""
    steps = [p for p in root.split(b"/") + rel.split(b"/") if p]
    fd = os.open(b"/", (os.O_RDONLY if not steps else STEP) | DIRECTORY)
    try:
        for n, step in enumerate(steps):
            last = n == len(steps) - 1
            try:
                after = os.open(
                    step, (os.O_RDONLY if last else STEP) | DIRECTORY | NOFOLLOW, dir_fd=fd
                )
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # a link, or a file, there now
                    raise Swapped(SWAPPED) from None
                raise
            os.close(fd)
            fd = after
    except BaseException:
        os.close(fd)
        raise
    return fd


class LastFolder:
    """The folder of the last file read, kept open for the next one (one thread's): small
    files are read in walk order, so a folder is opened once, not once per file."""

    def __init__(self, root):
        self.root, self.key, self.fd = root, None, None

    def open(self, rel):
        if self.key != rel:
            self.close()
            self.fd = open_folder(self.root, rel)  # the fd, not the path: it stays that folder
            self.key = rel
        return self.fd

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
        self.key, self.fd = None, None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def file_digest(name, folders, rel, tick):
    """SHA-256 of the file ``name`` in the folder ``rel`` (opened by ``folders``, a
    LastFolder) up to its size when opened, in blocks; fstat before, after; bytes read.
    ``tick`` is called after each block (the scan's sign of life)."""
    digest = hashlib.sha256()
    # Relative to that folder, the name's own link not followed: a file replaced by a new
    # one (torch.save's rename) is read as it is now; a link is never read.
    fd = os.open(name, os.O_RDONLY | NOFOLLOW, dir_fd=folders.open(rel))
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
