#!/usr/bin/env python3
"""rgt-tui pull manifest: lists every regular file under the pull roots with its SHA-256.

Sent to a box over an SSH exec channel and run as ``python3 -u - --root PATH ...`` (this
source on stdin). It prints one JSON object per line; its only consumer is
``rgt_tui.domain.manifest_parse.parse_manifest_lines``::

    {"type": "start", "v": 1, "taken_at": <box unix s>, "python": "3.6.9",
     "box_id": "<32 hex>", "box_id_error": null}           # box_id*: with --box-id only
    {"type": "root", "index": 0, "given": "~/runs", "path": "/root/runs", "error": null}
    {"type": "link", "root": 0, "path": "latest.pt", "target": "a/b.pt"}
    {"type": "refused", "root": 0, "path": "data", "reason": "symlink leaves the pull root (-> /x)"}
    {"type": "entry", "n": 0, "root": 0, "path": "a/b.pt", "size": 123, "mtime": 1.5e9,
     "mode": 420}                       # with --list-first only, as the walk finds it
    {"type": "listed", "files": 12, "bytes": 4567}
    {"type": "file", "n": 0, "root": 0, "path": "a/b.pt", "size": 123, "mtime": 1.5e9,
     "sha256": "...", "mode": 420}     # "growing": true when still being written (below)
    {"type": "tick"}                    # while it works, when nothing else was printed for TICK_S
    {"type": "done", "taken_at": ..., "finished_at": ..., "files": 12, "bytes": 4567}

``path`` is relative to the root, '/'-separated. ``taken_at`` is read before the walk
starts, so any write the walk could have missed carries a later mtime (the teardown gate
relies on that). ``--no-hash`` gives ``"sha256": null`` (a quick re-scan by size and
mtime). ``--box-id`` reports the id in ``~/.rgt/box-id`` (created once when missing).

Every root is walked first (``root``, ``link``, ``refused`` lines, and with
``--list-first`` an ``entry`` line per regular file, so a pull starts copying while the box
still hashes: an ``entry`` promises nothing), then ``listed`` counts the files, then they
are hashed and printed (``mode``: permission bits, never widened by the pull). ``n`` is a
file's place in the walk (folders in name order), the manifest's order. Sent as one
source: ``rgt_tui.agent.bundle`` joins ``box_id``, ``secret_paths`` and this module.

Rules this file lives by:

- It runs on the box's own python3, as old as 3.6: standard library only, no 3.7+ syntax.
- Names are walked as bytes and decoded as UTF-8 here (right under a C locale on 3.6); a
  name that is not UTF-8 is refused by name instead of crashing the scan.
- Symlinks are never followed out of a root: one that resolves outside it (or nowhere) is
  refused with its target; one that stays inside is reported as a link, not as data. A
  folder swapped for a link while the scan runs is refused, never walked (``no_follow``).
- Secrets are never read: a name that is, or a folder below, one of ``SECRET_PATHS``
  (``.ssh``, ``.netrc``, ``.aws``, ...; matched on the whole resolved path, component by
  component, ASCII case-folded, wherever they appear: ``pull = ["/home"]`` holds other
  homes) is reported as ``refused`` with the reason ``skipped by rule: secret (<which>)``
  before it is even stat'ed, and a folder so named is not entered; so are a link to one
  and a root that is (or lies inside) one. The client refuses them again (it does not
  trust this scan). rgt-tui's own state (the queue's empty lock, and this box's whole
  ``~/.rgt`` wherever a root holds it: ``secret_paths``) is skipped the same way.
- Files are hashed in 1 MiB blocks, so a multi-gigabyte checkpoint needs no memory; files
  of 1 MiB and more by up to four threads at once, smaller ones in turn on the main thread.
- A file is hashed up to its size when opened: one that grew meanwhile (a log being written)
  is listed at that size with ``"growing": true`` (the pull copies those bytes only); one
  that shrank or changed in place is hashed once more, then refused.
"""

import argparse
import itertools
import json
import os
import stat
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed

from .box_id import read_box_id
from .no_follow import BLOCK, SWAPPED, LastFolder, Swapped, file_digest, open_folder
from .secret_paths import (
    OWN_RECORDS_REASON,
    OWN_STATE_PATHS,
    OWN_STATE_RULE,
    SECRET_PATHS,
    SECRET_RULE,
    names_match,
    own_records,
)

