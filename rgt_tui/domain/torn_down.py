"""A box recorded as torn down that still answers: the forgotten-box cost leak (GEN1).

A teardown is recorded when a command exited 0 or the user said they destroyed the box
by hand; neither proves the box is gone. The same box answering afterwards (its id, and
its host key where both are known) may still be billing: ``rgt-tui status`` and the TUI
say so loudly instead of showing it as a plain "up" box. A box with another id is a new
box rented under the name (the journal moves the old one to history), never this alert.

Providers take a while to stop a box they were told to destroy, so an answer within
``GRACE_S`` of the record is not yet news. Pure: no I/O.
"""

from __future__ import annotations

import time

from rgt_tui.domain.box_identity import BoxIdentity
from rgt_tui.domain.health import Alert
from rgt_tui.domain.units import fmt_duration

STILL_ANSWERS = "teardown.still-answers"  # the alert's id
GRACE_S = 300.0  # a destroyed box may answer this long after the record, and be going


def answers_after_teardown(
    recorded: BoxIdentity | None, box_id: str | None, host_key: str | None
) -> bool:
    """Whether the box answering (``box_id``, ``host_key``) can be the box the journal
    recorded as torn down: the same id (keys not contradicting), or no id to tell by."""
    if box_id is None or recorded is None:
        return True  # something answers under the name, and nothing says it is another
    return recorded.same_box(BoxIdentity(box_id, host_key))


def still_answers_alert(torn_down_at: float, now: float, *, cluster: bool = False) -> Alert:
    """The alert for a box recorded torn down at ``torn_down_at`` and answering at ``now``:
    critical, or a warning within ``GRACE_S`` of the record (the provider may still be
    stopping it). ``cluster``: a Slurm login node, which a teardown never destroys: a
    note, not a page."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(torn_down_at))
    ago = fmt_duration(max(0.0, now - torn_down_at))
    if cluster:
        return Alert(
            STILL_ANSWERS,
            "info",
            f"recorded as torn down {when} ({ago} ago), and its login node answers: a "
            "cluster is never destroyed, nothing of it bills",
            "GEN1",
        )
    fresh = now - torn_down_at < GRACE_S
    return Alert(
        STILL_ANSWERS,
        "warning" if fresh else "critical",
        f"recorded as torn down {when} ({ago} ago) but the same box STILL ANSWERS: it may "
        "still be billing — destroy it in the provider's console (or check that the "
        "teardown command destroys, not stops)"
        + ("; a provider can take a few minutes to stop a box: look again soon" if fresh else ""),
        "GEN1",
    )
