"""h562 #3: a box reported a mount of 200 000 characters with its inodes full; the whole
path went into the notification's title (which chat targets refuse: the alert never
arrived), one console line and the journal. A subject is cut, keeping a digest of the
whole, so two long mounts alike in their first characters stay two alerts."""

from __future__ import annotations

import json

from support.samples import FROZEN, agent_sample

from rgt_tui.domain.health import Alert
from rgt_tui.domain.snapshot import snapshot_from_agent
from rgt_tui.services.watch.events import HostState
from rgt_tui.services.watch.tracker import HostMemory, derive, memory_to_json


def state(now: float, *alerts: Alert) -> HostState:
    snap = snapshot_from_agent("box3", agent_sample("box3", t=now))
    return HostState(snap, alerts, "connected", None, None, None, None, now)


def full(mount: str) -> Alert:
    return Alert("disk.inodes", "critical", f"inodes 100% used on {mount}", "U7", mount)


def test_a_long_mount_is_cut_in_the_title_the_body_the_key_and_the_memory() -> None:
    a, b = "/L" + "x" * 200_000, "/L" + "x" * 199_999 + "y"
    memory, events = derive("box3", HostMemory(), state(FROZEN, full(a), full(b)), reminder_s=0)
    assert [e.kind for e in events] == ["alert", "alert"]  # two mounts: two alerts
    assert len({e.key for e in events}) == 2 and len(memory.open) == 2
    for e in events:
        assert len(e.title) < 200 and len(e.key) < 300 and len(e.body) < 2100, e.title
        assert e.title.startswith("box3: disk.inodes /Lxxx") and "…#" in e.title
    assert len(json.dumps(memory_to_json("box3", memory))) < 2000
    # The same mount on the next sample is the same alert: nothing told again.
    memory, events = derive("box3", memory, state(FROZEN + 2, full(a), full(b)), reminder_s=0)
    assert events == []
