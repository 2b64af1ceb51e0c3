"""The user's ``ssh`` is used (rsync for sync, the shell, a pull's large files) only when
it reaches the box our own check resolved and checks its key under the same known_hosts
name. OpenSSH reads ``~`` from the password database and asyncssh from $HOME, so the two
can read different ssh_configs (here: a wrapper ``ssh -F FILE`` first on PATH): a
HostKeyAlias or HostName only ssh sees would send it elsewhere or let another known_hosts
line vouch for the box (ux-j 1). (A Port only ssh sees cannot: the command gives ``-p``.)"""

from __future__ import annotations

import pytest
from support.ssh_config import users_ssh_config

from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.transport.openssh import OpenSsh, openssh_for


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ("HostKeyAlias other.example", "ssh would check the box's key as other.example, not "),
        ("HostName 127.0.0.2", "ssh would connect to 127.0.0.2:"),
    ],
)
def test_a_setting_only_ssh_reads_that_moves_the_box_or_its_key_refuses_ssh(
    openssh_server, home, monkeypatch, setting: str, said: str
) -> None:
    users_ssh_config(home, monkeypatch, f"Host 127.0.0.1\n  {setting}\n", asyncssh_reads=False)
    host = load_fleet(openssh_server.hosts_file).host("real1")
    why = openssh_for(host)
    assert isinstance(why, str) and why.startswith(said), why


def test_the_same_alias_read_by_both_is_the_same_check(openssh_server, home, monkeypatch):
    alias = f"[127.0.0.1]:{openssh_server.port}"  # what the key is filed under anyway
    users_ssh_config(home, monkeypatch, f"Host 127.0.0.1\n  HostKeyAlias {alias}\n")
    host = load_fleet(openssh_server.hosts_file).host("real1")
    assert isinstance(openssh_for(host), OpenSsh)
