"""`rgt-tui pull` of a box whose host key changed: refused, the CHANGED words said once
with the host named once, and the ``ssh-keygen -R`` fix once on its own line (a new
user's hour, s39 #5: the whole text came three times, one of them ``box1: box1:``).
A real loopback box, another real key, the console entry point."""

from __future__ import annotations

import asyncssh
from support.cli import arun


async def test_a_changed_host_key_is_said_once_with_its_fix_once(make_loopback_fleet, tmp_path):
    fleet = await make_loopback_fleet(1)
    known = fleet.known_hosts
    name = known.read_text().split()[0]
    other = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode()
    known.write_text(f"{name} {other}")
    done = await arun("pull", "box1", "--hosts", str(fleet.hosts_file), timeout=120)
    err = done.stderr
    assert done.returncode != 0, err
    assert "rgt-tui pull: box1: HOST KEY CHANGED for" in err, err
    assert "box1: box1:" not in err
    assert err.count("ssh-keygen -R") == 1, err
    assert "  fix: if the box was re-created, run: ssh-keygen -R" in err
