"""What code sync hands back: its error, the status of a host's code, a sync's result."""

from __future__ import annotations

from dataclasses import dataclass

from rgt_tui.domain.code_identity import CodeIdentity

# How many differing paths a status keeps (and a message names at most a few of them).
MAX_DIFFERS = 20
_NAMED = 3


class SyncError(Exception):
    """A sync or a code check was refused or failed; names the host and the fix."""

    def __init__(self, host: str, message: str, fix: str = "") -> None:
        self.host = host
        self.message = message
        self.fix = fix
        super().__init__(f"{host}: {message}" + (f" — {fix}" if fix else ""))


@dataclass(frozen=True)
class CodeStatus:
    """The host's ``code`` tree here against the box's copy of the same paths (U42).

    ``box`` is None when the workdir does not exist on the box. ``differs``: the first
    paths missing or different there (at most MAX_DIFFERS; ``differ_count`` has them all).
    """

    host: str
    local: CodeIdentity
    box: CodeIdentity | None
    differs: tuple[str, ...]
    code_dir: str = ""  # the local tree, for messages
    differ_count: int = 0
    files: int = 0  # files in the local listing

    @property
    def in_sync(self) -> bool:
        """The box holds every listed file with the same content and executable bit."""
        return not self.differs

    def problem(self) -> str | None:
        """What stands between this code and a launch, with the fix; None when the box
        holds the local tree and that tree has no uncommitted changes."""
        parts: list[str] = []
        if self.differs:
            count = max(self.differ_count, len(self.differs))
            named = ", ".join(self.differs[:_NAMED]) + (", …" if count > _NAMED else "")
            where = "" if self.box is not None else " (its workdir does not exist)"
            parts.append(
                f"the code on {self.host}{where} differs from {self.code_dir or 'the local tree'}: "
                f"{count} file{'s' if count != 1 else ''} missing or changed ({named}) "
                f"— rgt-tui sync {self.host}"
            )
        if self.local.dirty:
            parts.append(
                f"uncommitted changes in {self.code_dir or 'the local tree'}: commit them, "
                "or acknowledge"
            )
        return "; ".join(parts) or None


@dataclass(frozen=True)
class SyncResult:
    """What a sync did. ``method``: "rsync" or "sftp" (or "copy" for this machine);
    ``identity``: the code now in the workdir, re-hashed there after the switch."""

    host: str
    identity: CodeIdentity
    method: str
    files_sent: int
    bytes_sent: int
    files_total: int = 0  # files in the local listing
    skipped: tuple[str, ...] = ()  # local entries left out: symlinks, special files, names
    note: str = ""  # why rsync was not used, when it was not
