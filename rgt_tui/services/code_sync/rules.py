"""Which paths a sync would send, asked of any path, not only of files this machine has.

The box's copy of a tree is judged by the rules that chose the local listing
(``listing``): a file the box holds counts as code when this machine's rules would send
it if it were here. One rule engine on one side: in a git repository git itself answers
(``git check-ignore``: ``.gitignore`` files, ``.git/info/exclude``, ``core.excludesFile``;
a tracked path is never ignored), elsewhere the tree's own ``.gitignore`` files
(``pathspec``, git's precedence); the host's ``code_exclude`` on top; ``.git``, ``__pycache__``, the
sync's own ``.rgt-sync.*``, secrets (``is_secret``) and names that cannot cross (control characters, not UTF-8)
never; nor the fleet file in use and the queue files it names (``held_back``: they name
every box, its address, key path and teardown command), nor copies of them by name
(``is_copy_name``) or by content (``reads_as_fleet_file``; a queue file ``add`` made:
``reads_as_queue_file``), nor the
fleet's ``results_dir``
and everything under it (what pulls bring back from the boxes). The box cannot apply
these rules itself (it has no ``.git``, and its
``.gitignore`` files are copies that may be stale); it only lists names. Blocking: run in
a thread.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pathspec

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on Python 3.10
    import tomli as tomllib

from rgt_tui.domain.manifest_names import secret_reason
from rgt_tui.services.code_sync.types import SyncError

if TYPE_CHECKING:
    from rgt_tui.domain.config import Fleet

STAGING_PREFIX = ".rgt-sync."  # the box's staging dirs and sync record: never part of a tree
_GIT_TIMEOUT_S = 60.0


def name_ok(rel: str) -> bool:
    """Sent to the box one per line and NUL-separated: no control characters, and text
    (a name that is not UTF-8 cannot be spelled the same on both sides; one the box sent
    that was not UTF-8 arrives with U+FFFD in it)."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in rel) or "\ufffd" in rel:
        return False
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# Secrets a code tree tends to hold beside those a pull never brings back (SECRET_PATHS:
# .ssh, .netrc, .git-credentials, token files, shell histories, …): dotenv files (their
# examples are code) and SSH private keys. A box is someone else's machine: a token reaches it only through
# [fleet.credentials] (U34: over stdin, into a 0600 file), never as a file of the tree.
_DOTENV_EXAMPLES = (".example", ".sample", ".template", ".dist")
_PRIVATE_KEYS = frozenset(
    {"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk"}
)
# Key and certificate stores by their ending (a private key as "server.key", an AWS key
# pair's "mykey.pem", a PKCS#12 bundle), and the names cloud keys are saved under
# (a Google service account's JSON key, an OAuth client's secret): h603 #2 found them
# all sent. A public certificate named .pem stays here too: the not-sent line names it.
_KEY_ENDINGS = (".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".gpg", ".asc", ".ppk")
_BACKUP = re.compile(r"(?:\.(?:bak|orig|old|backup|save|swp)|~)+$")
_BROWSER_COPY = re.compile(r" \(\d+\)(?=\.[^.]+$)")
_KEY_NAMES = re.compile(
    r"(?:application_default_)?credentials\.json|(?:client_secret|service[-_]account)[^/]*\.json"
    r"|\.vault-token"
)
# A home's own stores, at any depth of the tree: GnuPG's keyring, kubectl's config.
_KEY_FOLDERS = frozenset({".gnupg", ".kube"})


def is_secret(rel: str) -> bool:
    """Whether a sync never sends ``rel``, a secret, whatever the ignore rules say (a
    user's hour found .netrc and .ssh/id_rsa copied to a box, readable there by all)."""
    if secret_reason("", rel.rstrip("/")) is not None:
        return True
    parts = rel.rstrip("/").lower().split("/")
    name = parts[-1]
    if ".env" in parts[:-1]:  # a folder of dotenv files (.env/production)
        return True
    if name == ".env" or (name.startswith(".env.") and not name.endswith(_DOTENV_EXAMPLES)):
        return True
    if _KEY_FOLDERS & set(parts[:-1]) or name in _KEY_FOLDERS:
        return True
    # A copy is the same secret: "server.key.orig", "credentials (1).json", "id_ed25519~"
    # (h606 #7).
    name = _BROWSER_COPY.sub("", _BACKUP.sub("", name))
    if name.endswith(_KEY_ENDINGS) or _KEY_NAMES.fullmatch(name) or name == "_netrc":
        return True
    # id_rsa, and its copies (id_rsa.bak, id_ed25519.old): not the public half.
    return any(name == k or name.startswith(k + ".") for k in _PRIVATE_KEYS) and not (
        name.endswith(".pub")
    )


# Folders no one writes by hand: Python's bytecode cache, made on the box by the first
# import of a run, read as "on the box only, not put there by rgt-tui sync" and refused
# every later launch until excluded by hand (h581 #4).
_MADE_BY_TOOLS = frozenset({".git", "__pycache__"})


def never_sent(rel: str, extra: pathspec.PathSpec) -> bool:
    """Whether ``rel`` is left out whatever the ignore files say: ``.git`` and
    ``__pycache__`` folders, the sync's own staging and record, secrets
    (``is_secret``), ``code_exclude``."""
    parts = rel.rstrip("/").split("/")
    if _MADE_BY_TOOLS & set(parts) or parts[0].startswith(STAGING_PREFIX) or is_secret(rel):
        return True
    return extra.match_file(rel)


def fleet_files(fleet: Fleet) -> tuple[Path, ...]:
    """The fleet file in use, every queue file it names (a group's members' too) and the
    fleet's ``results_dir``: a sync never sends them, nor anything under them, wherever
    they lie (``held_back``). ``results_dir`` defaults to ``./results`` beside the fleet
    file, so a fleet file inside the code tree puts the pulled results there too."""
    hosts = [*fleet.hosts, *(m for h in fleet.hosts if h.group for m in h.group.members)]
    found = [fleet.path] + [h.queue for h in hosts] + [fleet.results_dir]
    return tuple(dict.fromkeys(p for p in found if p is not None))


def held_back(root: Path, files: Iterable[Path]) -> frozenset[str]:
    """Those of ``files`` (files or folders) that lie under ``root``, as "/"-separated
    paths relative to it (symlinks resolved on both sides): what a sync of ``root`` must
    not send, nor anything under them (``is_held``). ``root`` itself is never one."""
    try:
        top = root.expanduser().resolve()
    except (OSError, RuntimeError):
        return frozenset()
    found: set[str] = set()
    for f in files:
        try:
            rel = f.expanduser().resolve().relative_to(top).as_posix()
        except (OSError, RuntimeError, ValueError):
            continue  # not under root (or unresolvable): nothing to hold back
        if rel != ".":  # a results_dir that is the tree itself holds nothing back
            found.add(rel)
    return frozenset(found)


def held_under(rel: str, held: frozenset[str]) -> str | None:
    """The entry of ``held`` that ``rel`` is or lies under (a trailing "/" ignored), or
    None: a held folder (``results_dir``) holds back everything in it."""
    rel = rel.rstrip("/")
    if rel in held:
        return rel
    for above in _ancestors(rel):
        if above[:-1] in held:
            return above[:-1]
    return None


def copy_of(rel: str, files: frozenset[str]) -> bool:
    """Whether ``rel`` is, by its name, a copy of one of the held ``files`` beside it."""
    folder, _, name = rel.rstrip("/").rpartition("/")
    for held in files:
        where, _, held_name = held.rpartition("/")
        if where == folder and is_copy_name(name, held_name):
            return True
    return False


def is_copy_name(name: str, of: str) -> bool:
    """Whether ``name`` is a copy of the file ``of`` by its name: ``hosts.toml~``,
    ``hosts.toml.bak`` (any suffix), ``#hosts.toml#``, ``.#hosts.toml``, vim's
    ``.hosts.toml.swp``. The fleet file's backups went to the box with every sync, only
    its exact path held back (a new user's hour, s39 #1); they name every box too."""
    return (
        name == of + "~"
        or name.startswith((of + ".", "." + of + "."))
        or name in ("#" + of + "#", ".#" + of)
    )


_FLEET_TABLE = re.compile(rb"^(?:\xef\xbb\xbf)?[ \t]*\[\[[ \t]*hosts[ \t]*\]\]", re.MULTILINE)
_FLEET_READ = 1 << 20  # a fleet file is small: what a copy of one holds is in its start


def looks_like_fleet_file(head: bytes) -> bool:
    """Whether a file's first bytes hold a ``[[hosts]]`` table. Asked of every file the
    listing hashes: the line-anchored regex costs ~15 ms per MiB, 20 times the hash, so
    a plain substring test (memchr-fast) rules out nearly every file first."""
    return b"hosts" in head and _FLEET_TABLE.search(head) is not None


def reads_as_fleet_file(path: Path, rel: str) -> bool:
    """Whether the file at ``path`` is a fleet file (a ``[[hosts]]`` table in its first
    MiB whose entries have ``name`` and ``ssh``), whatever its name (``hosts.good.toml``,
    ``old/fleet.toml``, ``hosts.backup``: a copy named without ``.toml`` went to every box,
    h553 #4): a sync holds it back as it does the fleet file in use. The listing asks
    only of files whose first MiB has such a table (``looks_like_fleet_file``), which it
    reads anyway to hash them."""
    head = _head(path, _FLEET_READ)
    if head is None or not looks_like_fleet_file(head):
        return False
    try:
        hosts = tomllib.loads(head.decode("utf-8").removeprefix("\ufeff")).get("hosts")
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        # A TOML file mid-edit (or cut at 1 MiB), or nested past the parser's depth (500
        # brackets stopped every sync, launch and preflight: the s40 audit): held back, to
        # be safe. Any other file that is no TOML is the project's: a Python template or
        # a README with a [[hosts]] example was held back and removed from the box
        # (review h554 #1).
        return ".toml" in rel.rsplit("/", 1)[-1].lower()
    # A fleet file's entries name a box and how it is reached; a project's own [[hosts]]
    # (a cluster config of addresses and GPUs) has no ssh key and is sent (the review of
    # s39 #5).
    return isinstance(hosts, list) and any(
        isinstance(h, dict) and "name" in h and "ssh" in h for h in hosts
    )


# The first line `rgt-tui add` writes into a queue file it creates (QUEUE_TEMPLATE).
QUEUE_HEADER = b"# rgt-tui queue for "


def reads_as_queue_file(path: Path) -> bool:
    """Whether the file at ``path`` is a queue file ``rgt-tui add`` made (its header),
    whatever the fleet file names now: after an entry is renamed, its old queue file
    went to the box with the next sync and counted as code (h522 #3)."""
    head = _head(path, len(QUEUE_HEADER))
    return head == QUEUE_HEADER


def _head(path: Path, size: int) -> bytes | None:
    """The first ``size`` bytes of the regular file at ``path``; None when it is none or
    cannot be read (the listing says why when it hashes it). Non-blocking, and a regular
    file only: a FIFO named x.toml held the listing for good (the review of s39 #4)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return None
            return f.read(size)
    except OSError:
        return None


def git_top(folder: Path) -> Path | None:
    """The top of the git work tree ``folder`` lies in; None when it lies in none (or git
    cannot say)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "--show-toplevel"],
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    top = done.stdout.strip()
    return Path(top) if done.returncode == 0 and top else None


