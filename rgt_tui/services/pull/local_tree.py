"""The host's results folder, written without ever following a link.

Every path below ``<results_dir>/<host>/`` is reached one component at a time from the
folder's own descriptor, each opened with ``O_NOFOLLOW``: a name the box sent can never
lead a write outside, whatever links exist here. A local symlink where the box now has a
folder (a ``latest -> cell0`` link the box replaced by a real folder) is removed and a
folder made in its place; the link's target is left untouched, so the local copy keeps
mirroring the box. Anything else in the way (a file where a folder must go) is a
``LocalConflict``, named and left alone.

The last folders reached stay open for the next file in them (``HostTree.folder``): a
descriptor of a folder that the walk reached without a link. A link put later where such
a folder was is not followed (the next file goes into the folder held, wherever it now
is; a folder reached afresh replaces the link, as above), and a held folder that was
removed is walked, and made, again.

Everything here blocks; the pull calls it through ``in_thread``.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import secrets
import stat
import threading
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path

from rgt_tui.domain.manifest import Manifest
from rgt_tui.domain.manifest_names import case_twin_names, refuse_unwritable

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_HELD = 64  # folders kept open by a HostTree


async def in_thread(func, *args):  # noqa: ANN001, ANN201
    """``func(*args)`` in a worker thread, as every call into this module is made. A
    cancelled caller still waits for the thread to end (it cannot be stopped): it may be
    using a descriptor the caller closes next (a part, the tree itself), and a number
    closed under it could be another file's by then."""
    task = asyncio.ensure_future(asyncio.to_thread(func, *args))
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.done():
                raise
            cancelled = True
            continue
        if cancelled:
            raise asyncio.CancelledError
        return result


