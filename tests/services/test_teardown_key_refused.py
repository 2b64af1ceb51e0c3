"""A box that answers with a host key rgt-tui refuses is said as such in the gate's box
line, not as "not answering now" (a user's hour read that right after a key change, with
the box up). The gate stays locked either way. A real loopback box, pulled and verified,
re-started with a new host key that known_hosts does not hold."""

from __future__ import annotations

import asyncssh
from support.gate_box import Setup


async def test_a_refused_key_is_named_in_the_box_line(ready: Setup) -> None:
    await ready.box.stop()
    ready.box.host_key = asyncssh.generate_private_key("ssh-ed25519")  # known_hosts: the old
    await ready.box.start()
    report = await ready.check()
    (box,) = [c for c in report.conditions if c.key == "box"]
    assert not box.ok and not report.ready_but_confirmation
    assert box.evidence.startswith(
        "answering with a changed host key, which rgt-tui refuses; last seen: "
    ), box.evidence
