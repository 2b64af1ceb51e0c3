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


def test_a_box_renaming_its_cell_each_sample_is_told_ten_times_an_hour() -> None:
    """h562 #2: the running cell's name changed at every sample with its log silent; each
    name opened a log.silent alert, and a notification to every target, once a second.
    Ten of one rule per hour are told, the tenth with a word that the rest are not."""
    from rgt_tui.services.watch.tracker import OPENS_PER_RULE, memory_from_json

    memory, told, now = HostMemory(), [], FROZEN
    for n in range(2000):  # 2000 s, a new name each second
        now += 1
        silent = Alert("log.silent", "warning", "no log line for 12 min", "U33", f"cell{n}")
        memory, events = derive("box3", memory, state(now, silent), reminder_s=0)
        told += events
        if n % 100 == 0:  # a restart now and then: the count is kept in the journal
            memory = memory_from_json(
                "box3", json.loads(json.dumps(memory_to_json("box3", memory)))
            )
    assert len(told) == OPENS_PER_RULE + 1 and "not notified for an hour" in told[-1].body
    assert len(memory.opens) == OPENS_PER_RULE  # the memory stays small (h564 #6)
    assert told[-1].title == f"box3: log.silent opened {OPENS_PER_RULE} times within the hour"
    later = state(now + 3600, Alert("log.silent", "warning", "silent", "U33", "cell-next"))
    assert [e.kind for e in derive("box3", memory, later, reminder_s=0)[1]] == ["alert"]
