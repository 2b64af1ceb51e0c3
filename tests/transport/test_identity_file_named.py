"""A fleet file's identity_file that cannot be used at connect time is named where the
user wrote it (hour s16b #5): ``hosts.toml:LINE``, not "the fleet file", over a real
loopback box. Three mistakes a user makes: a path that does not exist, the ``.pub``
given for the key, and the key given as ``ssh = "ssh -i … user@host"`` (its line).
"""

from __future__ import annotations

import asyncssh
import pytest

from rgt_tui.domain.errors import TransportError
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.transport import transport_for


def _fleet_file(loopback_fleet, tmp_path, identity: str, *, pasted: bool = False):
    box = loopback_fleet.boxes[0]
    target = f"{loopback_fleet.username}@127.0.0.1:{box.port}"
    lines = ["# my fleet", "", "[[hosts]]", 'name = "box1"']
    if pasted:
        lines.append(f'ssh = "ssh -i {identity} -p {box.port} {loopback_fleet.username}@127.0.0.1"')
    else:
        lines += [f'ssh = "{target}"', f'identity_file = "{identity}"']
    lines.append(f'known_hosts = "{loopback_fleet.known_hosts}"')
    path = tmp_path / "hosts.toml"
    path.write_text("\n".join(lines) + "\n")
    line = next(i for i, text in enumerate(lines, 1) if identity in text)
    return load_fleet(path), f"{path}:{line}"


@pytest.mark.parametrize(
    ("identity", "pasted", "said"),
    [
        ("{dir}/no_such_key", False, "No such file or directory"),
        ("{key}.pub", False, "not its .pub"),
        ("{dir}/no_such_key", True, "(the -i of ssh)"),
    ],
)
async def test_an_unusable_identity_file_is_named_at_its_line(
    loopback_fleet, tmp_path, identity, pasted, said
):
    key = tmp_path / "client_key"  # its .pub beside it: the key's real public half
    public = asyncssh.read_private_key(str(loopback_fleet.client_key)).export_public_key()
    key.with_name("client_key.pub").write_bytes(public)
    identity = identity.format(dir=tmp_path, key=key)
    fleet, where = _fleet_file(loopback_fleet, tmp_path, identity, pasted=pasted)
    transport = transport_for(fleet.hosts[0])
    with pytest.raises(TransportError) as caught:
        await transport.connect()
    await transport.close()
    text = str(caught.value)
    assert f"identity_file ({where}" in text, text
    assert said in text, text
