"""A results folder that holds another box's pulled copy: the pull refuses it.

A box torn down and a new one added under the same name (a user's second hour, h619 #2):
the new box's files replaced the old box's one by one, each "changed on the box", and
the destroyed box's only copy of its results was set aside under hashed names in
``.rgt/replaced/``, with a line inviting their deletion. The box's identity (its
``~/.rgt/box-id`` and host key, ``domain.box_identity``) is in every manifest, the
listing's too, so the refusal comes on the listing, before anything is written.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from rgt_tui.domain.manifest import Manifest
from rgt_tui.services.pull.types import PullError


def other_box_refusal(previous: Manifest | None, now: Manifest, dest: Path) -> PullError | None:
    """The refusal when ``dest`` holds the pulled copy (``previous``) of another box than
    the one answering (``now``); None when it is the same box, or either is not known."""
    before, after = (previous.identity if previous else None), now.identity
    if before is None or after is None or before.same_box(after):
        return None
    aside = f"{dest}-{before.short()}"
    return PullError(
        f"{dest} holds the pulled copy of another box (box {before.short()}) than the one "
        f"answering now (box {after.short()}): its results would be set aside file by "
        "file as if the box had changed them, so nothing was pulled",
        f"keep that copy whole: move its folder away (mv {shlex.quote(str(dest))} "
        f"{shlex.quote(aside)}), or give this box another name in the fleet file; then "
        "pull again",
    )
