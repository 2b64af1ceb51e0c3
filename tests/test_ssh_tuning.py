"""asyncssh's receive path as rgt-tui tunes it (transport/ssh_tuning.py): the AES-GCM
shortcut opens exactly what asyncssh opens, refuses what it refuses, is what a real
connection uses, and a forged byte on the wire drops the connection instead of reaching
the reader."""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import logging
import os
import shlex

import asyncssh
import pytest

from rgt_tui.transport import TransportError, ssh_tuning
from rgt_tui.transport.ssh import SshTransport

ASYNCSSH_DECRYPT = ssh_tuning.ASYNCSSH_GCM_DECRYPT


def test_lean_gcm_opens_what_asyncssh_opens_and_refuses_forgeries():
    assert ssh_tuning._same_as_asyncssh(ssh_tuning.decrypt_gcm_packet, ASYNCSSH_DECRYPT)


def _no_tag_check(self, seq, first, rest, header_len, mac):
    """Decrypts with the right key stream but never looks at the tag (AES-CTR)."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    cipher = self._cipher
    counter = cipher._iv + (2).to_bytes(4, "big")  # GCM's first counter block for data
    decryptor = Cipher(algorithms.AES(cipher._key), modes.CTR(counter)).decryptor()
    cipher._update_iv()
    return decryptor.update(first[header_len:] + rest) + decryptor.finalize()


def _stale_nonce(self, seq, first, rest, header_len, mac):
    """Right for the first packet, then keeps using its nonce."""
    data = ssh_tuning.decrypt_gcm_packet(self, seq, first, rest, header_len, mac)
    self._cipher._iv = self._cipher.__dict__.setdefault("_first_iv", self._cipher._iv)
    return data


_KEPT: dict[str, object] = {}


def _one_key_for_all(self, seq, first, rest, header_len, mac):
    """Keeps the first AESGCM it made for every cipher after it, whatever their keys."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    self._cipher._rgt_aead = _KEPT.setdefault("aead", AESGCM(self._cipher._key))
    return ssh_tuning.decrypt_gcm_packet(self, seq, first, rest, header_len, mac)


@pytest.mark.parametrize("broken", [_no_tag_check, _stale_nonce, _one_key_for_all])
def test_the_check_before_installing_catches_a_wrong_decryption(broken):
    assert not ssh_tuning._same_as_asyncssh(broken, ASYNCSSH_DECRYPT)


def test_not_installed_when_asyncssh_does_not_pass_the_check(monkeypatch):
    gcm = asyncssh.encryption.GCMEncryption
    monkeypatch.setattr(gcm, "decrypt_packet", ASYNCSSH_DECRYPT)
    monkeypatch.setattr(ssh_tuning, "_same_as_asyncssh", lambda ours, theirs: False)
    ssh_tuning.lean_gcm_decrypt.cache_clear()
    try:
        assert ssh_tuning.lean_gcm_decrypt() is False
        assert gcm.decrypt_packet is ASYNCSSH_DECRYPT
    finally:
        ssh_tuning.lean_gcm_decrypt.cache_clear()


async def test_a_real_connection_decrypts_with_it(loopback_fleet):
    box = loopback_fleet.boxes[0]
    t = _transport(loopback_fleet, box.port)
    data = os.urandom(3 << 20)
    (box.root / "blob.bin").write_bytes(data)
    await t.connect()
    try:
        got = b"".join([c async for c in t.stream_bytes(f"cat {box.root / 'blob.bin'}")])
        receiving = t._conn._recv_encryption
    finally:
        await t.close()
    assert got == data
    assert asyncssh.encryption.GCMEncryption.decrypt_packet is ssh_tuning.decrypt_gcm_packet
    assert type(receiving) is asyncssh.encryption.GCMEncryption
    assert "_rgt_aead" in receiving._cipher.__dict__  # the kept AESGCM: this path ran


async def test_a_forged_byte_on_the_wire_drops_the_connection(loopback_fleet, tmp_path):
    """A proxy flips one bit of what the box sends, well after the key exchange: the
    stream fails, and every byte the reader got before that is the box's own."""
    box = loopback_fleet.boxes[0]
    data = os.urandom(8 << 20)
    (box.root / "blob.bin").write_bytes(data)
    flipped: list[int] = []

    async def pipe(reader, writer, flip_after: int | None) -> None:
        seen = 0
        with contextlib.suppress(OSError):
            while chunk := await reader.read(1 << 16):
                if flip_after is not None and not flipped and seen + len(chunk) > flip_after:
                    at = max(flip_after - seen, len(chunk) // 2)
                    chunk = chunk[:at] + bytes([chunk[at] ^ 0x10]) + chunk[at + 1 :]
                    flipped.append(seen + at)
                seen += len(chunk)
                writer.write(chunk)
                await writer.drain()
        writer.close()

    async def relay(client_r, client_w) -> None:
        box_r, box_w = await asyncio.open_connection("127.0.0.1", box.port)
        await asyncio.gather(pipe(client_r, box_w, None), pipe(box_r, client_w, 2 << 20))

    proxy = await asyncio.start_server(relay, "127.0.0.1", 0)
    port = proxy.sockets[0].getsockname()[1]
    known = tmp_path / "known_hosts_proxy"
    key = box.host_key.export_public_key().decode().strip()
    known.write_text(f"[127.0.0.1]:{port} {key}\n")
    t = _transport(loopback_fleet, port, known)
    got = bytearray()
    await t.connect()
    try:
        with pytest.raises(TransportError):
            async for chunk in t.stream_bytes(f"cat {shlex.quote(str(box.root / 'blob.bin'))}"):
                got += chunk
    finally:
        await t.close()
        proxy.close()
    assert flipped, "the proxy never flipped a bit"
    assert bytes(got) == data[: len(got)] and len(got) < len(data)


def _transport(fleet, port, known_hosts=None) -> SshTransport:
    return SshTransport(
        "box-via-test",
        address="127.0.0.1",
        port=port,
        username=getpass.getuser(),
        identity_file=fleet.client_key,
        known_hosts=known_hosts or fleet.known_hosts,
    )


async def test_packets_are_logged_only_at_asyncssh_packet_level(loopback_fleet, caplog):
    """At asyncssh's usual debug level no received packet's log line is even formatted;
    at level 3 each is logged as asyncssh does."""
    box = loopback_fleet.boxes[0]
    data = os.urandom(1 << 20)
    (box.root / "blob.bin").write_bytes(data)
    formatted: list[str] = []
    original = asyncssh.packet.SSHPacketLogger._log_packet

    def counting(self, msg, *args):
        formatted.append(msg)
        return original(self, msg, *args)

    caplog.set_level(logging.DEBUG, logger="asyncssh")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(asyncssh.packet.SSHPacketLogger, "_log_packet", counting)
        before = asyncssh.logging.SSHLogger._debug_level
        for level in (1, ssh_tuning.PACKET_LOG_LEVEL):
            asyncssh.set_debug_level(level)
            try:
                t = _transport(loopback_fleet, box.port)
                await t.connect()
                try:
                    cat = f"cat {shlex.quote(str(box.root / 'blob.bin'))}"
                    assert b"".join([c async for c in t.stream_bytes(cat)]) == data
                finally:
                    await t.close()
            finally:
                asyncssh.set_debug_level(before)
            if level == 1:
                assert "Received" not in formatted
                caplog.clear()
    assert formatted.count("Received") > 32  # a packet at a time: 1 MiB is 32+ packets
    assert any("Received MSG_CHANNEL_DATA" in r.getMessage() for r in caplog.records)
