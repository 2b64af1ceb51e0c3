"""The box's whole copy of a tree (issue 39, U42): every file under the workdir that this
machine's rules would send, not only the files the local tree lists, and the sync record.

Design: the box only lists names and hashes; the rules are applied here
(``rules.SendRules``), by the same engine that chose the local listing — the box has no
``.git`` and its ``.gitignore`` copies may be stale, so asking it to apply them would be
a second, diverging rule engine. The listing goes in two steps so an ignored data folder
of a million files is never listed: every directory first (``code-scan``), then the
files of only those directories the rules could send from (``code-files``), then the
hashes of the local paths, of the box-only files that look like code, and of what the
record names (``code-hash``, queue_ctl.sh's).

The sync record, ``<workdir>/.rgt-sync.record``: one ``<sha256><TAB><x|-><TAB><path>``
line per file a sync installed. A later sync removes such a file when the tree no longer
has it and only while its content still hashes to what the record says (``code-prune``,
under the queue lock, only while no queue runs): a file the user put there, or edited
after a sync, is never removed.
"""

from __future__ import annotations

import asyncio
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from rgt_tui.domain.code_identity import FileHash, tree_hash
from rgt_tui.domain.text import is_digits, printable
from rgt_tui.services.box_script import after_queue_ctl, run_box_script
from rgt_tui.services.code_sync.box import HASH_TIMEOUT_S, BoxHashes, checked, hash_on_box
from rgt_tui.services.code_sync.listing import LocalTree
from rgt_tui.services.code_sync.rules import held_under, is_secret, name_ok
from rgt_tui.services.code_sync.types import SyncError
from rgt_tui.transport import CommandResult, Transport

RECORD_NAME = ".rgt-sync.record"
# Names of directories and files the box may send back: past this the check fails (a
# workdir holding that much that the rules do not ignore is not a code tree).
MAX_LISTING = 64 << 20
_HEX64 = re.compile(r"[0-9a-f]{64}")
_KEPT = {
    "changed": "changed on the box since a sync put it there",
    "link": "a symlink on the way",
    "gone": "already gone",
}


async def run_tree_verb(
    transport: Transport,
    verb: str,
    *args: str,
    items: Iterable[str] = (),
    timeout: float = HASH_TIMEOUT_S,
    max_output: int = MAX_LISTING,
) -> CommandResult:
    """Run ``code-<verb>`` of code_ctl.sh with ``items`` NUL-terminated on stdin."""
    payload = "".join(i + "\0" for i in items)
    return await run_box_script(
        transport,
        after_queue_ctl("code_ctl.sh"),
        "code_ctl",
        f"code-{verb}",
        *args,
        input=payload,
        timeout=timeout,
        max_output=max_output,
    )


def rel_ok(rel: str) -> bool:
    """A relative path that stays under its dir and can cross (the record is box text)."""
    parts = rel.split("/")
    return name_ok(rel) and all(p not in ("", ".", "..") for p in parts) and ".git" not in parts


def parse_record(lines: Iterable[str]) -> dict[str, FileHash]:
    """The record's lines as path -> hash; anything malformed is dropped (box text)."""
    record: dict[str, FileHash] = {}
    for line in lines:
        sha, _, rest = line.partition("\t")
        flag, _, path = rest.partition("\t")
        if _HEX64.fullmatch(sha) and flag in ("x", "-") and rel_ok(path):
            record[path] = FileHash(path, sha, flag == "x")
    return record


def record_text(files: Iterable[FileHash]) -> list[str]:
    """The record's lines for ``files``, sorted by path."""
    return [
        f"{f.sha256}\t{'x' if f.executable else '-'}\t{f.path}"
        for f in sorted(files, key=lambda f: f.path)
    ]


