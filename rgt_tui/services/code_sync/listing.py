"""The local code tree: which files a sync sends, and their hashes (U42).

In a git repository git itself lists the files (tracked, plus untracked ones that no
``.gitignore`` excludes), so the listing is the one ``git status`` reasons about; outside
one the tree is walked with every ``.gitignore`` on the way honoured (``pathspec``).
Either way the host's ``code_exclude`` patterns (gitignore syntax) are applied on top,
``.git/`` is never included, and symlinks and special files are left out, never
followed (counted in ``skipped``); the fleet file in use, the queue files it names and
the fleet's ``results_dir`` are held back (``rules.held_back``; named in ``withheld``, a
folder with a trailing "/"). Neither they nor what
``code_exclude`` leaves out make the tree dirty: they never reach the box. While a file
is hashed it is also read for CRLF line endings where they break the box
(``domain.crlf``: shell scripts, ``#!`` scripts, config files; U26). Blocking: run
``list_tree`` in a thread.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

import pathspec

from rgt_tui.domain.code_identity import CodeIdentity, FileHash, tree_hash
from rgt_tui.domain.crlf import crlf_kind, has_crlf
from rgt_tui.services.code_sync.rules import (
    SendRules,
    copy_of,
    held_back,
    held_under,
    ignored_by,
    is_secret,
    looks_like_fleet_file,
    name_ok,
    never_sent,
    reads_as_fleet_file,
    reads_as_queue_file,
)
from rgt_tui.services.code_sync.types import MAX_DIFFERS, SyncError

_GIT_TIMEOUT_S = 60.0
_READ = 1 << 20


@dataclass(frozen=True)
class LocalFile:
    """One file of the local tree: its hash, executable bit and size; ``crlf``: its kind
    when it has CRLF line endings that break it on the box ("" otherwise)."""

    path: str  # relative, "/"-separated
    sha256: str
    executable: bool
    size: int
    crlf: str = ""

    def file_hash(self) -> FileHash:
        return FileHash(self.path, self.sha256, self.executable)


@dataclass(frozen=True)
class LocalTree:
    """The listed, hashed files of a local ``code`` directory."""

    root: Path
    files: tuple[LocalFile, ...]
    commit: str = ""  # git HEAD; "" outside git or before the first commit
    dirty: bool = False
    skipped: tuple[str, ...] = ()  # "path (why)" for each entry left out
    # The first paths ``git status`` shows as changed or untracked (``uncommitted_count``
    # all of them), held-back files aside.
    uncommitted: tuple[str, ...] = ()
    uncommitted_count: int = 0
    # The fleet file, its queue files and the results_dir ("results/") found here, never sent.
    withheld: tuple[str, ...] = ()
    # The rules that chose ``files``, to judge the box's files by (None: git's alone).
    rules: SendRules | None = field(default=None, compare=False, repr=False)

    secrets: tuple[str, ...] = ()  # secret files in the tree, never sent (``is_secret``)

    def not_sent(self, paths: Iterable[str], host: str) -> set[str]:
        """Those of ``paths`` the tree's ignore files or ``code_exclude`` leave out: a
        sync never removes the box's copies of them, whatever an earlier sync put there
        (h512 #2). What is held back (the fleet file, its queues, the results, copies of
        them) is not among them: an earlier sync's copy of that goes. Blocking (git)."""
        rules = self.rules
        asked = [
            p
            for p in paths
            if rules is not None
            and held_under(p, rules.held) is None
            and not copy_of(p, rules.copied)
        ]
        if rules is None or not asked:
            return set()
        return set(asked) - rules.sent(asked, host)

    @property
    def crlf(self) -> tuple[tuple[str, str], ...]:
        """(path, kind) of each file whose CRLF line endings break it on the box (U26)."""
        return tuple((f.path, f.crlf) for f in self.files if f.crlf)

    @property
    def identity(self) -> CodeIdentity:
        """The tree's identity: hash of its listing, and the git commit when there is one."""
        return CodeIdentity(tree_hash(f.file_hash() for f in self.files), self.commit, self.dirty)


