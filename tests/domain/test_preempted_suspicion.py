""" "preempted?" is for an interruptible box that answered once and went silent: one never
reached at all ran nothing to be preempted, and said "preempted?" beside "never
connected" (hour s19b #6)."""

from __future__ import annotations

from pathlib import Path

from rgt_tui.domain.config_parse import parse_fleet
from rgt_tui.domain.preemption import suspected

FLEET = """
[[hosts]]
name = "spot1"
ssh = "root@10.255.255.1:22"
interruptible = true
"""


def test_a_box_never_reached_is_not_suspected_of_a_preemption() -> None:
    host = parse_fleet(Path("hosts.toml"), FLEET, ["generic-ssh"]).host("spot1")
    assert suspected(host, "unreached", 100.0, ever_seen=False) is None
    # Seen by an earlier run, unreached since this one started: the silence may be one.
    assert suspected(host, "unreached", 100.0, ever_seen=True) is not None
    for status in ("reconnecting", "lost"):
        assert suspected(host, status, 100.0, ever_seen=False) is not None
    assert suspected(host, "connected", 100.0) is None
