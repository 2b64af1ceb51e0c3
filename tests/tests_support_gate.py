"""A complete, unlocking sequence of gate facts for host h1 (shared by gate-related tests)."""

from __future__ import annotations

from rgt_tui.domain.teardown_gate import (
    ArtifactChecked,
    CellsRunning,
    ConfirmationTyped,
    FileFacts,
    FilePulled,
    ManifestTaken,
    Rescanned,
    RosterChecked,
)

FILES = (
    ("cellA/ckpt.pt", FileFacts(10, 100.0, "sha-a")),
    ("cellB/metrics.json", FileFacts(5, 101.0, "sha-b")),
)


def happy_events(host: str = "h1") -> list:
    return [
        ManifestTaken(FILES, taken_at=200.0, last_write=101.0),
        Rescanned(tuple((p, f.size, f.mtime) for p, f in FILES), at=210.0),
        FilePulled("cellA/ckpt.pt", "sha-a"),
        FilePulled("cellB/metrics.json", "sha-b"),
        ArtifactChecked("cellA/ckpt.pt", loadable=True, ok=True),
        ArtifactChecked("cellB/metrics.json", loadable=True, ok=True),
        RosterChecked(expected=("cellA", "cellB"), present=("cellA", "cellB")),
        CellsRunning(()),
        ConfirmationTyped(host),
    ]