PROTOCOL_VERSION = 1
HASH_THREADS = min(4, os.cpu_count() or 1)
# Never pulled (see the module's doc): the one list, shared with the client.
SECRETS = [tuple(p.encode("ascii").split(b"/")) for p in SECRET_PATHS]
OWN_STATE = [tuple(p.encode("ascii").split(b"/")) for p in OWN_STATE_PATHS]
# A working scan prints at least this often (a tick line when nothing else): well under
# any stall bound a user sets (1 s is the smallest in use), so a busy box or client is
# never taken for a stalled one; a tick is a few bytes.
TICK_S = 0.2
EMIT_LOCK = threading.Lock()  # the hashing threads tick too
LAST_EMIT = [time.monotonic()]


def emit(obj):
    """Print one JSON line (ASCII-only, so the box's locale cannot garble it); whole,
    whichever thread prints it."""
    text = json.dumps(obj, sort_keys=True) + "\n"
    with EMIT_LOCK:
        sys.stdout.write(text)
        LAST_EMIT[0] = time.monotonic()


def tick():
    """The scan moved on (a name listed, a block hashed): print a tick line when nothing
    was printed for TICK_S. The client stops a scan that prints nothing for its stall
    timeout; a scan stuck on a hung mount makes no progress, so it ticks no more."""
    if time.monotonic() - LAST_EMIT[0] >= TICK_S:
        emit({"type": "tick"})


def show(raw):
    """A byte name as text; a byte that is not UTF-8 as ``\\xff`` ("�" hid which: a hostile hour)."""
    return raw.decode("utf-8", "backslashreplace")


def components(path):
    """The non-empty components of a byte path."""
    return [p for p in path.split(b"/") if p]


def secret_at_end(parts, rules=SECRETS):
    """The secret (as in SECRET_PATHS; or of ``rules``) that byte components ``parts`` end with."""
    for secret in rules:
        n = len(secret)
        if len(parts) >= n and names_match(secret, [p.lower() for p in parts[-n:]]):
            return b"/".join(secret).decode("ascii")
    return None


def secret_in(path):
    """The first secret that the byte path ``path`` is, or lies below; None if none."""
    parts = components(path)
    for end in range(1, len(parts) + 1):
        found = secret_at_end(parts[:end])
        if found:
            return found
    return None


def secret_reason(which):
    return f"{SECRET_RULE} ({which})"


def same_version(a, b):
    """True when two stats describe the same content version (size and mtime)."""
    return a.st_size == b.st_size and a.st_mtime_ns == b.st_mtime_ns


