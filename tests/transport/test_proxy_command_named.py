"""A ProxyCommand that fails is named (hour s16b): asyncssh runs ssh_config's
ProxyCommand and drops its stderr, so the error read "broken pipe" or "connection lost"
and sent the user to the box when the command (a VPN, a bastion's CLI) had failed here.
Over a real ~/.ssh/config (a HOME of the test's own) and a real failing command."""

from __future__ import annotations

import pytest

from rgt_tui.domain.errors import NoAnswer, TransportError
from rgt_tui.transport.ssh import SshTransport


async def test_a_failing_proxy_command_is_named_with_how_to_see_its_error(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "config").write_text(
        "Host viabastion\n"
        "  HostName 127.0.0.1\n"
        '  ProxyCommand sh -c "echo bastion: token expired >&2; exit 1"\n'
    )
    monkeypatch.setenv("HOME", str(home))
    transport = SshTransport("box1", address="viabastion", known_hosts=home / "known_hosts")
    with pytest.raises(TransportError) as caught:
        await transport.connect()
    await transport.close()
    text = str(caught.value)
    assert not isinstance(caught.value, NoAnswer)  # the command failed, not the box
    assert "through ssh_config's ProxyCommand for viabastion" in text, text
    assert "echo bastion: token expired" in text, text  # which command: the user's own
    assert "run ssh -v viabastion to see the command's own error" in text, text


async def test_a_jump_host_that_fails_is_named_as_the_jump_host_of_ssh_config(
    tmp_path, monkeypatch
):
    """hour s17b #7: a ProxyJump whose port was wrong read as the box's own "connection
    refused", and one that did not resolve sent the user to the fleet file's ssh line."""
    from support.machine import closed_port

    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    with closed_port() as port:
        (home / ".ssh" / "config").write_text(
            f"Host viaclosed\n  HostName 127.0.0.1\n  ProxyJump me@127.0.0.1:{port}\n"
            "Host vianame\n  HostName 127.0.0.1\n  ProxyJump me@nosuch.invalid\n"
        )
        said = {}
        for alias in ("viaclosed", "vianame"):
            transport = SshTransport("box1", address=alias, known_hosts=home / "known_hosts")
            with pytest.raises(TransportError) as caught:
                await transport.connect()
            await transport.close()
            assert not isinstance(caught.value, NoAnswer)  # the hop's, not the box's
            said[alias] = str(caught.value)
    closed = said["viaclosed"]
    assert f"jump host 127.0.0.1:{port} (ssh_config's ProxyJump for viaclosed)" in closed, closed
    assert "check the ProxyJump line for viaclosed in ~/.ssh/config" in closed, closed
    name = said["vianame"]
    assert "jump host 'nosuch.invalid' does not resolve" in name, name
    assert "check the ProxyJump line for vianame in ~/.ssh/config" in name, name
    assert "fleet file" not in name, name


async def test_only_the_boxs_own_address_not_answering_is_no_answer(tmp_path, monkeypatch):
    """What a destroyed box does (its port refused, its name gone) is ``NoAnswer``, which
    lets a teardown by hand be recorded on the command line; a key file missing here is
    not (h462 #1: it recorded a box that still answered)."""
    from support.machine import closed_port

    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    with closed_port() as port:
        for address in ("127.0.0.1", "nosuch.invalid"):
            transport = SshTransport(
                "box1", address=address, port=port, username="me", known_hosts=home / "kh"
            )
            with pytest.raises(NoAnswer):
                await transport.connect()
            await transport.close()
        transport = SshTransport(
            "box1",
            address="127.0.0.1",
            port=port,
            username="me",
            known_hosts=home / "known_hosts",
            identity_file=tmp_path / "no-such-key",
        )
        with pytest.raises(TransportError) as caught:
            await transport.connect()
        await transport.close()
    assert not isinstance(caught.value, NoAnswer), caught.value


async def test_a_port_that_takes_the_connection_and_says_nothing_still_answers(tmp_path):
    """Review s46 #1: asyncssh's timeout covers the handshake too; a box that took the
    connection and was slow after it is no proof of a destroyed box."""
    import asyncio

    async def silent(reader, writer):  # takes the connection, never speaks SSH
        await reader.read()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        transport = SshTransport(
            "box1", address="127.0.0.1", port=port, known_hosts=tmp_path / "kh", connect_timeout=1
        )
        with pytest.raises(TransportError) as caught:
            await transport.connect()
        await transport.close()
    finally:
        server.close()
    assert not isinstance(caught.value, NoAnswer), caught.value
