"""The one atomic write of a local file, for every layer that writes one (records, the
journal, the fleet file, queue files, settings), and the one file lock with a deadline.
It imports nothing of rgt_tui.

A write goes to a temporary file beside the target that already has the target's mode
(created 0600, then given the old file's mode before a byte is written: the fleet file
holds teardown commands and their API keys), is fsynced, renamed over the target, and the
folder is fsynced so the rename itself survives a crash. A crash leaves the old content or
the new, never half a file. A symlinked target stays a symlink: the file it names is
replaced.

And the one check that a pulled file is still what was pulled (``differs``): the gate's
re-check of the local copy and a resume's push both ask it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import hashlib
import json
import os
import stat
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

NEW_FILE_MODE = 0o600  # a file written here for the first time: results, keys, settings


@contextlib.contextmanager
def replacing(path: Path, data: str | bytes, *, mode: int = NEW_FILE_MODE) -> Iterator[Path]:
    """Write ``data`` (str as UTF-8, newlines as given) to a temporary file beside
    ``path`` and yield that file, so the caller may check it before it counts; on a normal
    exit it replaces ``path``, on an exception it is removed and ``path`` is untouched.
    The file keeps ``path``'s mode, or gets ``mode`` when ``path`` does not exist yet.
    An OSError names ``path`` when it named no file."""
    real = Path(path).resolve()
    try:
        old_mode: int | None = real.stat().st_mode & 0o7777
    except FileNotFoundError:
        old_mode = None
    real.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = new_temp(real, mode if old_mode is None else old_mode)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        yield Path(tmp)
        os.replace(tmp, real)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename is None:
            exc.filename = str(path)  # a full disk is named by the file it stopped
        raise
    fsync_dir(real.parent)


def new_temp(beside: Path, mode: int) -> tuple[int, str]:
    """A new, empty temporary file beside ``beside`` (its write descriptor and path) that
    already has ``mode``: created 0600 (the umask can only narrow that), then given
    ``mode`` before a byte is written, so no copy is ever wider than the file it replaces."""
    fd, tmp = tempfile.mkstemp(prefix=f".{beside.name}.", suffix=".tmp", dir=beside.parent)
    try:
        os.fchmod(fd, mode)
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    return fd, tmp


def atomic_write(path: Path, data: str | bytes, *, mode: int = NEW_FILE_MODE) -> None:
    """Replace ``path``'s content with ``data`` atomically and durably (see ``replacing``)."""
    with replacing(path, data, mode=mode):
        pass


def append_line(path: Path, line: dict[str, Any]) -> None:
    """Add ``line`` as one JSON line, whole (a single O_APPEND write), made durable (a
    journal-like log a crash must not lose a line of); the folder is made if missing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (json.dumps(line, separators=(",", ":")) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(folder: Path) -> None:
    """fsync a folder so a rename in it survives a crash (a no-op where unsupported)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def sync_files(fds: Sequence[int]) -> None:
    """Make the data of every open file in ``fds`` durable before it is renamed into place.

    Where the system has syncfs(2) (Linux) this is one syncfs per file system the files
    are on, not an fsync per file: fsync writes a file's dirty pages back in the calling
    process, syncfs hands the writeback to the kernel's flusher threads and waits for
    them, as any tool that does not sync (rsync) leaves it to them. Measured on a pull of
    963 MiB (3 large + 3,000 small files, loopback, docs/pulls.md): the client's CPU per GB
    7.8-8.0 s with an fsync per file, 5.8-6.5 s with syncfs, and no sync at all was *more*
    (8.4-8.9 s: dirty pages pile up and the writer is throttled in its own context). It
    also flushes whatever else is dirty on that file system, which a busy disk makes wait
    longer, never less durable. Elsewhere, an fsync per file."""
    syncfs = _syncfs()
    if syncfs is None:
        for fd in fds:
            os.fsync(fd)
        return
    devices: dict[int, int] = {}
    for fd in fds:
        devices.setdefault(os.fstat(fd).st_dev, fd)
    for fd in devices.values():
        if syncfs(fd) != 0:
            import ctypes

            code = ctypes.get_errno() or errno.EIO
            raise OSError(code, os.strerror(code))