def current_umask() -> int:
    """This process's umask, read without changing it where Linux tells it
    (``/proc/self/status``); elsewhere set and put back at once, through a value that can
    only narrow what another thread creates in between."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o077)
    os.umask(old)
    return old


class LocalConflict(Exception):
    """Something here that is not rgt-tui's to replace is in a pulled file's way, or a
    folder here refuses the file (``fix`` says what the user does about it)."""

    def __init__(self, what: str, fix: str = "move it away and re-run") -> None:
        super().__init__(what)
        self.fix = fix

    @property
    def told(self) -> str:
        return f"{self}; {self.fix}"


# A folder that refuses one file (made immutable, read-only, another disk mounted inside
# the results folder) stops that file, not the pull (h543 #2). A full disk still stops
# the pull: every later file would fail the same way.
_REFUSED_HERE = {errno.EXDEV, errno.EPERM, errno.EACCES, errno.EROFS}


def _refused_here(exc: OSError) -> LocalConflict:
    # The file's path is the caller's to say: a CONFLICT line names it (h545 #7: twice).
    if exc.errno == errno.EXDEV:
        return LocalConflict(
            "its folder is on another file system than the pull's .rgt/parts "
            "(a disk mounted inside the results folder), so the checked copy cannot be "
            "renamed into it",
            "mount that disk elsewhere (or set results_dir to a folder on it) and re-run",
        )
    return LocalConflict(
        f"its folder here refuses the file ({exc.strerror or exc})",
        "make that folder writable (chmod u+w; chattr -i if it was made immutable) and re-run",
    )


class HostTree:
    """``<results_dir>/<host>/``, opened once (the folder itself may be a link: the user's)."""

    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        # What this file system allows: the longest name (a box's may allow more), and
        # how long a path below this folder may be (each write here goes one component
        # at a time, but verify and the user's own tools open files by their whole path).
        self.name_max = _limit(self.fd, "PC_NAME_MAX", 255)
        whole = _limit(self.fd, "PC_PATH_MAX", 4096)
        self.path_room = whole - len(os.fsencode(os.path.abspath(root))) - 2  # "/" and NUL
        self.folds_case = _folds_case(self.fd)
        # The last folders reached, kept open: a pull's files cluster in few folders, and
        # each file's part, rename and check walked its folders again (a few opens per
        # component, thousands of small files). A held descriptor is a folder the walk
        # below reached without a link; the worker threads share it under the lock.
        self._held: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()

    def writable(self, manifest: Manifest) -> Manifest:
        """``manifest`` with what cannot be written here refused by name (a name longer
        than this file system allows, a path past PATH_MAX, a case twin on a disk that
        folds case): named, never a stopped pull."""
        twins = case_twin_names(manifest) if self.folds_case else []
        if not twins:  # most pulls, on any disk: one pass
            return refuse_unwritable(manifest, self.name_max, self.path_room)
        return refuse_unwritable(
            manifest, self.name_max, self.path_room, folds_case=True,
            prefer=self._names_here(twins),
        )  # fmt: skip

    def _names_here(self, rels: list[str]) -> set[str]:
        """Which of ``rels`` are here under that very name (a case-folding disk answers
        for any case: the folder's own listing says which one it holds)."""
        here = set()
        for rel in rels:
            parent, _, name = rel.rpartition("/")
            try:
                held = self.folder(parent, create=False)
            except OSError:
                continue
            try:
                # Listed through its own open of the folder: the root's descriptor is a
                # dup of ``self.fd``, whose read position every dup shares, and the early
                # listing and the manifest ask this from two threads at once (a loaded
                # run saw a half listing, and kept the new twin over the verified one).
                fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=held)
            except OSError:
                os.close(held)
                continue
            try:
                if name in os.listdir(fd):
                    here.add(rel)
            except OSError:
                pass
            finally:
                os.close(fd)
                os.close(held)
        return here

    def close(self) -> None:
        with self._lock:
            for fd in self._held.values():
                os.close(fd)
            self._held.clear()
        os.close(self.fd)

    def folder(self, rel: str, *, create: bool) -> int:
        """A descriptor of folder ``rel`` (the caller closes it), links on the way replaced
        by folders when ``create``. FileNotFoundError when missing and not ``create``."""
        names = [n for n in rel.split("/") if n]
        key = "/".join(names)
        held = self._take(key)
        if held is not None:
            return held
        fd = os.dup(self.fd)
        try:
            for depth, name in enumerate(names, 1):
                child = _open_folder(fd, name, create, "/".join(names[:depth]))
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        if key:
            self._hold(key, fd)
        return fd

    def _take(self, key: str) -> int | None:
        """A new descriptor of the held folder ``key``; None when none is held, or when
        the one held was removed meanwhile (walked again: made again if wanted)."""
        with self._lock:
            held = self._held.get(key)
            if held is None:
                return None
            if os.fstat(held).st_nlink:
                self._held.move_to_end(key)
                return os.dup(held)
            del self._held[key]
        os.close(held)
        return None

    def _hold(self, key: str, fd: int) -> None:
        with self._lock:
            if key in self._held:
                return
            self._held[key] = os.dup(fd)
            old = self._held.popitem(last=False)[1] if len(self._held) > _HELD else None
        if old is not None:
            os.close(old)

    @contextlib.contextmanager
    def entry(self, rel: str, *, create: bool) -> Iterator[tuple[int, str]]:
        """(descriptor of ``rel``'s folder, ``rel``'s last name), the folder closed after."""
        parent, _, name = rel.rpartition("/")
        fd = self.folder(parent, create=create)
        try:
            yield fd, name
        finally:
            os.close(fd)

    def lstat(self, rel: str) -> os.stat_result | None:
        """What is at ``rel`` (a link is reported as a link), None when nothing is;
        LocalConflict when a file stands where one of its folders must go."""
        try:
            with self.entry(rel, create=False) as (fd, name):
                return os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def open_read(self, rel: str) -> int:
        """A read descriptor on the regular file ``rel`` (never through a link)."""
        with self.entry(rel, create=False) as (fd, name):
            return os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)

    def open_part(self, rel: str) -> int:
        """A read-write descriptor on the part file ``rel`` (created 0600, kept if there)."""
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        with self.entry(rel, create=True) as (fd, name):
            try:
                return os.open(name, flags, 0o600, dir_fd=fd)
            except OSError as exc:
                if exc.errno != errno.ELOOP:
                    raise
                os.unlink(name, dir_fd=fd)  # a link among our own parts: not ours to follow
                return os.open(name, flags, 0o600, dir_fd=fd)

    def seed_part(self, rel: str, part: str) -> int:
        """Start ``part`` as a copy of rgt-tui's own file ``rel`` (the box's file grew
        since: the pull then fetches only the rest, and the hash of the whole decides);
        its size. In the kernel where it can (``copy_file_range``: a reflink on btrfs and
        XFS), else by reads and writes."""
        src = self.open_read(rel)
        try:
            dst = self.open_part(part)
            try:
                os.ftruncate(dst, 0)
                size = os.fstat(src).st_size
                done = 0
                while done < size:
                    try:
                        n = os.copy_file_range(src, dst, size - done, done, done)
                    except OSError as exc:
                        if exc.errno not in (
                            errno.EXDEV,
                            errno.ENOSYS,
                            errno.EINVAL,
                            errno.EOPNOTSUPP,
                        ):
                            raise
                        n = os.pwrite(dst, os.pread(src, min(1 << 20, size - done), done), done)
                    if n == 0:  # shorter than it said (written meanwhile): what came
                        break
                    done += n
                return done
            finally:
                os.close(dst)
        finally:
            os.close(src)

    def remove(self, rel: str) -> None:
        """Remove rgt-tui's own file ``rel`` (a part); nothing there is fine."""
        with (
            contextlib.suppress(FileNotFoundError, LocalConflict),
            self.entry(rel, create=False) as (fd, name),
        ):
            os.unlink(name, dir_fd=fd)

    def install(
        self, part: str, final: str, set_aside: str | None, *, sync: bool, over_link: bool = False
    ) -> str | None:
        """Rename ``part`` to ``final``. An older copy there moves to ``set_aside`` first
        (when given: rgt-tui's own copy); a link there is replaced when the plan found it
        ours (``over_link``: one the last pull made from the box's); a folder, another
        link, or a file when none was expected is a conflict, left alone. Returns
        ``set_aside`` when an older copy went there, else None."""
        try:
            return self._install(part, final, set_aside, sync=sync, over_link=over_link)
        except OSError as exc:
            if exc.errno in _REFUSED_HERE:
                raise _refused_here(exc) from exc
            raise

    def _install(
        self, part: str, final: str, set_aside: str | None, *, sync: bool, over_link: bool
    ) -> str | None:
        moved = None
        with (
            self.entry(part, create=False) as (src, src_name),
            self.entry(final, create=True) as (dst, dst_name),
        ):
            try:
                st = os.stat(dst_name, dir_fd=dst, follow_symlinks=False)
            except FileNotFoundError:
                st = None
            if st is not None and stat.S_ISDIR(st.st_mode):
                raise LocalConflict("a folder is in the way")
            if st is not None and stat.S_ISLNK(st.st_mode):
                if not over_link:  # made since the plan: the user's
                    raise LocalConflict("a link appeared there during the pull")
                os.unlink(dst_name, dir_fd=dst)
            elif st is not None and set_aside is None:
                # Nothing was there when the pull was planned: someone's file since.
                raise LocalConflict("a file appeared there during the pull")
            elif st is not None and set_aside is not None:  # rgt-tui's older copy: kept
                if stat.S_ISREG(st.st_mode) and _starts_with((dst, dst_name), (src, src_name)):
                    # Every byte of it begins the new copy (a log the box appended to):
                    # nothing is lost, and a copy per pull would fill replaced/.
                    os.unlink(dst_name, dir_fd=dst)
                else:
                    with self.entry(set_aside, create=True) as (aside, aside_name):
                        os.rename(dst_name, aside_name, src_dir_fd=dst, dst_dir_fd=aside)
                    moved = set_aside
            os.rename(src_name, dst_name, src_dir_fd=src, dst_dir_fd=dst)
            if sync:
                os.fsync(dst)
        return moved

    def symlink(self, rel: str, target: str, *, ours: bool = False) -> str | None:
        """Make ``rel`` a link to ``target`` (relative, checked by the caller); returns why
        not when something else is there: a file, a folder, or a link to elsewhere that
        is not ``ours`` (one the last pull made)."""
        with self.entry(rel, create=True) as (fd, name):
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                os.symlink(target, name, dir_fd=fd)
                return None
            if stat.S_ISLNK(st.st_mode):
                if os.readlink(name, dir_fd=fd) == target:
                    return None
                if not ours:
                    return "a link rgt-tui did not make is in the way of the box's symlink"
                os.unlink(name, dir_fd=fd)  # the box's link changed: so does ours
                os.symlink(target, name, dir_fd=fd)
                return None
            # No fix said, and rgt-tui's own earlier copy of a folder the box has since
            # made a link (the `latest/` pattern) is often what stands there (h613 #4).
            what = "folder" if stat.S_ISDIR(st.st_mode) else "file"
            return (
                f"a {what} here is in the way of the box's symlink (to {target}), which was "
                f"a {what} when pulled before, or is yours: move it away here (nothing of "
                "it is deleted), then pull again"
            )