class Scanner:
    """Walks one root and prints its lines."""

    def __init__(self, index, real_root, hash_files, counter, list_first=False, own=frozenset()):
        self.index = index
        self.own = own  # where the walk may meet this box's ~/.rgt (own_records)
        self.list_first = list_first  # an entry line per file as the walk finds it
        self.root = real_root  # bytes, realpath of the root
        self.root_parts = components(real_root)
        self.hash_files = hash_files
        self.counter = counter  # one-item list: files found so far, across roots
        self.files = 0
        self.bytes = 0
        self.pending = []  # (n, rel, lstat, name, its folder's rel): hashed in finish()

    def refuse(self, rel, reason):
        """Report ``rel`` as not listed, with why."""
        emit({"type": "refused", "root": self.index, "path": show(rel), "reason": reason})

    def inside(self, real):
        """Whether a resolved path lies in this root."""
        return real == self.root or real.startswith(self.root.rstrip(b"/") + b"/")

    def walk(self):
        """List the root, folders in name order; regular files are hashed in finish()."""
        stack = [b""]
        while stack:
            rel_dir = stack.pop()
            full_dir = os.path.join(self.root, rel_dir) if rel_dir else self.root
            try:
                dir_fd = open_folder(self.root, rel_dir)
            except Swapped:
                self.refuse(rel_dir or b".", SWAPPED)
                continue
            except OSError as exc:
                self.refuse(rel_dir or b".", "cannot list folder: %s" % (exc.strerror or exc))
                continue
            try:
                self.list_folder(rel_dir, full_dir, dir_fd, stack)
            finally:
                os.close(dir_fd)

    def list_folder(self, rel_dir, full_dir, dir_fd, stack):
        """List one folder (``dir_fd``); its sub-folders go on ``stack``."""
        try:
            # An fd lists str names (surrogate-escaped): back to the bytes they were.
            names = sorted(os.fsencode(n) for n in os.listdir(dir_fd))
        except OSError as exc:
            self.refuse(rel_dir or b".", "cannot list folder: %s" % (exc.strerror or exc))
            return
        subdirs = []
        for name in names:
            tick()
            rel = rel_dir + b"/" + name if rel_dir else name
            full = os.path.join(full_dir, name)
            # First of all, before any stat: a secret is never looked into.
            whole = self.root_parts + components(rel)
            secret = secret_at_end(whole)
            own = secret_at_end(whole, OWN_STATE)  # rgt-tui's own state: no result either
            why = secret_reason(secret) if secret else own and f"{OWN_STATE_RULE} ({own})"
            if why or full in self.own:  # self.own: this box's whole ~/.rgt
                self.refuse(rel, why or OWN_RECORDS_REASON)
                continue
            try:
                rel.decode("utf-8")
            except UnicodeDecodeError:
                self.refuse(rel, "file name is not valid UTF-8")
                continue
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except OSError as exc:
                self.refuse(rel, "cannot stat: %s" % (exc.strerror or exc))
                continue
            if stat.S_ISLNK(st.st_mode):
                self.link(rel, full)
            elif stat.S_ISDIR(st.st_mode):
                subdirs.append(rel)
            elif stat.S_ISREG(st.st_mode):
                self.regular(rel, st, name, rel_dir)
            else:
                self.refuse(rel, f"not a regular file ({kind_of(st.st_mode)})")
        # Reversed so the stack pops folders in name order: a stable listing.
        stack.extend(reversed(subdirs))

    def link(self, rel, full):
        """A symlink: listed as a link when it stays inside the root, else refused."""
        try:
            target = os.readlink(full)
        except OSError as exc:
            self.refuse(rel, "cannot read symlink: %s" % (exc.strerror or exc))
            return
        real = os.path.realpath(full)
        if not self.inside(real):
            self.refuse(rel, f"symlink leaves the pull root (-> {show(target)}); not followed")
        elif not os.path.exists(real):
            self.refuse(rel, f"broken symlink (-> {show(target)})")
        elif secret_in(real):
            self.refuse(rel, secret_reason(secret_in(real)) + " (link to it)")
        else:
            inner = os.path.relpath(real, self.root)
            emit({"type": "link", "root": self.index, "path": show(rel), "target": show(inner)})

    def regular(self, rel, st, name, folder):
        """Queue a regular file for hashing, numbered in walk order."""
        if self.list_first:
            entry = {"type": "entry", "n": self.counter[0], "root": self.index}
            entry.update(path=show(rel), size=st.st_size, mtime=st.st_mtime)
            emit(dict(entry, mode=stat.S_IMODE(st.st_mode)))
        self.pending.append((self.counter[0], rel, st, name, folder))
        self.counter[0] += 1

    def finish(self, pool):
        """Hash the files found (the large ones in parallel on ``pool``) and print them."""
        now, self.pending = self.pending, []
        # Large files are hashed on the pool's threads; small ones right here, in turn:
        # their time goes to system calls, and handing each to a thread and back cost
        # more than it saved. With the buffer sized to the file (file_digest), scanning
        # 3000 files of 4-40 KB went from 0.40 s to 0.22 s.
        pooled, inline = [], []
        for item in now:
            if pool is not None and item[2].st_size >= BLOCK:
                pooled.append(pool.submit(self.describe_alone, item))
            else:
                inline.append(item)
        # The pooled ones are printed as each is done, not in walk order (``n`` keeps
        # that): a pull can start on one large file while the box still hashes the next.
        folders = LastFolder(self.root)  # the small ones' folders, each opened once
        done = (self.describe(item, folders) for item in inline)
        work = itertools.chain(done, (f.result() for f in as_completed(pooled)))
        for n, rel, st, size, digest, problem in work:
            if problem:
                self.refuse(rel, problem)
                continue
            self.files += 1
            self.bytes += size
            line = dict(type="file", n=n, root=self.index, path=show(rel), size=size)
            line.update(mtime=st.st_mtime, sha256=digest, mode=stat.S_IMODE(st.st_mode))
            if digest is not None and size != st.st_size:
                line["growing"] = True  # hashed up to ``size``; the file is longer now
            emit(line)
        folders.close()

    def describe_alone(self, item):
        """``describe`` on a pool thread, with a folder fd of its own."""
        with LastFolder(self.root) as folders:
            return self.describe(item, folders)

    def describe(self, item, folders):
        """(n, rel, stat, size hashed, sha256 or None, problem or None) for a regular file."""
        n, rel, st, name, folder = item
        if not self.hash_files:
            return n, rel, st, st.st_size, None, None
        for _attempt in range(2):
            try:
                digest, before, after, read = file_digest(name, folders, folder, tick)
            except Swapped:
                return n, rel, st, 0, None, "its folder was " + SWAPPED
            except OSError as exc:
                return n, rel, st, 0, None, "cannot read: %s" % (exc.strerror or exc)
            if read != before.st_size:
                continue  # it shrank while read: no one size of it was hashed
            # Or grown: its first bytes as read (rewritten, not appended: the copy's hash fails)
            if same_version(before, after) or after.st_size > before.st_size:
                return n, rel, after, read, digest, None
        return n, rel, st, 0, None, "changed while being hashed (still being written?)"


