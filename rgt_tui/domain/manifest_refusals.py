"""Which of a manifest's refusals are results the pull did not get, and how to settle each.

A path under a pull root is refused for one of two kinds of reason:

- **skipped by rule** (``SKIP_RULE``: a secret such as ``.ssh`` or ``.netrc``, rgt-tui's
  own records on the box): left there on purpose, never read. Never a shortfall: a pull
  root that holds a home's ``.netrc`` would otherwise fail every pull for good, with
  nothing the user could do but delete a credential.
- **anything else** (a name with a control character, an unreadable file, a link out of
  the root, a FIFO, a lie the box told): something under a folder the user asked for that
  did not arrive. The pull is incomplete (exit 1, never "complete"), verify names it as a
  problem, and each says how to settle it (``refusal_fix``): usually rename or fix it on
  the box, then pull again.

A refusal under a pull root that failed whole (no such folder) is said once, as that
root's shortfall, not again per path.

Pure: no I/O.
"""

from __future__ import annotations

from rgt_tui.agent.secret_paths import skipped_by_rule
from rgt_tui.domain.manifest import Manifest, Refusal
from rgt_tui.domain.manifest_names import CASE_TWIN, NAME_TOO_LONG

# A file caught mid-write: the next pull brings it, nothing on the box needs fixing.
TRANSIENT_REFUSAL = "changed while being hashed"
# (what a reason starts with, how to settle it): the reasons the scan and the parser give.
_FIXES = (
    ("pull root ", "fix the host's pull list in the fleet file, or the folder on the box"),
    ("its pull root has an error", "fix the host's pull list, or the folder on the box"),
    ("unsafe path from the box", "rename it on the box to a plain name"),
    ("file name is not valid UTF-8", "rename it on the box to a plain name"),
    ("'.rgt' is reserved", "rename it on the box (.rgt is rgt-tui's records folder here)"),
    (
        NAME_TOO_LONG,
        "rename it on the box to a shorter name (or move it less deep); the box may allow "
        "what this machine's file system does not",
    ),
    (
        CASE_TWIN,
        "rename one of them on the box (this disk holds only one of the two), or pull to a "
        "disk that tells case apart",
    ),
    ("cannot list folder", "make it readable on the box (its owner and permissions)"),
    ("cannot stat", "make it readable on the box (its owner and permissions)"),
    ("cannot read", "make it readable on the box (its owner and permissions)"),
    (TRANSIENT_REFUSAL, "let it finish being written"),
    (
        "symlink leaves the pull root",
        "remove the link on the box, or put what it points to inside the pull root (a link "
        "out of it is never followed)",
    ),
    ("broken symlink", "remove the link on the box, or restore its target"),
    ("not a regular file", "move it out of the pull root on the box (only files are pulled)"),
)
_DEFAULT_FIX = "rename or move it on the box"
# A path listed, then gone before it was read or hashed: not a permission problem (ux-j 5).
GONE = "No such file or directory"
_GONE_FIX = (
    "it was deleted on the box while the pull listed it: restore it if it is a result, "
    "else pull again (the next listing leaves it out)"
)


def unpulled(manifest: Manifest) -> tuple[Refusal, ...]:
    """The refusals that are results the pull did not get: all but those skipped by rule
    and those under a pull root that failed whole (see the module's doc)."""
    roots = manifest.roots

    def root_failed(r: Refusal) -> bool:
        return 0 <= r.root < len(roots) and roots[r.root].error is not None

    return tuple(
        r for r in manifest.refused if not skipped_by_rule(r.reason) and not root_failed(r)
    )


def refusal_fix(reason: str) -> str:
    """How to settle a refusal given for ``reason``: what to do on the box, then pull again."""
    if reason.startswith(("cannot stat", "cannot read")) and GONE in reason:
        return _GONE_FIX
    what = next((fix for start, fix in _FIXES if reason.startswith(start)), _DEFAULT_FIX)
    return f"{what}, then pull again"


def unpulled_line(manifest: Manifest, refusal: Refusal) -> str:
    """One refused result in a pull's summary: where, why, and the fix."""
    where = manifest.display(refusal.root, refusal.path)
    return f"{where}: refused ({refusal.reason}), so not pulled — {refusal_fix(refusal.reason)}"