@dataclass(frozen=True)
class BoxTree:
    """The box's copy of a tree: the local paths and every box-only file the rules would
    send (``box_only``, sorted), hashed; and what earlier syncs installed (``record``)."""

    hashes: BoxHashes  # local paths, box-only files, recorded paths
    local: frozenset[str]
    box_only: tuple[str, ...]
    record: dict[str, FileHash]
    free: int | None = None  # bytes free where the sync stages (None: the box did not say)
    # Box-only files the rules would send whose names are no plain text (control
    # characters, not UTF-8), made printable: sync can neither hash nor remove them, and
    # "in sync" must not pass over them (h503 #3).
    unnamed: tuple[str, ...] = ()
    # Every entry under each folder that stands where the tree has a file, of any kind
    # and name (a __pycache__, an ignored file, a link, a nested .git; a folder's with
    # a "/" after it): what a prune would have to leave empty.
    inside: dict[str, frozenset[str]] = field(default_factory=dict)
    # Which sync record was read ("inode.size.mtime", "none"): a launch checks it again
    # under the queue lock, so a sync between its code check and its start is caught.
    record_stamp: str = ""

    @property
    def dir_exists(self) -> bool:
        return self.hashes.dir_exists

    @property
    def running(self) -> str:
        """Why the queue counts as running ("" when not, or not asked)."""
        return self.hashes.running

    @property
    def tree(self) -> str:
        """The box's tree hash over every file the rules would send."""
        wanted = self.local | set(self.box_only)
        return tree_hash(f for p, f in self.hashes.files.items() if p in wanted)

    def removable(self, path: str) -> bool:
        """A sync put ``path`` there and its content is still what it put there."""
        rec, got = self.record.get(path), self.hashes.files.get(path)
        return rec is not None and got is not None and got.sha256 == rec.sha256

    def edited(self, paths: Iterable[str]) -> list[str]:
        """Those of ``paths`` that a sync installed and that were changed on the box since:
        the box holds other content (or executable bit) than the record says it put there.
        A file gone from the box is not one."""
        found: list[str] = []
        for path in paths:
            rec, got = self.record.get(path), self.hashes.files.get(path)
            if rec is not None and got is not None and got != rec:
                found.append(path)
        return found

    def in_the_way(self) -> list[tuple[str, str]]:
        """What stands on the box where the tree puts a file, sorted (kind, path): a
        symlinked parent, a file where the tree has a folder, a folder where it has a file
        (``BoxHashes.blocked``). Not what a sync removes first by the prune's rule (files
        it put there, unchanged: ``sync_code``'s early prune), as --check would say the
        sync must be helped when it helps itself (s36 acts hour #6)."""
        found: set[tuple[str, str]] = set()
        for rel, (kind, path) in self.hashes.blocked.items():
            if rel not in self.local:
                continue  # a path only the record names: the switch never puts it (h584 #1)
            if kind == "file" and self.removable(path):
                continue
            if kind == "dir" and self.cleared_by(path, self._prunable()):
                continue
            found.add((kind, path))
        return sorted(found, key=lambda k: k[1])

    def cleared_by(self, folder: str, removed: set[str]) -> bool:
        """Whether removing ``removed`` leaves nothing of ``folder`` (the prune's rmdir
        then takes it): every entry in it (``inside``) one of them, or a folder holding
        some. A __pycache__, an ignored file, a link or a nested .git stays, and so does
        the folder: said cleared, the sync removed the old code and then refused at the
        switch, leaving neither version to run (h584 #2, h585 #1, h586 #1)."""
        entries = self.inside.get(folder, frozenset())
        files = {e for e in entries if not e.endswith("/")}
        if not files or not files <= removed:
            return False
        theirs = {d for p in files for d in _parents_of(p)}
        return all(e[:-1] in theirs for e in entries if e.endswith("/"))

    def _prunable(self) -> set[str]:
        """What a sync's prune may remove: what a sync put there, unchanged, and no
        secret (an excluded one too, which the sync then keeps: it refuses before
        pruning, as ``sync_code`` asks ``cleared_by`` of its own removal list)."""
        return {p for p in self.record if self.removable(p) and not is_secret(p)}

    def stale(self) -> tuple[list[FileHash], list[str]]:
        """What earlier syncs installed that the tree no longer has: (still as installed:
        to remove, changed on the box since: to leave and name)."""
        remove: list[FileHash] = []
        changed: list[str] = []
        for path in sorted(self.record.keys() - self.local):
            if self.removable(path):
                remove.append(self.record[path])
            elif path in self.hashes.files:
                changed.append(path)
        return remove, changed


_IN_THE_WAY = {
    "link": "is a symlink on the box (a sync never writes through one)",
    "file": "is a file where the tree has a directory",
    "dir": "is a directory where the tree has a file",
}


def in_the_way_text(workdir: str, found: list[tuple[str, str]]) -> str:
    """``/w/pkg is a symlink on the box …; …`` for ``BoxTree.in_the_way``: the switch's
    own words (queue_ctl.sh's code_switch), the first five named."""
    said = [f"{posixpath.join(workdir, path)} {_IN_THE_WAY[kind]}" for kind, path in found[:5]]
    more = f"; and {len(found) - 5} more" if len(found) > 5 else ""
    return "; ".join(said) + more


def _parents_of(path: str) -> list[str]:
    """``a/b/c.py`` → ``["a", "a/b"]``."""
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def _items(result: CommandResult) -> list[str]:
    return [i for i in result.stdout.split("\0") if i]


def outputs_under(workdir: str, folders: Iterable[str | None]) -> tuple[str, ...]:
    """Those of ``folders`` (the host's durable_dir and data_dir) that lie under
    ``workdir`` as written, relative to it: outputs and data, never code."""
    work = posixpath.normpath(workdir).rstrip("/")
    found = []
    for folder in folders:
        if folder and posixpath.normpath(folder).startswith(work + "/"):
            found.append(posixpath.normpath(folder)[len(work) + 1 :])
    return tuple(found)


