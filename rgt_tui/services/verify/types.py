"""What a verification reports: each file's check, the flags, the progress, the report.

Kept apart from ``verify.py`` (which produces them) so that ``verify_report`` (which
words them) and the UI's content builders need not import the verifier.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rgt_tui.domain.artifacts import GOOD_STATUSES
from rgt_tui.domain.manifest import Manifest
from rgt_tui.domain.roster import RosterCheck
from rgt_tui.services.verify.loader import LoaderInfo

if TYPE_CHECKING:
    from rgt_tui.services.result_code import ResultCode


@dataclass(frozen=True)
class ArtifactCheck:
    """One pulled file: its local hash and how it verified."""

    path: str  # relative to the host's results folder
    remote: str  # where it is on the box
    kind: str  # torch | safetensors | json | jsonl | other
    status: str  # see rgt_tui.domain.artifacts
    detail: str
    size: int
    sha256: str | None  # of the local copy, now
    # A damaged checkpoint's earlier copy a pull set aside in .rgt/replaced/ that loads:
    # (its path relative to the results folder, its SHA-256, its size). A resume move
    # may start from it (hour s21a #2: "from scratch" was the only way on offered).
    earlier: tuple[str, str, int] | None = None

    @property
    def loadable(self) -> bool:
        return self.kind != "other"

    @property
    def ok(self) -> bool:
        return self.status in GOOD_STATUSES


@dataclass(frozen=True)
class Flag:
    """Something to look at that is not a file's own check: empty, leftover, changed..."""

    kind: str  # empty | leftover | unfinished | refused | skipped | remote-changed | remote-added | remote-removed | not-rechecked
    path: str
    detail: str


@dataclass(frozen=True)
class VerifyProgress:
    """How far a verification is."""

    host: str
    files_done: int
    files_total: int
    bytes_done: int
    bytes_total: int


@dataclass(frozen=True)
class VerificationReport:
    """The outcome of verifying one host's pulled copy."""

    host: str
    folder: Path
    checked_at: float  # this machine's clock
    manifest: Manifest | None
    checks: tuple[ArtifactCheck, ...]
    flags: tuple[Flag, ...]
    roster: RosterCheck | None  # None: the host has no queue to reconcile
    remote_checked: bool
    problems: tuple[str, ...]
    loader: LoaderInfo | None = None  # the interpreter and torch files were loaded with
    # Which code each cell ran, as the pull recorded it (U42); None: no record (result_code).
    code: ResultCode | None = None
    # Files a reclaim deleted on the box after they verified whose copy here still
    # hashes as it did: counted for their cells (services.reclaimed).
    reclaimed: int = 0
    # False: a verdict that must not become the folder's record (a pull writes into it
    # now: nothing was verified), whoever writes the records (a group's verify).
    recordable: bool = True

    @property
    def ok(self) -> bool:
        return not self.problems
