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

Files are reached one path component at a time with ``O_NOFOLLOW`` from the host folder
(which may itself be the user's link): the pull never writes a link, so a link at any
step is "changed", never followed. Blocking: call it off the event loop.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from rgt_tui.domain.teardown_gate import FileFacts, LocalCopyChecked
from rgt_tui.domain.text import printable
from rgt_tui.fsutil import hash_fd  # the pull hashes its copies the same way

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0)


class _Missing(Exception):
    """Nothing at the path (or a folder on the way is missing)."""


class _Changed(Exception):
    """Something is at the path, but not the pulled file; the message says what."""


def _open_file(root_fd: int, rel: str) -> int:
    """A read descriptor on the regular file ``rel`` below ``root_fd``, never via a link."""
    names = [n for n in rel.split("/") if n]
    if not names or any(n in (".", "..") for n in names):
        raise _Changed("not a plain path below the host folder")
    fd = os.dup(root_fd)
    try:
        for depth, name in enumerate(names):
            last = depth == len(names) - 1
            try:
                # O_NONBLOCK: a FIFO put in a file's place must not hang the open.
                child = os.open(name, _FILE if last else _DIR, dir_fd=fd)
            except FileNotFoundError:
                raise _Missing() from None
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    where = "/".join(names[: depth + 1])
                    raise _Changed(f"{where} is a link or not a folder") from None
                raise _Changed(f"cannot open: {exc.strerror}") from None
            os.close(fd)
            fd = child
        return fd
    except BaseException:
        os.close(fd)
        raise


def _check_one(root_fd: int, rel: str, facts: FileFacts) -> str | None:
    """None when ``rel`` is the pulled file; else why not (raises _Missing)."""
    if not facts.sha256:
        return "the manifest has no SHA-256 for it"
    fd = _open_file(root_fd, rel)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return "not a regular file"
        if st.st_size != facts.size:
            return f"{st.st_size} bytes here, {facts.size} in the manifest"
        if hash_fd(fd, facts.size).hexdigest() != facts.sha256:
            return "its SHA-256 differs from the manifest's (changed in place)"
        return None
    except OSError as exc:
        return f"cannot read: {exc.strerror}"
    finally:
        os.close(fd)


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
                why = _check_one(root, rel, facts)
            except _Missing:
                missing.append(rel)
                continue
            except _Changed as exc:
                why = str(exc)
            if why is None:
                matched += 1
            else:
                changed.append(f"{rel}: {printable(why, 300)}")
    finally:
        os.close(root)
    return LocalCopyChecked(str(folder), at, matched, tuple(missing), tuple(changed))
