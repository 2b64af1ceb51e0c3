"""Where asyncssh's bulk receive path costs more than it needs to, for pulls of gigabytes.

On a pull the event loop's thread is the critical path: asyncssh parses every packet
that arrives (about 30,000 per GB: OpenSSH sends at most 32 KiB per channel read) in
Python, and in the TUI the same loop draws the screen. Each tuning here wraps or replaces
one asyncssh method and leaves the SSH protocol's parsing and checks to asyncssh; each
was measured (docs/pulls.md) and is tested against what asyncssh itself does.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable
from typing import Any

import asyncssh
import asyncssh.encryption
import asyncssh.logging
import asyncssh.packet
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

# Received bytes are handed to asyncssh at most this many at a time (see feed_in_packets).
FEED_BYTES = 33_000
KEEPALIVE_REARM_S = 1.0  # see rearm_keepalive_lazily
PACKET_LOG_LEVEL = 3  # asyncssh.set_debug_level at which asyncssh logs every packet
# asyncssh's own AES-GCM decryption, kept before any patching: what lean_gcm_decrypt's
# replacement is checked against (None where asyncssh has no such class).
ASYNCSSH_GCM_DECRYPT = getattr(
    getattr(asyncssh.encryption, "GCMEncryption", None), "decrypt_packet", None
)


def tune(conn: asyncssh.SSHClientConnection) -> None:
    """All of the below for a connection just made (``SSHClient.connection_made``): before
    its key exchange, so its first encrypted packet already takes the lean path."""
    feed_in_packets(conn)
    rearm_keepalive_lazily(conn)
    lean_gcm_decrypt()
    quiet_packet_logging()


def feed_in_packets(conn: asyncssh.SSHClientConnection) -> None:
    """Hand asyncssh each socket read a packet's worth at a time.

    asyncssh appends a read (up to 256 KiB) to one ``bytes`` buffer and cuts each packet
    (32 KiB from OpenSSH) off its front, copying the rest twice per packet: every byte of
    a bulk transfer was copied about eight times, a fifth of this side's CPU in memmove
    during a pull (perf). In pieces of about one packet the rest stays short. This wraps
    the connection's ``data_received`` (the asyncio protocol method the socket transport
    calls), so asyncssh's own parsing is unchanged.
    """
    receive = conn.data_received

    def data_received(data: bytes, datatype: object = None) -> None:
        if len(data) <= FEED_BYTES:
            receive(data, datatype)
            return
        view = memoryview(data)
        for start in range(0, len(view), FEED_BYTES):
            if conn.is_closed():
                return
            receive(view[start : start + FEED_BYTES], datatype)  # type: ignore[arg-type]

    conn.data_received = data_received  # type: ignore[method-assign]


def rearm_keepalive_lazily(conn: asyncssh.SSHClientConnection) -> None:
    """Re-arm asyncssh's keepalive timer at most once a second, not on every piece fed in.

    asyncssh cancels its keepalive timer and schedules a new one on every
    ``data_received``: with a piece per packet that is ~30,000 loop timers per GB
    pulled, 5% of this side's time (py-spy). Re-armed at most once a second, a
    keepalive goes out after 9-10 s of silence instead of exactly 10 s; one that goes out
    early is answered and changes nothing. Where asyncssh has no such method (a future
    version), nothing is changed.
    """
    reset = getattr(conn, "_reset_keepalive_timer", None)
    if reset is None:
        return
    loop = asyncio.get_running_loop()
    last = -KEEPALIVE_REARM_S

    def rearm() -> None:
        nonlocal last
        now = loop.time()
        if now - last >= KEEPALIVE_REARM_S:
            last = now
            reset()

    conn._reset_keepalive_timer = rearm  # type: ignore[method-assign]


@functools.cache
def lean_gcm_decrypt() -> bool:
    """Install, once per process, an AES-GCM receive path that keeps one AESGCM per key.

    asyncssh's ``GCMEncryption.decrypt_packet`` joins a packet's pieces twice (the first
    block's tail with the rest, then that with the tag: two 32 KiB copies) and builds a
    new ``AESGCM`` for every packet (key checks, OpenSSL's cipher fetch). Receiving 1 GB,
    that shim was about a fifth of the event loop's time, where AES-GCM itself was 4 %
    (py-spy). This one joins once and keeps the ``AESGCM`` on asyncssh's cipher object,
    whose key never changes (a re-key makes a new one). The decryption and the tag check
    are cryptography's, as before, the nonce still comes from and advances in asyncssh's
    cipher, and a packet that fails its tag still gives None, which asyncssh turns into
    a MAC error and a dropped connection.

    Patched on the class (asyncssh makes one object per direction and key exchange), and
    only once it has decrypted packets exactly as asyncssh does and refused what asyncssh
    refuses (``_same_as_asyncssh``); an asyncssh laid out differently keeps its own.
    Returns whether it is installed.
    """
    if ASYNCSSH_GCM_DECRYPT is None or not _same_as_asyncssh(
        decrypt_gcm_packet, ASYNCSSH_GCM_DECRYPT
    ):
        return False
    asyncssh.encryption.GCMEncryption.decrypt_packet = decrypt_gcm_packet  # type: ignore[method-assign]
    return True


def decrypt_gcm_packet(
    self: Any, seq: int, first: bytes, rest: bytes, header_len: int, mac: bytes
) -> bytes | None:
    """``GCMEncryption.decrypt_packet``, joining once and with the cipher's AESGCM kept."""
    cipher = self._cipher
    aead = cipher.__dict__.get("_rgt_aead")
    if aead is None:
        aead = cipher._rgt_aead = AESGCM(cipher._key)
    try:
        data = aead.decrypt(
            cipher._iv, b"".join((first[header_len:], rest, mac)), first[:header_len]
        )
    except InvalidTag:
        data = None
    cipher._update_iv()
    return data


def _same_as_asyncssh(ours: Callable, theirs: Callable) -> bool:
    """Do ``ours`` and asyncssh's ``theirs`` open packets sealed by asyncssh to the same
    plaintext, packet after packet (the nonce advances with each), for both AES-GCM key
    sizes, each with a key of its own (so a decryption that kept one key for all fails),
    and do both refuse a packet with one bit changed in its clear length (authenticated,
    not encrypted), its ciphertext or its tag?"""
    try:
        return all(
            _opens_alike(ours, theirs, alg, os.urandom(key_size), os.urandom(12))
            for alg, key_size in ((b"aes128-gcm@openssh.com", 16), (b"aes256-gcm@openssh.com", 32))
        )
    except Exception:  # noqa: BLE001 - any surprise: asyncssh is not what was checked
        return False


def _opens_alike(ours: Callable, theirs: Callable, alg: bytes, key: bytes, iv: bytes) -> bool:
    def fresh() -> Any:
        return asyncssh.encryption.get_encryption(alg, key, iv)

    sealer, mine, reference = fresh(), fresh(), fresh()
    for seq in range(3):
        payload = os.urandom(32 * (seq + 1))
        sealed, tag = sealer.encrypt_packet(seq, len(payload).to_bytes(4, "big"), payload)
        args = (seq, sealed[:16], sealed[16:], 4, tag)
        if not ours(mine, *args) == theirs(reference, *args) == payload:
            return False
    sealed, tag = fresh().encrypt_packet(0, (64).to_bytes(4, "big"), os.urandom(64))
    for at in (2, 20, len(sealed) + 3):
        forged = bytearray(sealed + tag)
        forged[at] ^= 1
        args = (0, bytes(forged[:16]), bytes(forged[16:-16]), 4, bytes(forged[-16:]))
        if ours(fresh(), *args) is not None or theirs(fresh(), *args) is not None:
            return False
    return True


@functools.cache
def quiet_packet_logging() -> bool:
    """Skip asyncssh's per-packet log line, once per process, while it would not be written.

    For every packet it receives, asyncssh formats a log line (the type's name, a byte
    count) and only then asks whether packets are logged at all, which they are only at
    debug level 3 (``asyncssh.set_debug_level(3)``). Receiving 1 GB that was 9 % of the
    event loop's CPU. This asks first, on every packet: at level 3 each is logged as
    before. Returns whether it is installed (not where asyncssh is laid out differently).
    """
    levels = asyncssh.logging.SSHLogger
    try:
        log_received = asyncssh.packet.SSHPacketLogger.log_received_packet
    except AttributeError:
        return False
    if not isinstance(getattr(levels, "_debug_level", None), int):
        return False

    def log_received_packet(
        self: Any, pkttype: int, pktid: int | None, packet: Any, note: str = ""
    ) -> None:
        if levels._debug_level >= PACKET_LOG_LEVEL:
            log_received(self, pkttype, pktid, packet, note)

    asyncssh.packet.SSHPacketLogger.log_received_packet = log_received_packet  # type: ignore[method-assign]
    return True
