"""The host's results folder, written without ever following a link.

Every path below ``<results_dir>/<host>/`` is reached one component at a time from the
folder's own descriptor, each opened with ``O_NOFOLLOW``: a name the box sent can never
lead a write outside, whatever links exist here. A local symlink where the box now has a
folder (a ``latest -> cell0`` link the box replaced by a real folder) is removed and a
folder made in its place; the link's target is left untouched, so the local copy keeps
mirroring the box. Anything else in the way (a file where a folder must go) is a
``LocalConflict``, named and left alone.

Everything here blocks; the pull calls it from worker threads.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class LocalConflict(Exception):
    """Something here that is not rgt-tui's to replace is in a pulled file's way."""


class HostTree:
    """``<results_dir>/<host>/``, opened once (the folder itself may be a link: the user's)."""

    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    def close(self) -> None:
        os.close(self.fd)

    def folder(self, rel: str, *, create: bool) -> int:
        """A descriptor of folder ``rel`` (the caller closes it), links on the way replaced
        by folders when ``create``. FileNotFoundError when missing and not ``create``."""
        fd = os.dup(self.fd)
        names = [n for n in rel.split("/") if n]
        try:
            for depth, name in enumerate(names, 1):
                child = _open_folder(fd, name, create, "/".join(names[:depth]))
                os.close(fd)
                fd = child
            return fd
        except BaseException:
            os.close(fd)
            raise

    def lstat(self, rel: str) -> os.stat_result | None:
        """What is at ``rel`` (a link is reported as a link), None when nothing is;
        LocalConflict when a file stands where one of its folders must go."""
        parent, name = _split(rel)
        try:
            fd = self.folder(parent, create=False)
        except FileNotFoundError:
            return None
        try:
            return os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        finally:
            os.close(fd)

    def open_read(self, rel: str) -> int:
        """A read descriptor on the regular file ``rel`` (never through a link)."""
        parent, name = _split(rel)
        fd = self.folder(parent, create=False)
        try:
            return os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
        finally:
            os.close(fd)

    def open_part(self, rel: str) -> int:
        """A read-write descriptor on the part file ``rel`` (created 0600, kept if there)."""
        parent, name = _split(rel)
        fd = self.folder(parent, create=True)
        try:
            flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                return os.open(name, flags, 0o600, dir_fd=fd)
            except OSError as exc:
                if exc.errno != errno.ELOOP:
                    raise
                os.unlink(name, dir_fd=fd)  # a link among our own parts: not ours to follow
                return os.open(name, flags, 0o600, dir_fd=fd)
        finally:
            os.close(fd)

    def remove(self, rel: str) -> None:
        """Remove rgt-tui's own file ``rel`` (a part); nothing there is fine."""
        parent, name = _split(rel)
        try:
            fd = self.folder(parent, create=False)
        except (FileNotFoundError, LocalConflict):
            return
        try:
            os.unlink(name, dir_fd=fd)
        except FileNotFoundError:
            pass
        finally:
            os.close(fd)

    def install(self, part: str, final: str, set_aside: str | None, *, sync: bool) -> None:
        """Rename ``part`` to ``final``. An older copy there moves to ``set_aside`` first
        (when given: rgt-tui's own copy); a link there (one the box had) is replaced; a
        folder, or a file when none was expected, is a conflict, left alone."""
        src_parent, src_name = _split(part)
        dst_parent, dst_name = _split(final)
        src = self.folder(src_parent, create=False)
        dst = self.folder(dst_parent, create=True)
        try:
            try:
                st = os.stat(dst_name, dir_fd=dst, follow_symlinks=False)
            except FileNotFoundError:
                st = None
            if st is not None and stat.S_ISDIR(st.st_mode):
                raise LocalConflict(f"{final}: a folder is in the way")
            if st is not None and stat.S_ISLNK(st.st_mode):
                os.unlink(dst_name, dir_fd=dst)
            elif st is not None and set_aside is None:
                # Nothing was there when the pull was planned: someone's file since.
                raise LocalConflict(f"{final}: a file appeared there during the pull")
            elif st is not None:
                aside_parent, aside_name = _split(set_aside)
                aside = self.folder(aside_parent, create=True)
                try:
                    os.rename(dst_name, aside_name, src_dir_fd=dst, dst_dir_fd=aside)
                finally:
                    os.close(aside)
            os.rename(src_name, dst_name, src_dir_fd=src, dst_dir_fd=dst)
            if sync:
                os.fsync(dst)
        finally:
            os.close(src)
            os.close(dst)

    def symlink(self, rel: str, target: str) -> str | None:
        """Make ``rel`` a link to ``target`` (relative, checked by the caller); returns why
        not when something else is there."""
        parent, name = _split(rel)
        fd = self.folder(parent, create=True)
        try:
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                os.symlink(target, name, dir_fd=fd)
                return None
            if stat.S_ISLNK(st.st_mode):
                if os.readlink(name, dir_fd=fd) == target:
                    return None
                os.unlink(name, dir_fd=fd)  # the box's link changed: so does ours
                os.symlink(target, name, dir_fd=fd)
                return None
            return "a file or folder is in the way of the box's symlink"
        finally:
            os.close(fd)


def _open_folder(fd: int, name: str, create: bool, where: str) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=fd)
    except FileNotFoundError:
        if not create:
            raise
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        if not stat.S_ISLNK(st.st_mode):
            raise LocalConflict(f"{where} is a file where a folder must go") from None
        if not create:
            raise FileNotFoundError(errno.ENOENT, "a link, not a folder", name) from None
        os.unlink(name, dir_fd=fd)  # the link goes; what it pointed to stays as it was
    try:
        os.mkdir(name, 0o755, dir_fd=fd)
    except FileExistsError:
        pass  # another worker made it meanwhile; the open below still refuses a link
    return os.open(name, _DIR_FLAGS, dir_fd=fd)


def _split(rel: str) -> tuple[str, str]:
    parent, _, name = rel.rpartition("/")
    return parent, name