def list_tree(
    root: Path, excludes: tuple[str, ...], host: str, withhold: Iterable[Path] = ()
) -> LocalTree:
    """List and hash ``root`` (see the module docstring); ``withhold``: the fleet file, its
    queue files and its results_dir (``rules.fleet_files``), never listed. SyncError when it is not a
    readable directory or git fails on it."""
    root = root.expanduser()
    if not root.is_dir():
        raise SyncError(
            host,
            f"the code directory {root} does not exist here",
            f"fix code for {host} in hosts.toml",
        )
    extra = pathspec.GitIgnoreSpec.from_lines(excludes)
    withhold = tuple(withhold)
    held = held_back(root, withhold)
    # The held files (not results_dir, even before it exists): their copies beside them
    # are held back too.
    held_files = held_back(root, (f for f in withhold if f.is_file()))
    git = _git_listing(root, host)
    changed: list[str] = []
    if git is not None:
        names, commit, changed = git
        # What never reaches the box does not make its code differ from the commit.
        changed = [c for c in changed if held_under(c, held) is None and not never_sent(c, extra)]
        rules = SendRules(root, excludes, git=True, held=held, copied=held_files)
    else:
        names, specs = _walk(root)
        commit = ""
        rules = SendRules(root, excludes, git=False, specs=specs, held=held, copied=held_files)
    files: list[LocalFile] = []
    skipped: list[str] = []
    withheld: list[str] = []
    secrets: list[str] = []
    copies: set[str] = set()
    for rel in sorted(set(names)):
        if is_secret(rel):  # named, so the user knows it stayed here
            secrets.append(rel)
            continue
        if never_sent(rel, extra):
            continue
        holder = held_under(rel, held)
        if holder is not None:  # a file held back, or one under a held folder (once)
            withheld.append(rel if holder == rel else holder + "/")
            continue
        if copy_of(rel, held_files) or reads_as_queue_file(root / rel):
            # a copy, or a queue file no entry names now
            withheld.append(rel)
            copies.add(rel)
            continue
        if not name_ok(rel):
            skipped.append(f"{_shown(rel)} (a name with control characters or not UTF-8)")
            continue
        path = root / rel
        try:
            st = path.lstat()
        except FileNotFoundError:
            continue  # tracked but deleted here: nothing to send (the box keeps its copy)
        except OSError as exc:
            skipped.append(f"{rel} ({exc.strerror or exc})")
            continue
        if stat.S_ISLNK(st.st_mode):
            skipped.append(f"{rel} (a symlink: not followed)")
        elif stat.S_ISDIR(st.st_mode) and (path / ".git").exists():
            # git lists a submodule (or a repository inside the tree) as one entry: none
            # of its files is sent, and a run importing it failed on the box (h603 #8).
            skipped.append(f"{rel}/ (a git repository inside the tree: its files are not sent)")
        elif not stat.S_ISREG(st.st_mode):
            skipped.append(f"{rel} (not a regular file)")
        else:
            try:
                digest, crlf, fleet_like = _sha256(path, rel)
            except OSError as exc:
                skipped.append(f"{rel} ({exc.strerror or exc})")
                continue
            if fleet_like and reads_as_fleet_file(path, rel):  # a copy by its content
                withheld.append(rel)
                copies.add(rel)
                continue
            files.append(LocalFile(rel, digest, bool(st.st_mode & 0o111), st.st_size, crlf))
    if copies:  # the box's copy of one is no more code than this one, nor a change here
        rules = replace(rules, held=rules.held | copies)
        changed = [c for c in changed if c not in copies]  # once, by name or content
    return LocalTree(
        root,
        tuple(files),
        commit,
        bool(changed),
        tuple(skipped),
        tuple(changed[:MAX_DIFFERS]),
        len(changed),
        tuple(dict.fromkeys(withheld)),
        rules,
        tuple(secrets),
    )


def _sha256(path: Path, rel: str) -> tuple[str, str, bool]:
    """The file's SHA-256, its CRLF kind (``domain.crlf``) if it is one that breaks, and
    whether its first MiB looks like a fleet file (read here, not a second time)."""
    digest = hashlib.sha256()
    kind, crlf, cr, fleet_like = None, False, False, False
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        while chunk := f.read(_READ):
            digest.update(chunk)
            if kind is None:
                kind = crlf_kind(rel, chunk[:2])
                fleet_like = looks_like_fleet_file(chunk)
            if kind and not crlf:
                crlf, cr = has_crlf(chunk, cr), chunk.endswith(b"\r")
    return digest.hexdigest(), kind if crlf else "", fleet_like


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["git", "-C", str(root), *args],
        capture_output=True,
        timeout=_GIT_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )


