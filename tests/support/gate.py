"""A complete, unlocking sequence of gate facts for host h1 (shared by gate-related tests).

The typed name comes before the re-scan that unlocks: that re-scan is taken for that
confirmation (the same ``attempt`` token) of the box the facts belong to (``BOX``), and
the local copy is re-hashed between the two (``LOCAL``: every file there, matching).
The last three events are the confirmation (typed, local re-check, re-scan).
"""

from __future__ import annotations

from rgt_tui.domain.box_identity import BoxIdentity
from rgt_tui.domain.teardown_gate import (
    ArtifactChecked,
    CellsRunning,
    ConfirmationTyped,
    FileFacts,
    FilePulled,
    LocalCopyChecked,
    ManifestTaken,
    Rescanned,
    RosterChecked,
    VerificationRead,
)

BOX = "0123456789abcdef0123456789abcdef"
IDENTITY = BoxIdentity(BOX, "SHA256:box-one-host-key")
ATTEMPT = "attempt-1"

FILES = (
    ("cellA/ckpt.pt", FileFacts(10, 100.0, "sha-a")),
    ("cellB/metrics.json", FileFacts(5, 101.0, "sha-b")),
)


LOCAL = LocalCopyChecked("/results/h1", 205.0, matched=len(FILES))


def listing(files=FILES) -> tuple:
    """The re-scan of an unchanged box: each file with its size and mtime."""
    return tuple((p, f.size, f.mtime) for p, f in files)


def happy_events(host: str = "h1", attempt: str = ATTEMPT, box_id: str = BOX) -> list:
    return [
        ManifestTaken(FILES, taken_at=200.0, last_write=101.0),
        FilePulled("cellA/ckpt.pt", "sha-a"),
        FilePulled("cellB/metrics.json", "sha-b"),
        ArtifactChecked("cellA/ckpt.pt", loadable=True, ok=True),
        ArtifactChecked("cellB/metrics.json", loadable=True, ok=True),
        VerificationRead(True, ()),
        RosterChecked(expected=("cellA", "cellB"), present=("cellA", "cellB")),
        CellsRunning(()),
        ConfirmationTyped(host, attempt),
        LOCAL,
        Rescanned(listing(), at=210.0, attempt=attempt, box_id=box_id),
    ]