def _folds_case(fd: int) -> bool:
    """Whether the folder's file system takes ``A`` and ``a`` as one name (macOS's
    default, exFAT, Windows): a probe file made, looked up by its other case, removed.
    False where it cannot be made (a read-only folder: the pull fails there anyway)."""
    # A random name: one a crash left behind (or any file there) never answers for it.
    probe = f".rgt-case-Probe-{secrets.token_hex(8)}"
    try:
        os.close(
            os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, 0o600, dir_fd=fd)
        )
    except OSError:
        return False
    try:
        os.stat(probe.swapcase(), dir_fd=fd, follow_symlinks=False)
    except OSError:
        return False
    else:
        return True
    finally:
        with contextlib.suppress(OSError):
            os.unlink(probe, dir_fd=fd)


def _limit(fd: int, name: str, default: int) -> int:
    """``fpathconf(fd, name)``, or ``default`` where the system does not say."""
    try:
        value = os.fpathconf(fd, name)
    except (OSError, ValueError):
        return default
    return value if value > 0 else default


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


def _starts_with(old: tuple[int, str], new: tuple[int, str], block: int = 1 << 20) -> bool:
    """Whether the file ``old`` (folder fd, name) is, byte for byte, the start of ``new``
    (its first block differs at once for a rewritten checkpoint: no long read then)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    a = os.open(old[1], flags, dir_fd=old[0])
    try:
        b = os.open(new[1], flags, dir_fd=new[0])
        try:
            if os.fstat(a).st_size > os.fstat(b).st_size:
                return False
            while chunk := os.read(a, block):
                if os.read(b, len(chunk)) != chunk:
                    return False
            return True
        finally:
            os.close(b)
    finally:
        os.close(a)