def kind_of(mode):
    """A word for a non-regular file type."""
    for test, word in (
        (stat.S_ISFIFO, "fifo"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
    ):
        if test(mode):
            return word
    return "unknown type"


# -- the scan ---------------------------------------------------------------------------


def main(argv=None):
    """Scan every --root and print the manifest lines."""
    parser = argparse.ArgumentParser(description="rgt-tui pull manifest")
    parser.add_argument("--root", action="append", default=[], help="pull root (repeatable)")
    parser.add_argument("--no-hash", action="store_true", help="sizes and mtimes only")
    parser.add_argument(
        "--box-id",
        action="store_true",
        help="report this box's id (~/.rgt/box-id, created once when missing) on the start line",
    )
    parser.add_argument(
        "--list-first",
        action="store_true",
        help="print an entry line per file as the walk finds it, before any hashing",
    )
    args = parser.parse_args(argv)
    start = {"type": "start", "v": PROTOCOL_VERSION}
    if args.box_id:
        start["box_id"], start["box_id_error"] = read_box_id()
    taken_at = time.time()
    start["taken_at"] = taken_at
    start["python"] = ".".join(str(n) for n in sys.version_info[:3])
    emit(start)
    # hashlib releases the GIL on large updates, so threads hash several files at once:
    # a box's disks and cores usually outpace one SHA-256 stream.
    pool = ThreadPoolExecutor(HASH_THREADS) if not args.no_hash and HASH_THREADS > 1 else None
    scanners = []
    counter = [0]
    own = own_records()
    for index, given in enumerate(args.root):
        path = os.path.expanduser(given)
        real = os.path.realpath(os.fsencode(path))
        error = None
        secret = secret_in(os.fsencode(path)) or secret_in(real)
        if secret:
            error = secret_reason(secret)
        elif not os.path.isdir(real):
            error = "no such folder" if not os.path.exists(real) else "not a folder"
        emit({"type": "root", "index": index, "given": given, "path": show(real), "error": error})
        if error:
            continue
        list_first = args.list_first and not args.no_hash
        scanner = Scanner(index, real, not args.no_hash, counter, list_first, own)
        scanner.walk()
        scanners.append(scanner)
    found = [item for scanner in scanners for item in scanner.pending]
    total = sum(i[2].st_size for i in found)
    emit({"type": "listed", "files": len(found), "bytes": total})
    sys.stdout.flush()
    for scanner in scanners:
        scanner.finish(pool)
    if pool is not None:
        pool.shutdown()
    emit(
        {
            "type": "done",
            "taken_at": taken_at,
            "finished_at": time.time(),
            "files": sum(s.files for s in scanners),
            "bytes": sum(s.bytes for s in scanners),
        }
    )
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        # The client went away (a dropped connection): nothing left to tell anyone.
        sys.exit(0)
