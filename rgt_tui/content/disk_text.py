"""The disk audit as plain lines, for ``rgt-tui disk`` and the TUI's usage modal."""

from __future__ import annotations

from rgt_tui.domain.text import printable
from rgt_tui.domain.units import fmt_bytes, fmt_count
from rgt_tui.services.disk_audit import DiskAudit, Reclaimable

SHOWN = 12  # folders per mount


def _row(e: Reclaimable, name: str) -> str:
    inodes = fmt_count(e.inodes) if e.inodes is not None else "?"
    return f"  {fmt_bytes(e.bytes):>7} {inodes:>7} inodes  {printable(name, 200)}"


def audit_lines(audit: DiskAudit) -> list[str]:
    """Largest folders per mount, the HF cache by model, superseded checkpoints; each
    deletable entry shows the short name that confirms its delete."""
    lines = []
    for m in audit.mounts:
        if m.resolved is None:
            lines.append(f"{printable(m.given)}: not on the box")
            continue
        lines.append(f"largest folders of {printable(m.resolved)} (bytes, inodes):")
        lines += [_row(f, f.path) for f in m.folders[:SHOWN]]
        by_inodes = sorted(m.folders, key=lambda f: -(f.inodes or 0))[:3]
        hogs = [f for f in by_inodes if f not in m.folders[:SHOWN]]
        lines += [_row(f, f.path) + "  (many files)" for f in hogs]
        lines += [f"  note: {printable(n)}" for n in m.notes]
    hubs = ", ".join(printable(h) for h in audit.hf_hubs) or "none found"
    lines.append(f"Hugging Face cache ({hubs}):")
    lines += [_row(e, e.label) for e in audit.hf_models] or ["  no models"]
    lines.append(
        "superseded checkpoints and stale *.tmp (older than the newest verified one of their cell):"
    )
    lines += [
        _row(e, e.label)
        + f"  (newer: {printable(e.superseded_by or '', 120)})"
        + (f"  NOT OFFERED: {printable(e.held)}" if e.held else "")
        for e in audit.checkpoints
    ] or ["  none"]
    lines += [f"note: {printable(n)}" for n in audit.notes]
    return lines