def git_would_list(root: Path, rels: Iterable[str]) -> list[str]:
    """Those of ``rels`` (relative to ``root``) that git does not ignore in ``root``'s
    work tree, so ``git status`` shows them; [] when ``root`` is not in one."""
    try:
        inside = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--is-inside-work-tree"],
            capture_output=True,
            timeout=_GIT_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    if inside.returncode != 0 or inside.stdout.strip() != b"true":
        return []
    rels = list(rels)
    try:
        ignored = SendRules(root, (), git=True)._git_ignored(rels, root.name)
    except SyncError:
        return rels  # git could not say: as git status would show them
    return [r for r in rels if r not in ignored]


def ignored_by(specs: Mapping[str, pathspec.GitIgnoreSpec], rel: str) -> bool:
    """Whether the ``.gitignore`` files above ``rel`` ignore it (deepest decides; a
    trailing "/" asks about a directory)."""
    verdict = False
    for base, spec in sorted(specs.items(), key=lambda kv: kv[0].count("/") + bool(kv[0])):
        if base and not rel.startswith(base + "/"):
            continue
        result = spec.check_file(rel[len(base) + 1 :] if base else rel)
        if result.include is not None:
            verdict = result.include
    return verdict


def _ancestors(rel: str) -> list[str]:
    """``a/b/c`` -> ``["a/", "a/b/"]``."""
    parts = rel.rstrip("/").split("/")
    return ["/".join(parts[:i]) + "/" for i in range(1, len(parts))]


