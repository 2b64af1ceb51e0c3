"""A refused host key, as the tracker tells it: a host_key event at once, once per
refused key, and no "silent" event past the grace (the box answers, with a key rgt-tui
refuses: a user's hour got a second notification five minutes later saying it did not
answer). The key told is kept across restarts, and forgotten once the box connects."""

from __future__ import annotations

from dataclasses import replace

from rgt_tui.services.watch.events import HostState
from rgt_tui.services.watch.tracker import (
    HostMemory,
    derive,
    memory_from_json,
    memory_to_json,
)

T0 = 1700000000.0


def _refused(now: float, presented: str = "ssh-ed25519 SHA256:new") -> HostState:
    return HostState(
        None, (), "lost", T0, None, None, None, now,
        error="HOST KEY CHANGED for 10.0.0.3", fix="ssh-keygen -R 10.0.0.3",
        key_kind="changed", key_presented=presented,
    )  # fmt: skip


def test_a_changed_key_is_told_once_and_never_as_a_silence() -> None:
    memory, events = derive("box3", HostMemory(), _refused(T0), reminder_s=0)
    assert [(e.kind, e.severity) for e in events] == [("host_key", "critical")]
    assert "HOST KEY CHANGED" in events[0].title and "ssh-keygen -R" in events[0].body
    memory = memory_from_json("box3", memory_to_json("box3", memory))  # a restart
    for later in (T0 + 60, T0 + 600, T0 + 3600):  # past the 5-minute grace
        memory, events = derive("box3", memory, _refused(later), reminder_s=0)
        assert events == [], events
    # Another key refused: told again.
    memory, events = derive("box3", memory, _refused(T0 + 3700, "ssh-rsa SHA256:x"), reminder_s=0)
    assert [e.kind for e in events] == ["host_key"]
    # Once it connects the refusal is forgotten; no "answering again" for a silence never told.
    ok = replace(_refused(T0 + 3800), connection="connected", key_kind="", key_presented="")
    memory, events = derive("box3", memory, ok, reminder_s=0)
    assert memory.key_told is None and events == []
