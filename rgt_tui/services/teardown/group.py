"""A group is not torn down: each of its boxes is, after its own gate (ux-h 4).

``teardown GROUP`` used to gate and record rank 0's box alone, under the group's name:
the other ranks were never checked or named, and one physical box read "torn down" under
one name while its own gate stayed locked under another. A group's boxes each carry their
own facts (their own journal, manifest, unfinished cells), so the command line refuses a
group naming each box's command, and the gate of a group (the TUI's tab) is one locked
line saying the same: nothing is checked, acknowledged or recorded under the group.
"""

from __future__ import annotations

from rgt_tui.domain import teardown_gate as g
from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.text import printable

MEMBERS = "members"  # the gate's one line for a group: its boxes, each torn down alone


def group_refusal(host: HostConfig, *, tui: bool = False) -> str | None:
    """Why ``host`` cannot be torn down as one (it is a group), naming each box's own
    teardown; None for a box."""
    if host.group is None:
        return None
    name = printable(host.name, 200)
    boxes = [printable(b, 200) for b in host.group.hosts]
    if tui:
        how = ", then ".join(f"select {b} and check its gate here" for b in boxes)
    else:
        how = "; ".join(f"`rgt-tui teardown {b}`" for b in boxes)
    return (
        f"{name} is a group of {len(boxes)} boxes ({', '.join(boxes)}), not a box: "
        f"nothing is torn down or recorded under the group's name — each box is torn down "
        f"on its own, after its own gate: {how}"
    )


def group_condition(host: HostConfig) -> g.Condition:
    """The gate of a group: one locked line naming its boxes (never settled here)."""
    text = group_refusal(host, tui=True) or ""
    assert host.group is not None
    return g.Condition(MEMBERS, False, text, tuple(host.group.hosts))
