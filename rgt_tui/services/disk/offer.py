"""Which entries of a disk audit are offered for deletion, decided from the audit alone.

A checkpoint held back (U6), a running cell's output folder and any folder that holds it
(the audit read the queue: ``services.disk.running``; not read, no folder under the
durable folder), a folder that holds a pull folder, and anything outside the pull
folders that is not a Hugging Face model are never deleted. This one rule is said
beside each listed entry (the disk screen invites only what it may accept: issue 43.10d)
and is the first thing ``reclaim.plan_delete`` asks before it looks at any file. What
remains offered is still checked file by file (pulled and verified) when the user confirms.
"""

from __future__ import annotations

from rgt_tui.domain.text import printable
from rgt_tui.services.disk.audit import DiskAudit, Reclaimable
from rgt_tui.services.disk.running import RUNS

OUTSIDE = "outside the pull folders"
UNTYPABLE = (
    "its name holds control characters or bytes that are no text, shown escaped: remove it "
    "in a shell on the box"
)
UNREAD = "the queue could not be read, so a running cell may write here: try again when it can be"


def under(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or inside it (both absolute, resolved)."""
    folder = folder.rstrip("/") or "/"
    return path == folder or path.startswith(folder if folder == "/" else folder + "/")


def not_offered(audit: DiskAudit, entry: Reclaimable) -> str | None:
    """Why ``entry`` will be refused whatever was pulled, in a few words; None: offered."""
    if entry.held:
        return entry.held
    if printable(entry.path, None) != entry.path or "\ufffd" in entry.path:
        # U+FFFD: the box's name held a byte that is no UTF-8, read as U+FFFD here; the
        # name as shown names another path (or none), so the pulled-copy check would look
        # at the wrong one (h503 #4).
        # Shown with its control characters as escapes, it could not be typed as shown
        # (and would read like a name of those very characters: a hostile hour).
        return UNTYPABLE
    running = running_here(audit, entry)
    if running:
        return running
    for root in audit.pull_roots:
        if root == entry.path:
            # Gone, every later pull and verify refuses "no such folder" (hour s20c #1).
            return "is a pull folder itself: delete the folders under it instead"
        if under(root, entry.path):
            return f"holds the pull folder {printable(root)}"
    if entry.kind == "hf-model" or any(under(entry.path, r) for r in audit.pull_roots):
        return None
    return OUTSIDE


def running_here(audit: DiskAudit, entry: Reclaimable) -> str | None:
    """Why deleting ``entry`` would pull a folder from under a running cell (it is that
    cell's output folder or holds it), or why that is not known; None: it would not."""
    for name, how, out in audit.running:
        if under(out, entry.path):
            # A cell still to run keeps its resume point (h551 #2): deleted, it starts over.
            fix = (
                "stop or kill it first"
                if how == RUNS
                else f"let it run first, move it (rgt-tui queue move {printable(name)} --to "
                f"HOST), or have it start over instead (rgt-tui queue retry {audit.host} "
                f"{printable(name)} sets its outputs aside)"
            )
            if out == entry.path:
                return f"cell {printable(name)} {how}: {fix}"
            return f"holds the output folder of cell {printable(name)}, which {how}: {fix}"
    if audit.queue_unread is not None and entry.type == "d":
        for durable in audit.durable:
            if under(entry.path, durable) or under(durable, entry.path):
                return UNREAD
    return None


def offered(audit: DiskAudit) -> list[Reclaimable]:
    """The listed entries a typed name may delete (once pulled and verified), each once."""
    seen: set[str] = set()
    out = []
    for entry in audit.entries():
        if entry.path not in seen and not_offered(audit, entry) is None:
            seen.add(entry.path)
            out.append(entry)
    return out