def _git_listing(root: Path, host: str) -> tuple[list[str], str, list[str]] | None:
    """(paths, HEAD, uncommitted paths) from git, all relative to ``root``, or None when
    ``root`` is not in a git work tree (or git is not installed)."""
    try:
        inside = _git(root, "rev-parse", "--is-inside-work-tree")
    except (OSError, subprocess.TimeoutExpired):
        return None
    if inside.returncode != 0 or inside.stdout.strip() != b"true":
        return None
    listed = _git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    status = _git(root, "status", "--porcelain", "-z", "--untracked-files=all", "--", ".")
    prefix = _git(root, "rev-parse", "--show-prefix")
    if listed.returncode != 0 or status.returncode != 0 or prefix.returncode != 0:
        err = (listed.stderr or status.stderr or prefix.stderr).decode(errors="replace").strip()
        raise SyncError(host, f"git cannot list {root}: {err}", f"run git status in {root}")
    head = _git(root, "rev-parse", "--verify", "-q", "HEAD")
    commit = head.stdout.decode().strip() if head.returncode == 0 else ""
    names = [os.fsdecode(n) for n in listed.stdout.split(b"\0") if n]
    under = os.fsdecode(prefix.stdout.rstrip(b"\n"))
    return names, commit, _changed(status.stdout, under)


def _changed(porcelain: bytes, prefix: str) -> list[str]:
    """The paths of ``git status --porcelain -z`` (relative to the repository's top),
    relative to the listed folder ``prefix`` (``sub/``; "" at the top)."""
    paths: list[str] = []
    fields = iter(porcelain.split(b"\0"))
    for entry in fields:
        if len(entry) < 4:
            continue
        if b"R" in entry[:2] or b"C" in entry[:2]:
            next(fields, None)  # a rename's or copy's source follows: the new name counts
        path = os.fsdecode(entry[3:])
        paths.append(path.removeprefix(prefix) if prefix and path.startswith(prefix) else path)
    return list(dict.fromkeys(paths))  # staged and changed again (``D `` + ``??``): once


def _walk(root: Path) -> tuple[list[str], dict[str, pathspec.GitIgnoreSpec]]:
    """Every file under ``root`` that its ``.gitignore`` files leave in (git's rules: the
    deepest file's last matching pattern decides; an ignored directory is not entered).
    Symlinks are listed (and then skipped by the caller), never followed. Also returns
    the ``.gitignore`` files read, by folder, to judge the box's files by."""
    found: list[str] = []
    specs: dict[str, pathspec.GitIgnoreSpec] = {}
    for top, dirs, names in os.walk(root, followlinks=False):
        rel_top = os.path.relpath(top, root)
        rel_top = "" if rel_top == "." else rel_top.replace(os.sep, "/")
        ignore = Path(top) / ".gitignore"
        if ignore.is_file() and not ignore.is_symlink():
            try:
                lines = ignore.read_text(encoding="utf-8", errors="replace").splitlines()
                specs[rel_top] = pathspec.GitIgnoreSpec.from_lines(lines)
            except OSError:
                pass
        kept = []
        for d in dirs:
            rel = f"{rel_top}/{d}" if rel_top else d
            if d == ".git" or ignored_by(specs, rel + "/"):
                continue
            if (Path(top) / d).is_symlink():
                found.append(rel)  # reported as a symlink, not entered
                continue
            kept.append(d)
        dirs[:] = kept
        for n in names:
            rel = f"{rel_top}/{n}" if rel_top else n
            if not ignored_by(specs, rel):
                found.append(rel)
    return found, specs


def _shown(rel: str) -> str:
    """``rel`` as one printable line: bytes that are not UTF-8 as ``\\xff`` (not Python's
    ``\\udcff``, h603 #9), control characters escaped, quoted."""
    text = rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return "'" + "".join(c if c.isprintable() else repr(c)[1:-1] for c in text) + "'"
