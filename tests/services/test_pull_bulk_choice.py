"""Which way a pull's large files come (``services.pull.bulk.bulk_command``): through
OpenSSH's ``ssh`` only where it is sound, else SFTP with the reason the summary prints."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.pull.budget import Bandwidth
from rgt_tui.services.pull.bulk import NEAR_RTT_S, bulk_command, stream_argv
from rgt_tui.transport.openssh import OpenSsh

FLEET = """\
[[hosts]]
name = "box1"
ssh = "root@10.0.0.5:40022"
identity_file = "{key}"
known_hosts = "{known}"
"""


def _hosts(tmp_path: Path):  # noqa: ANN202
    (tmp_path / "key").write_text("")
    (tmp_path / "known").write_text("")
    text = FLEET.format(key=tmp_path / "key", known=tmp_path / "known")
    (tmp_path / "hosts.toml").write_text(text)
    box = load_fleet(tmp_path / "hosts.toml").host("box1")
    return box, dataclasses.replace(box, ssh=None)  # as the fleet of this machine alone


def test_ssh_only_where_it_is_sound(tmp_path: Path) -> None:
    """(An ssh_config that would undo the host-key check gives SFTP too: ``openssh_for``'s
    own tests, tests/services/test_shell_command.py.)"""
    box, here = _hosts(tmp_path)
    near = NEAR_RTT_S / 2
    assert isinstance(bulk_command(box, rtt_s=near, budget=None, mode="auto"), OpenSsh)
    assert bulk_command(box, rtt_s=near, budget=None, mode="sftp") == "--bulk sftp"
    budget = Bandwidth(100e6)
    assert bulk_command(box, rtt_s=near, budget=budget, mode="ssh") == (
        "a bandwidth limit (SFTP paces it)"
    )
    far = bulk_command(box, rtt_s=0.2, budget=None, mode="auto")
    assert far == "a 200 ms round trip (SFTP lanes fill it; --bulk ssh to stream anyway)"
    assert bulk_command(box, rtt_s=None, budget=None, mode="auto").startswith("an unknown link")
    assert isinstance(bulk_command(box, rtt_s=0.2, budget=None, mode="ssh"), OpenSsh)
    assert bulk_command(here, rtt_s=0.0, budget=None, mode="ssh") == "the host is this machine"


def test_the_stream_reads_the_whole_file_or_the_rest_of_a_part() -> None:
    ssh = OpenSsh(("ssh", "-o", "BatchMode=yes"), "10.0.0.5")
    whole = stream_argv(ssh, "/r/-a b'c", 0)
    assert whole[-3:] == ("--", "10.0.0.5", "cat -- '/r/-a b'\"'\"'c'")
    rest = stream_argv(ssh, "/r/x.pt", 10)
    assert rest[-1] == "tail -c +11 -- /r/x.pt"
