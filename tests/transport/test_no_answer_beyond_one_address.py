"""A destroyed box behind a jump host, or under a name with several addresses, is
``NoAnswer`` too (review s46 #2): before, only a direct connection to one address could be,
so a teardown by hand of such a box was refused as "cannot tell" until its entry left the
fleet file. The jump host is a real OpenSSH sshd (what a bastion runs: it answers
OPEN_CONNECT_FAILED with strerror's words); the addresses are real loopback sockets."""

from __future__ import annotations

import getpass
import socket
from pathlib import Path

import pytest
from support.machine import closed_port
from support.sshd import OpenSshServer

from rgt_tui.domain.errors import NoAnswer, TransportError
from rgt_tui.transport.ssh import SshTransport, _every_address_refuses


def _via_jump(home: Path, jump: OpenSshServer, port: int) -> SshTransport:
    ssh = home / ".ssh"
    ssh.mkdir(mode=0o700, exist_ok=True)
    (ssh / "config").write_text(
        f"Host thebox\n    HostName 127.0.0.1\n    Port {port}\n    ProxyJump bastion\n"
        f"Host bastion\n    HostName 127.0.0.1\n    Port {jump.port}\n"
        f"    User {jump.user}\n    IdentityFile {jump.client_key}\n"
    )
    return SshTransport(
        "box1",
        address="thebox",
        username=getpass.getuser(),
        identity_file=jump.client_key,
        known_hosts=jump.known_hosts,
    )


async def test_a_jump_host_that_finds_the_boxs_port_refused_is_no_answer(
    tmp_path: Path, home: Path
) -> None:
    with OpenSshServer(tmp_path / "bastion") as jump, closed_port() as port:
        transport = _via_jump(home, jump, port)
        with pytest.raises(NoAnswer) as caught:
            await transport.connect()
        await transport.close()
    text = str(caught.value)
    assert "the jump host (ssh_config's ProxyJump bastion) could not reach" in text, text
    assert f"127.0.0.1:{port}" in text and "connection refused" in text.lower(), text


async def test_a_jump_host_that_may_not_forward_cannot_tell(tmp_path: Path, home: Path) -> None:
    """Forwarding prohibited is the jump host's rule, not the box gone."""
    with (
        OpenSshServer(tmp_path / "bastion", config=("AllowTcpForwarding no",)) as jump,
        closed_port() as port,
    ):
        transport = _via_jump(home, jump, port)
        with pytest.raises(TransportError) as caught:
            await transport.connect()
        await transport.close()
    assert not isinstance(caught.value, NoAnswer), caught.value
    assert "the jump host (ssh_config's ProxyJump bastion) could not reach" in str(caught.value)


def _info(family: socket.AddressFamily, addr: tuple) -> tuple:
    return (family, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", addr)


async def test_a_name_whose_every_address_refuses_is_no_answer_one_that_takes_is_not() -> None:
    """What ``getaddrinfo`` gives a name with an A and an AAAA record: asyncio's combined
    error keeps no errno, so each address is asked again."""
    # Two loopback addresses (127/8 is all the loopback's): no IPv6 needed on the machine.
    with closed_port() as first, socket.socket() as second:
        second.bind(("127.0.0.2", 0))  # bound, not listening: refuses
        refused = [
            _info(socket.AF_INET, ("127.0.0.1", first)),
            _info(socket.AF_INET, second.getsockname()),
        ]
        assert await _every_address_refuses(refused)
        second.listen()  # the second address now takes the connection
        assert not await _every_address_refuses(refused)
    assert not await _every_address_refuses([])  # nothing resolved: nothing to tell
