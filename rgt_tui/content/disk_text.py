"""The disk audit as plain lines, for ``rgt-tui disk`` and the TUI's usage modal."""

from __future__ import annotations

from pathlib import PurePosixPath

from rgt_tui.domain.text import printable
from rgt_tui.domain.units import fmt_bytes, fmt_count, plural
from rgt_tui.services.disk.audit import DiskAudit, Reclaimable
from rgt_tui.services.disk.offer import UNTYPABLE, not_offered, offered

SHOWN = 12  # folders per mount
NAMED = 8  # offered entries named on the offer line; more are counted
# What confirms a delete: an entry as it is listed (``Reclaimable.short``): a folder's
# full path, a model's ORG/NAME, a checkpoint's CELL/FILE. A model's or checkpoint's full
# path works too, but is not shown, so the words never offer it.
FULL_PATH = "a folder is typed by its full path"


def _row(e: Reclaimable, name: str) -> str:
    count = fmt_count(e.inodes) if e.inodes is not None else "?"
    inodes = plural(e.inodes if e.inodes is not None else 0, "inode", shown=f"{count:>7}")
    return f"  {fmt_bytes(e.bytes):>7} {inodes:<14}  {printable(name, 200)}"


def _offer(audit: DiskAudit, e: Reclaimable) -> str:
    why = not_offered(audit, e)
    return f"  NOT OFFERED: {printable(why)}" if why else ""


def _folders_shown(folders: tuple[Reclaimable, ...]) -> tuple[list[Reclaimable], list[Reclaimable]]:
    """A mount's largest folders shown, and the ones big by inodes shown after them."""
    by_inodes = sorted(folders, key=lambda f: -(f.inodes or 0))[:3]
    return list(folders[:SHOWN]), [f for f in by_inodes if f not in folders[:SHOWN]]


def listed(audit: DiskAudit) -> list[Reclaimable]:
    """The entries ``audit_lines`` shows, in the audit's order."""
    shown = {f.path for m in audit.mounts for part in _folders_shown(m.folders) for f in part}
    return [e for e in audit.entries() if e.kind != "folder" or e.path in shown]


def offer_line(audit: DiskAudit) -> str:
    """Which listed entries a typed name may delete, or that none may and why."""
    shown = {e.path for e in listed(audit)}
    names = [printable(e.short, 200) for e in offered(audit) if e.path in shown]
    if not names:
        roots = ", ".join(printable(r) for r in audit.pull_roots) or "none"
        return (
            "nothing listed is offered for deletion: rgt-tui deletes only Hugging Face models "
            f"and what is pulled and verified under the pull folders ({roots})"
        )
    more = f", and {len(names) - NAMED} more" if len(names) > NAMED else ""
    line = (
        "offered for deletion (type one as it is named here; each file is checked pulled "
        f"and verified first): {', '.join(names[:NAMED])}{more}"
    )
    if any(e.kind != "hf-model" and e.path in shown for e in offered(audit)):
        # Said before the delete, not found after it (hour s25b #7): the box no longer
        # holds what the last manifest lists, so the teardown gate's re-scan cannot match.
        line += (
            "; a delete under a pull folder shuts the teardown gate until the next pull and verify"
        )
    return line


def not_listed(audit: DiskAudit, typed: str) -> str:
    """Why ``typed`` confirms no delete (it names no listed entry), and what would: the
    full path of the listed folder whose last name it is (a folder has no shorter name),
    else the offer line's names."""
    name = typed.rstrip("/")
    escaped = [shown for e in listed(audit) if (shown := printable(e.path, None)) != e.path]
    if any(shown in (typed, name) for shown in escaped):
        # Typed as shown, escapes and all: it is listed, and never offered (a user's hour).
        return f"is listed, but not offered: {UNTYPABLE}"
    folders = [e.path for e in listed(audit) if e.kind == "folder"]
    same = [p for p in folders if PurePosixPath(p).name == name]
    if len(same) == 1:
        return f"is not listed above: {FULL_PATH}, {printable(same[0], 200)}"
    if same:
        return f"is not listed above: {FULL_PATH}, as listed"
    shown = {e.path for e in listed(audit)}
    if not any(e.path in shown for e in offered(audit)):
        return "is not listed above, and nothing listed is offered for deletion"
    return "is not listed above: type one of the entries the last line offers, as written there"


def audit_lines(audit: DiskAudit) -> list[str]:
    """Largest folders per mount, the HF cache by model, superseded checkpoints; each
    deletable entry shows the short name that confirms its delete, each other one why it
    is NOT OFFERED, and the last line which are offered."""
    lines = []
    for m in audit.mounts:
        if m.resolved is None:
            lines.append(f"{printable(m.given)}: not on the box")
            continue
        lines.append(f"largest folders of {printable(m.resolved)} (bytes, inodes):")
        largest, hogs = _folders_shown(m.folders)
        lines += [_row(f, f.path) + _offer(audit, f) for f in largest]
        lines += [_row(f, f.path) + "  (many files)" + _offer(audit, f) for f in hogs]
        lines += [f"  note: {printable(n)}" for n in m.notes]
    hubs = ", ".join(printable(h) for h in audit.hf_hubs) or "none found"
    lines.append(f"Hugging Face cache ({hubs}):")
    lines += [_row(e, e.label) + _offer(audit, e) for e in audit.hf_models] or ["  no models"]
    lines.append(
        "superseded checkpoints and stale *.tmp (older than the newest verified one of their cell):"
    )
    lines += [
        _row(e, e.label) + f"  (newer: {printable(e.superseded_by or '', 120)})" + _offer(audit, e)
        for e in audit.checkpoints
    ] or ["  none"]
    lines += [f"note: {printable(n)}" for n in audit.notes]
    lines.append(offer_line(audit))
    return lines