@dataclass(frozen=True)
class SendRules:
    """The rules a sync of ``root`` sends by, for any relative path."""

    root: Path
    excludes: tuple[str, ...]
    git: bool  # git answers; else ``specs``
    specs: Mapping[str, pathspec.GitIgnoreSpec] = field(default_factory=dict)
    held: frozenset[str] = frozenset()  # ``held_back``: never sent (nor what is under them)
    copied: frozenset[str] = frozenset()  # held files whose copies are held too (``copy_of``)

    def sent(self, paths: Iterable[str], host: str) -> set[str]:
        """Which of ``paths`` (files, or directories ending in "/") the sync would send
        (a directory: whose files it could send), were they here."""
        extra = pathspec.GitIgnoreSpec.from_lines(self.excludes)
        asked = [
            p
            for p in paths
            if name_ok(p)
            and not never_sent(p, extra)
            and held_under(p, self.held) is None
            and not copy_of(p, self.copied)
        ]
        asked = [p for p in asked if not any(extra.match_file(a) for a in _ancestors(p))]
        if self.git:
            ignored = self._git_ignored(asked, host)
        else:
            ignored = {
                p
                for p in asked
                if ignored_by(self.specs, p)
                or any(ignored_by(self.specs, a) for a in _ancestors(p))
            }
        return set(asked) - ignored

    def _git_ignored(self, paths: list[str], host: str) -> set[str]:
        # A path inside a repository in the tree (a submodule, a clone) is none of this
        # tree's files, and git check-ignore refuses it whole ("fatal: Pathspec … is in
        # submodule": every sync and preflight failed, h606 #1): not sent, unasked.
        nested = {a for p in paths for a in _ancestors(p) if (self.root / a / ".git").exists()}
        inside = {p for p in paths if any(a in nested for a in _ancestors(p))}
        paths = [p for p in paths if p not in inside]
        if not paths:
            return inside
        try:
            done = subprocess.run(
                ["git", "-C", str(self.root), "check-ignore", "-z", "--stdin"],
                input=b"".join(p.encode() + b"\0" for p in paths),
                capture_output=True,
                timeout=_GIT_TIMEOUT_S,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SyncError(host, f"git cannot check {self.root}'s ignore rules: {exc}") from exc
        if done.returncode not in (0, 1):  # 1: none of them is ignored
            err = done.stderr.decode(errors="replace").strip()
            raise SyncError(host, f"git check-ignore failed in {self.root}: {err}")
        return inside | {os.fsdecode(n) for n in done.stdout.split(b"\0") if n}