async def scan_box(
    transport: Transport,
    host: str,
    tree: LocalTree,
    directory: str,
    *,
    session: str = "",
    outputs: tuple[str, ...] = (),
) -> BoxTree:
    """The box's copy of ``tree`` under ``directory`` (see the module docstring); with
    ``session``, whether that queue runs. Reads only. ``outputs``: folders under it that
    hold the runs' outputs or data (``outputs_under``): what is there is never code, so
    never named a box-only file to remove (a user's hour was told to remove results)."""
    not_code = frozenset(outputs)  # never code, as the fleet's held-back files (rules)
    scan = checked(
        host,
        await run_tree_verb(transport, "scan", directory),
        f"cannot list the code in {directory}",
    )
    items = _items(scan)
    local = frozenset(f.path for f in tree.files)
    record = parse_record(i[2:] for i in items if i.startswith("r\t"))
    box_only: list[str] = []
    unnamed: tuple[str, ...] = ()
    if "dir\t1" in items and tree.rules is not None:
        dirs = [i[2:] + "/" for i in items if i.startswith("./")]
        dirs = [d for d in dirs if held_under(d, not_code) is None]
        # A folder whose name is no plain text: its files can be neither listed nor
        # compared, so the folder itself is named (h505 #1: `pkg\nevil/x.py` read "in
        # sync"); only the outermost such folder.
        odd_dirs = {d for d in dirs if not name_ok(d)}
        outer = {d for d in odd_dirs if not any(d != o and d.startswith(o) for o in odd_dirs)}
        kept = await asyncio.to_thread(
            tree.rules.sent, [d for d in dirs if d not in odd_dirs], host
        )
        listed = checked(
            host,
            await run_tree_verb(
                transport, "files", directory, items=["."] + sorted(d[:-1] for d in kept)
            ),
            f"cannot list the code in {directory}",
        )
        names = {i[2:] for i in _items(listed) if i.startswith("./")} - local
        names = {n for n in names if held_under(n, not_code) is None}
        odd = {n for n in names if not name_ok(n)}
        box_only = sorted(await asyncio.to_thread(tree.rules.sent, names - odd, host))
        unnamed = await asyncio.to_thread(_unnamed_sent, tree, odd | outer, host)
    extra = sorted(record.keys() - local - set(box_only))
    hashes = await hash_on_box(
        transport, host, directory, sorted(local) + box_only + extra, session=session
    )
    free = next((i[5:] for i in items if i.startswith("free\t")), "")
    # The box's figure: ASCII digits only, bounded (a hostile box gains nothing by it).
    space = int(free) if is_digits(free) else None
    inside = await _entries_inside(transport, host, directory, hashes, local)
    stamp = next((i[2:] for i in items if i.startswith("s\t")), "")
    stamp = stamp if re.fullmatch(r"none|\d+\.\d+\.\d+", stamp) else ""  # the box's text
    return BoxTree(hashes, local, tuple(box_only), record, space, unnamed, inside, stamp)


async def _entries_inside(
    transport: Transport, host: str, directory: str, hashes: BoxHashes, local: frozenset[str]
) -> dict[str, frozenset[str]]:
    """Every entry under each folder the box holds where the tree has a file: one
    listing, asked only when there is such a folder."""
    standing = sorted(
        p for p, (kind, _at) in hashes.blocked.items() if kind == "dir" and p in local
    )
    if not standing:
        return {}
    listed = checked(
        host,
        await run_tree_verb(transport, "entries", directory, items=standing),
        f"cannot list the code in {directory}",
    )
    found = [i[2:] for i in _items(listed) if i.startswith("./")]
    return {d: frozenset(f for f in found if f.startswith(d + "/")) for d in standing}


def _unnamed_sent(tree: LocalTree, odd: set[str], host: str) -> tuple[str, ...]:
    """Those of ``odd`` (names the box listed that are no plain text) the rules would
    send, were they plain: each asked as a stand-in with its odd characters made ``_``;
    made printable, sorted."""
    if not odd or tree.rules is None:
        return ()
    stand = {_plain(n): n for n in odd}
    sent = tree.rules.sent(stand, host)
    return tuple(sorted(printable(stand[s], 200) for s in sent))


def _plain(name: str) -> str:
    """``name`` with each character no name may hold (``rules.name_ok``) made ``_``."""
    return "".join(c if name_ok(c) else "_" for c in name)


async def prune_on_box(
    transport: Transport,
    host: str,
    workdir: str,
    session: str,
    remove: list[FileHash],
    record: Iterable[FileHash],
) -> tuple[list[str], list[str]]:
    """Remove ``remove`` (each only while its content is still what the record says) and
    write ``record`` as the box's sync record, under the queue lock and only while no
    queue runs (SyncError otherwise, nothing removed). (removed, kept with why)."""
    items = [f"rm\t{f.sha256}\t{f.path}" for f in remove]
    items += [f"rec\t{line}" for line in record_text(record)]
    result = checked(
        host,
        await run_tree_verb(transport, "prune", workdir, session, items=items),
        f"cannot remove stale code files in {workdir}",
    )
    asked = {f.path for f in remove}
    removed: list[str] = []
    kept: list[str] = []
    recorded = False
    for line in result.stdout.splitlines():
        key, _, rest = line.partition("\t")
        why, _, path = rest.partition("\t")
        if key == "removed" and rest in asked:  # only what was asked about is named
            removed.append(rest)
        elif key == "kept" and path in asked and why in _KEPT:
            kept.append(f"{path} ({_KEPT[why]})")
        elif key == "recorded":
            recorded = True
    if not recorded:
        raise SyncError(host, f"the box did not confirm its sync record in {workdir}")
    return removed, kept
