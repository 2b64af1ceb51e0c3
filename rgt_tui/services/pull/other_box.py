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
    if previous is None:
        return None
    before, after = previous.identity, now.identity
    if before is None or after is None:
        # An id not reported (a box that cannot write ~/.rgt/box-id): the host keys
        # still tell two machines apart (review h620 #7).
        keys = previous.host_key, now.host_key
        if None in keys or keys[0] == keys[1]:
            return None
        was, what = "another host key", "another box"
        aside = f"{dest}-earlier"
    elif before.same_box(after):
        return None
    elif before.host_key is not None and before.host_key == after.host_key:
        # One machine, another id: another login's ~/.rgt, most often `user =` changed.
        was = f"box id {before.short()}, now {after.short()}, with the same host key"
        what = "another account on this same machine"
        aside = f"{dest}-{before.short()}"
    else:
        was = f"box {before.short()}, now box {after.short()}"
        what = "another box"
        aside = f"{dest}-{before.short()}"
    return PullError(
        f"{dest} holds the pulled copy of {what}, not of the one answering now ({was}): "
        "its results would be set aside file by file as if the box had changed them, so "
        "nothing was pulled",
        f"keep that copy whole: move its folder away (mv {shlex.quote(str(dest))} "
        f"{shlex.quote(aside)}), or give this box another name in the fleet file; then "
        "pull again",
    )