@functools.cache
def _syncfs() -> Callable[[int], int] | None:
    """libc's syncfs, or None where there is none (not Linux, or no C library to ask)."""
    import ctypes  # only here: a sync is the only use, and not every command syncs

    try:
        return getattr(ctypes.CDLL(None, use_errno=True), "syncfs", None)
    except OSError:
        return None


class LockBusy(OSError):
    """``file_lock`` waited its whole deadline and another holder still has the lock."""


@contextlib.contextmanager
def file_lock(path: Path, timeout: float, *, mode: int = NEW_FILE_MODE) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created with ``mode``), between processes
    and threads: the one file lock with a deadline. Waits up to ``timeout`` seconds (0:
    one try), then raises ``LockBusy``; an OSError when the file cannot be opened. flock
    rather than a lock file's existence: a holder that dies releases it with its
    descriptor, so no stale lock is ever left to clear by hand."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, mode)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockBusy(f"{path}: held by another for {timeout:g} s") from None
                time.sleep(0.005)  # a holder's write takes milliseconds
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


HASH_BLOCK = 1 << 20  # one read of a file being hashed


def hash_fd(
    fd: int, upto: int | None = None, on_block: Callable[[], object] | None = None
) -> hashlib._Hash:
    """The SHA-256 of the first ``upto`` bytes (all, when None) of an open file, as a hash
    object that can take more (a resumed part goes on from there); ``on_block`` is called
    after each block (a sign of life). The one way a local copy is hashed: the pull, the
    gate's re-check of the local copy and a resume's push all compare with it."""
    digest, offset = hashlib.sha256(), 0
    while upto is None or offset < upto:
        want = HASH_BLOCK if upto is None else min(HASH_BLOCK, upto - offset)
        block = os.pread(fd, want, offset)
        if not block:
            break
        digest.update(block)
        offset += len(block)
        if on_block is not None:
            on_block()
    return digest


_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO put in a file's place must not hang the open.
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0)


class NotThere(FileNotFoundError):
    """Nothing at the path (or a folder on the way is missing)."""


def differs(root_fd: int, rel: str, size: int, sha256: str) -> str | None:
    """None when ``rel`` below the folder ``root_fd`` is a regular file of ``size`` bytes
    whose SHA-256 is ``sha256``; else why not, in a few words. NotThere when nothing is.

    Full re-hash, no shortcut: size, mtime and inode are whatever any process sets them
    to. Reached one path component at a time with ``O_NOFOLLOW``: a pull never writes a
    link, so a link on the way is "changed", never followed. Blocking."""
    if not sha256:
        return "the manifest has no SHA-256 for it"
    try:
        fd = _open_below(root_fd, rel)
    except NotThere:
        raise
    except OSError as exc:
        return exc.strerror or str(exc)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return "not a regular file"
        if st.st_size != size:
            return f"{st.st_size} bytes here, {size} in the manifest"
        if hash_fd(fd, size).hexdigest() != sha256:
            return "its SHA-256 differs from the manifest's (changed in place)"
        return None
    except OSError as exc:
        return f"cannot read: {exc.strerror}"
    finally:
        os.close(fd)


def _open_below(root_fd: int, rel: str) -> int:
    """A read descriptor on the regular file ``rel`` below ``root_fd``, never via a link;
    OSError (strerror says why) when something else is on the way."""
    names = [n for n in rel.split("/") if n]
    if not names or any(n in (".", "..") for n in names):
        raise OSError(errno.EINVAL, "not a plain path below the host folder")
    fd = os.dup(root_fd)
    try:
        for depth, name in enumerate(names):
            last = depth == len(names) - 1
            try:
                child = os.open(name, _FILE if last else _DIR, dir_fd=fd)
            except FileNotFoundError:
                raise NotThere(rel) from None
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    where = "/".join(names[: depth + 1])
                    raise OSError(exc.errno, f"{where} is a link or not a folder") from None
                raise OSError(exc.errno, f"cannot open: {exc.strerror}") from None
            os.close(fd)
            fd = child
        return fd
    except BaseException:
        os.close(fd)
        raise
