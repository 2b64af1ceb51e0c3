"""The identity of a code tree (U42): what ``sync`` pushed, what a launch checked, what
each cell ran, and what is shown beside its results.

A tree is named by the SHA-256 of its listing: one ``<sha256>  <x|->  <path>`` line per
file (``x`` when executable), sorted by path, paths relative and ``/``-separated. The
same listing is computed from the local tree and from the box's own hashes of the same
paths, so "the box runs the code I have" is one comparison, and the files that differ
can be named. The git commit (and whether the working tree had uncommitted changes) is
recorded beside it when the local tree is a git repository.

Pure: the records are parsed as hostile input (they come back from the box).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

_HEX64 = re.compile(r"[0-9a-f]{64}")
_COMMIT = re.compile(r"[0-9a-f]{7,64}")


@dataclass(frozen=True)
class FileHash:
    """One file of a tree: its relative path, content hash and executable bit."""

    path: str
    sha256: str
    executable: bool = False


def tree_hash(files: Iterable[FileHash]) -> str:
    """The tree's SHA-256 (hex) over its sorted listing; the same on both sides."""
    digest = hashlib.sha256()
    for f in sorted(files, key=lambda f: f.path.encode("utf-8", "surrogateescape")):
        line = f"{f.sha256}  {'x' if f.executable else '-'}  {f.path}\n"
        digest.update(line.encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


@dataclass(frozen=True)
class CodeIdentity:
    """A code tree's hash, and the git commit it was taken from when there is one."""

    tree: str  # 64 hex digits
    commit: str = ""  # git HEAD, "" when the local tree is not a git repository
    dirty: bool = False  # the git working tree had uncommitted changes

    def record(self) -> str:
        """One line for the box's records: ``tree=<hex> commit=<hex|-> dirty=<0|1>``."""
        return f"tree={self.tree} commit={self.commit or '-'} dirty={int(self.dirty)}"

    @classmethod
    def parse(cls, text: str) -> CodeIdentity | None:
        """A ``record()`` line back (None for anything else: it is the box's text)."""
        fields = dict(part.partition("=")[::2] for part in text.split() if "=" in part)
        tree = fields.get("tree", "")
        commit = fields.get("commit", "-")
        if not _HEX64.fullmatch(tree) or not (commit == "-" or _COMMIT.fullmatch(commit)):
            return None
        if fields.get("dirty") not in ("0", "1"):
            return None
        return cls(tree, "" if commit == "-" else commit, fields["dirty"] == "1")

    def short(self) -> str:
        """``tree 1a2b3c4d5e6f, git 89abcde`` (+ ``with uncommitted changes``)."""
        text = f"tree {self.tree[:12]}"
        if self.commit:
            text += f", git {self.commit[:10]}"
            if self.dirty:
                text += " with uncommitted changes"
        return text
