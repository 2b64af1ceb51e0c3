"""SSH transport: one persistent asyncssh connection per host.

Ours is the only host-key check (DESIGN.md, Trust): the keys the known_hosts files hold
for the box are handed to asyncssh explicitly (``known_hosts.py``), so no ssh_config line
can switch checking off, and a refusal says which key was presented and which one was
expected, with the exact fix. Nothing of the user's goes to a box whatever ssh_config
says: no agent or X11 forwarding, no environment, no Kerberos credentials, no pty, no
RemoteCommand. Text from a box is decoded with replacement, so no byte can drop the
connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import shlex
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from pathlib import Path

import asyncssh

from rgt_tui.transport.base import (
    MAX_OUTPUT_BYTES,
    MAX_STREAM_LINE,
    CommandResult,
    FileStat,
    RangeReads,
    TransportError,
    checked_blocks,
    overlong_line,
)
from rgt_tui.transport.known_hosts import (
    DEFAULT_KNOWN_HOSTS,
    KeyVerdict,
    KnownKeys,
    append_line,
    host_key_algs,
    key_error,
    parse_jump,
    public_line,
    read_known_keys,
    resolve_destination,
)
from rgt_tui.transport.sftp_reads import default_in_flight, parallel_blocks, read_serially
from rgt_tui.transport.ssh_stream import (
    command_channel,
    run_capped,
    stream_channel,
)
from rgt_tui.transport.ssh_stream import describe as _describe
from rgt_tui.transport.ssh_stream import send_input as _send_input

CONNECT_TIMEOUT_S = 10.0
# Bytes per SFTP read where the box states no limit (SFTP's own safe size).
SFTP_FALLBACK_BLOCK = 32 * 1024
# Three missed keepalives 10 s apart declare the link dead, well before TCP would
# (asyncssh's own keepalive_interval / keepalive_count_max options).
KEEPALIVE_INTERVAL_S = 10.0
KEEPALIVE_COUNT_MAX = 3
PREFERRED_CIPHERS = (
    "aes128-gcm@openssh.com",
    "aes256-gcm@openssh.com",
    "chacha20-poly1305@openssh.com",
    "aes128-ctr",
    "aes256-ctr",
)
# Each channel's receive window (asyncssh's public ``window`` option; its default is
# 2 MiB). A box across an ocean at 1 Gbit/s needs 125 MB/s x 0.2 s = 25 MB in flight.
# One big window does not get there: against OpenSSH 9.2's sshd, more than 12-16 MiB in
# flight on one channel stalls (sshd at full CPU sending a few MB/s; 8 MiB never did,
# scripts/bench_pull.py), and asyncssh re-opens the window at half, so a channel moves
# about window/2 per round trip. A pull therefore spreads its large files over several
# SFTP sessions (``open_reader(lane=)``), 8 MiB each. The cost is memory only when this
# side stops reading a channel: up to this much per such channel is buffered here.
WINDOW_BYTES = 8 * 2**20
# Set explicitly on every connection (hops included): explicit arguments win over
# ssh_config, so a lax ~/.ssh/config (ForwardAgent yes, SendEnv, RequestTTY force, ...)
# cannot hand a rented box anything of the user's.
NOTHING_OF_THE_USERS = {
    "agent_forwarding": False,  # root on the box could sign with the user's keys
    "x11_forwarding": False,
    "gss_delegate_creds": False,  # Kerberos tickets
    "send_env": None,  # SendEnv
    "env": None,  # SetEnv
    "command": None,  # RemoteCommand: every channel names its own command
    "request_pty": False,  # RequestTTY force would mangle binary output
    "x509_trusted_certs": None,  # host trust comes from known_hosts only
    "ignore_encrypted": True,  # a key needing a passphrase is skipped: the agent signs
    # No byte from a box may raise inside asyncssh (that drops the whole connection).
    "errors": "replace",
    "utf8_decode_errors": "replace",
}


class _CheckingClient(asyncssh.SSHClient):
    """Asks the verdict about keys no trusted line holds, so a refusal can say why."""

    def __init__(self, verdict: KeyVerdict) -> None:
        self._verdict = verdict

    def validate_host_public_key(
        self, host: str, addr: str, port: int, key: asyncssh.SSHKey
    ) -> bool:
        return self._verdict.check_key(key)

    def validate_host_ca_key(self, host: str, addr: str, port: int, key: asyncssh.SSHKey) -> bool:
        return self._verdict.check_authority(key)


@dataclass(frozen=True)
class _Plan:
    """What one connection attempt needs, worked out off the event loop (files, config)."""

    known: KnownKeys
    jump: str | None  # ssh_config's ProxyJump: hops this transport opens itself
    identity_needs_agent: bool  # identity_file needs a passphrase; the agent signs instead


def _agent_running() -> bool:
    sock = os.environ.get("SSH_AUTH_SOCK")
    return bool(sock) and os.path.exists(sock)


class SshTransport(RangeReads):
    """A Transport over one persistent asyncssh connection."""

    def __init__(
        self,
        host: str,
        *,
        address: str,
        port: int | None = None,
        username: str | None = None,
        identity_file: Path | None = None,
        known_hosts: Path | None = None,
        host_key: str = "strict",
        connect_timeout: float = CONNECT_TIMEOUT_S,
    ) -> None:
        """``known_hosts``: the file trusted keys are read from first and added to (default
        ~/.ssh/known_hosts, resolved at connect time). ``host_key``: "strict", or
        "accept-new" to record a first key (a changed key is still refused)."""
        self.host = host
        self.address = address
        self.port = port
        self.username = username
        self.identity_file = identity_file
        self._known_hosts = known_hosts
        self.accept_new = host_key == "accept-new"
        self.connect_timeout = connect_timeout
        self._conn: asyncssh.SSHClientConnection | None = None
        self._hops: list[asyncssh.SSHClientConnection] = []  # ProxyJump, nearest first
        self._host_key: asyncssh.SSHKey | None = None
        self._lock = asyncio.Lock()
        # SFTP sessions by lane, each with the connection it belongs to. Lane 0 is shared
        # by log following, stats and pulls; a pull gives each large file in flight its own.
        self._sftp: dict[int, tuple[asyncssh.SFTPClient, asyncssh.SSHClientConnection]] = {}
        self._sftp_locks: dict[int, asyncio.Lock] = {}

    @property
    def known_hosts(self) -> Path:
        """The file trusted keys are read from first and added to."""
        return (self._known_hosts or DEFAULT_KNOWN_HOSTS).expanduser()

    @property
    def connected(self) -> bool:
        conn = self._conn
        return conn is not None and not conn.is_closed()

    @property
    def host_key_fingerprint(self) -> str | None:
        """``SHA256:...`` of the host key the box presented on the last connection (the
        plain key of a host certificate); None before the first connection."""
        key = self._host_key
        return key.get_fingerprint("sha256") if key is not None else None

    async def connect(self) -> None:
        """One connection attempt; TransportError (HostKeyError for a refused host key)
        says why it failed. Nothing else escapes: one host's problem (a key that needs a
        passphrase, an unreadable ssh_config) never fails another host's work."""
        async with self._lock:
            if self.connected:
                return
            await self._close_hops()
            plan = await asyncio.to_thread(self._plan, self.address, self.port, self.username)
            tunnel = await self._open_hops(plan.jump) if plan.jump else None
            try:
                conn = await self._open(self.address, self.port, self.username, plan, tunnel)
            except BaseException:
                await self._close_hops()
                raise
            self._conn = conn
            self._host_key = conn.get_server_host_key()

    def _plan(
        self, address: str, port: int | None, username: str | None, hop: bool = False
    ) -> _Plan:
        """Read ssh_config, the known_hosts files and the identity file (blocking I/O)."""
        try:
            dest = resolve_destination(address, port, username)
        except (OSError, ValueError) as exc:
            raise TransportError(
                self.host,
                f"cannot read the ssh_config for {address}: {exc}",
                "fix ~/.ssh/config (asyncssh reads it as OpenSSH does)",
            ) from exc
        known = read_known_keys([self.known_hosts, *dest.known_hosts], dest.key_name)
        needs_agent = not hop and self._identity_needs_agent()
        return _Plan(known, dest.jump, needs_agent)

    def _identity_needs_agent(self) -> bool:
        """Whether identity_file needs a passphrase (rgt-tui never asks for one) while an
        ssh-agent runs: the agent's copy of the key signs then. TransportError when the
        file cannot be used at all."""
        if self.identity_file is None:
            return False
        path = self.identity_file.expanduser()
        try:
            asyncssh.read_private_key(str(path))
        except asyncssh.KeyImportError as exc:
            if "passphrase" not in str(exc).lower():
                raise TransportError(
                    self.host,
                    f"identity_file {path} is not a private key rgt-tui can read ({exc})",
                    "point identity_file at the private key, not its .pub",
                ) from exc
            if _agent_running():
                return True
            raise TransportError(
                self.host,
                f"identity_file {path} needs a passphrase, and rgt-tui never asks for one",
                f'add it to an ssh-agent: eval "$(ssh-agent)" && ssh-add {shlex.quote(str(path))}'
                " — rgt-tui then signs with the agent's copy",
            ) from exc
        except OSError as exc:
            raise TransportError(
                self.host,
                f"identity_file {path}: {exc.strerror or exc}",
                "check identity_file in the fleet file",
            ) from exc
        return False

    async def _open_hops(self, jump: str) -> asyncssh.SSHClientConnection:
        """Open ssh_config's ProxyJump hops here, each with the same host-key check and
        the same nothing-forwarded options (asyncssh would open them with ssh_config's
        own settings: unchecked keys and a forwarded agent under a lax config)."""
        tunnel: asyncssh.SSHClientConnection | None = None
        for hop in jump.split(","):
            user, host, port = parse_jump(hop)
            plan = await asyncio.to_thread(self._plan, host, port, user, True)
            try:
                tunnel = await self._open(host, port, user, plan, tunnel, hop=True)
            except BaseException:
                await self._close_hops()
                raise
            self._hops.append(tunnel)
        assert tunnel is not None
        return tunnel

    async def _open(
        self,
        address: str,
        port: int | None,
        username: str | None,
        plan: _Plan,
        tunnel: asyncssh.SSHClientConnection | None,
        *,
        hop: bool = False,
    ) -> asyncssh.SSHClientConnection:
        """One asyncssh connection whose host key only ``plan.known`` can vouch for."""
        # accept-new is the box's opt-in; a jump host (shared, long-lived) stays strict.
        verdict = KeyVerdict(plan.known, accept_new=self.accept_new and not hop)
        options: dict = {
            **NOTHING_OF_THE_USERS,
            "known_hosts": plan.known.for_asyncssh(),
            "server_host_key_algs": host_key_algs(plan.known),
            "tunnel": tunnel,
            "keepalive_interval": KEEPALIVE_INTERVAL_S,
            "keepalive_count_max": KEEPALIVE_COUNT_MAX,
            "connect_timeout": self.connect_timeout,
            # AES-GCM first: one AES-NI call per packet, where asyncssh's chacha20 path
            # costs several; it doubled bulk SFTP reads here (docs/pulls.md). A user's
            # ssh_config Ciphers line still applies to what the server can take.
            "encryption_algs": PREFERRED_CIPHERS,
            "window": WINDOW_BYTES,
        }
        if port is not None:
            options["port"] = port
        if username is not None:
            options["username"] = username
        if self.identity_file is not None and not hop:
            options["client_keys"] = [str(self.identity_file.expanduser())]
        where = f"jump host {address}" if hop else None
        try:
            conn = await asyncssh.connect(
                address, client_factory=lambda: _CheckingClient(verdict), **options
            )
        except asyncssh.HostKeyNotVerifiable as exc:
            jump = address if hop else None  # whose key it is: the hop's, not the box's
            raise key_error(self.host, verdict, self.known_hosts, exc.reason, jump) from exc
        except asyncssh.PermissionDenied as exc:
            raise TransportError(
                self.host,
                f"authentication refused{' by ' + where if where else ''} ({exc.reason})",
                self._auth_fix(plan),
            ) from exc
        except asyncio.TimeoutError as exc:
            raise TransportError(
                self.host,
                f"no answer{' from ' + where if where else ''} within {self.connect_timeout:g} s",
                "is the box running?",
            ) from exc
        except (OSError, asyncssh.Error) as exc:
            raise TransportError(self.host, _describe(exc)) from exc
        except ValueError as exc:  # a key or an ssh_config value asyncssh cannot use
            raise TransportError(
                self.host,
                f"cannot connect with these SSH settings: {exc}",
                "check identity_file in the fleet file and ~/.ssh/config",
            ) from exc
        if verdict.accepted is not None:
            await self._record_new_key(conn, plan.known.name, verdict.accepted)
        return conn

    def _auth_fix(self, plan: _Plan) -> str:
        if plan.identity_needs_agent:
            path = shlex.quote(str(self.identity_file.expanduser()))  # type: ignore[union-attr]
            return f"identity_file needs a passphrase and the ssh-agent lacks it: ssh-add {path}"
        return "check identity_file, or that the key is in ssh-agent / the box's authorized_keys"

    async def _record_new_key(
        self, conn: asyncssh.SSHClientConnection, name: str, key: asyncssh.SSHKey
    ) -> None:
        """host_key = accept-new: the box proved it holds this first key (the key
        exchange is signed with it); record it so a different key is refused next time."""
        path = self.known_hosts
        try:
            await asyncio.to_thread(append_line, path, f"{name} {public_line(key)}")
        except OSError as exc:
            conn.close()
            raise TransportError(
                self.host,
                f"host_key = accept-new could not record the box's key in {path}: "
                f"{exc.strerror or exc}",
                f"make {path.parent} writable, or set known_hosts for this host",
            ) from exc

    def _require(self) -> asyncssh.SSHClientConnection:
        if not self.connected:
            raise TransportError(self.host, "not connected")
        assert self._conn is not None
        return self._conn

    async def run(
        self,
        command: str,
        *,
        input: str | None = None,
        timeout: float | None = None,
        max_output: int = MAX_OUTPUT_BYTES,
    ) -> CommandResult:
        """Run a command to completion over the open connection, keeping at most
        ``max_output`` bytes of stdout and of stderr (past that the channel is closed and
        ``CommandResult.truncated`` says so)."""
        conn = self._require()
        return await run_capped(
            conn, self.host, command, input=input, timeout=timeout, max_output=max_output
        )

    async def stream_lines(self, command: str, *, input: str | None = None) -> AsyncIterator[str]:
        """Yield a long-lived command's stdout lines; raise TransportError on a drop."""
        async with self._streaming(command, input) as stdout:
            async for line in stdout:
                if not line:  # asyncssh's reader yields one "" at EOF
                    break
                # asyncssh hands over a line without its newline at EOF, or cut at the
                # channel window (8 MiB) when no newline came: that one is refused.
                if len(line) > MAX_STREAM_LINE or not (line.endswith("\n") or stdout.at_eof()):
                    raise overlong_line(self.host)
                yield line.rstrip("\n")

    def stream_bytes(
        self,
        command: str,
        *,
        input: str | None = None,
        window: int | None = None,
    ) -> AsyncIterator[bytes]:
        """Yield a long-lived command's stdout as raw chunks; raise TransportError on a drop
        or a failed command. ``window``: the channel's receive window (bytes in flight).
        The stream itself, not a wrapper re-yielding it: each layer costs a little for
        every packet of a large file. Closing it closes the channel."""
        return stream_channel(
            self._require,  # called when the stream starts: not connected raises there
            self.host,
            command_channel(self.host, command),
            input=input,
            window=window,
        )

    @contextlib.asynccontextmanager
    async def _streaming(
        self, command: str, input: str | None
    ) -> AsyncIterator[asyncssh.SSHReader]:
        """Start ``command`` with ``input`` on stdin, hand over its stdout (text), then
        check how it ended: a dropped connection or a failed command raises
        TransportError. (Byte streams go through ``ssh_stream.stream_channel``.)"""
        conn = self._require()
        try:
            process = await conn.create_process(command, encoding="utf-8", errors="replace")
        except (OSError, asyncssh.Error) as exc:
            raise TransportError(self.host, _describe(exc)) from exc
        send, eof = process.stdin.write, process.stdin.write_eof
        writing = asyncio.ensure_future(_send_input(send, eof, input))
        try:
            yield process.stdout
            await process.wait_closed()
        except (OSError, asyncssh.Error) as exc:
            raise TransportError(self.host, _describe(exc)) from exc
        finally:
            writing.cancel()
            process.close()
        if conn.is_closed():
            raise TransportError(self.host, "connection lost")
        status = process.exit_status
        if status not in (0, None) or process.exit_signal:
            err = _text(await _drain(process.stderr)).strip().splitlines()
            raise TransportError(
                self.host,
                f"remote command exited with status {status}: {err[-1] if err else 'no message'}",
            )

    async def sftp(self, lane: int = 0) -> asyncssh.SFTPClient:
        """The connection's SFTP client for ``lane``, started on first use and shared.

        Lane 0 serves every caller; a caller may ask for a lane of its own: a separate
        session with its own server process on the box (one the box refuses shares an
        open one). A client belongs to the current connection: after a drop and
        ``connect()``, the next call starts a fresh one. Callers must not close it.
        For file work beyond ``stat``/``read_range``/``open_reader`` (resumable pulls), use
        it directly: pass paths through ``sftp_path()`` (SFTP does not expand ``~``) and map
        errors through ``file_error``.
        """
        conn = self._require()
        async with self._sftp_locks.setdefault(lane, asyncio.Lock()):
            held = self._sftp.get(lane)
            if held is not None and held[1] is conn:
                return held[0]
            try:
                # A file name that is not UTF-8 must fail neither a listing nor its own
                # opening: names round-trip as os.fsdecode/os.fsencode do here.
                client = await conn.start_sftp_client(path_errors="surrogateescape")
            except (OSError, asyncssh.Error) as exc:
                if isinstance(exc, asyncssh.ChannelOpenError):
                    # The box allows no more sessions on this connection (sshd's
                    # MaxSessions, 10 by default): this lane shares another's.
                    client = await self._open_sftp(conn, lane)
                    if client is not None:
                        self._sftp[lane] = (client, conn)
                        return client
                raise TransportError(
                    self.host,
                    f"SFTP unavailable: {_describe(exc)}",
                    "enable the sftp subsystem in the box's sshd_config (Subsystem sftp ...)",
                ) from exc
            self._sftp[lane] = (client, conn)
            return client

    async def _open_sftp(
        self, conn: asyncssh.SSHClientConnection, refused: int
    ) -> asyncssh.SFTPClient | None:
        """An SFTP client already open on ``conn`` for a lane the box refused a session
        of its own; one still opening on another lane is waited for (lanes open at once,
        so the first refused may come before any is ready). None when there is none."""
        for _ in range(400):  # 20 s at most: a session opens in a few round trips
            for client, owner in list(self._sftp.values()):
                if owner is conn:
                    return client
            opening = [n for n, lock in self._sftp_locks.items() if n != refused and lock.locked()]
            if not opening:
                return None
            await asyncio.sleep(0.05)
        return None

    def file_error(self, exc: BaseException, path: str) -> Exception:
        """The exception a file operation on ``path`` should raise for an SFTP failure.

        Missing file → FileNotFoundError, refused → PermissionError, other SFTP refusals
        → OSError, and anything that means the session is gone → TransportError (the
        SFTP client is then dropped so the next call starts a new one).
        """
        if isinstance(exc, (asyncssh.SFTPNoSuchFile, asyncssh.SFTPNoSuchPath)):
            return FileNotFoundError(errno.ENOENT, f"no such file on {self.host}", path)
        if isinstance(exc, asyncssh.SFTPPermissionDenied):
            return PermissionError(errno.EACCES, f"permission denied on {self.host}", path)
        if isinstance(exc, asyncssh.SFTPError) and not isinstance(
            exc, (asyncssh.SFTPConnectionLost, asyncssh.SFTPNoConnection)
        ):
            return OSError(errno.EIO, f"{self.host}: {exc.reason}", path)
        self._sftp.clear()
        if isinstance(exc, TransportError):
            return exc
        if isinstance(exc, asyncssh.SFTPError):
            return TransportError(self.host, "connection lost")
        return TransportError(self.host, _describe(exc))

    async def stat(self, path: str) -> FileStat | None:
        """The file's size and mtime over SFTP (inode is None: SFTP v3 does not carry it)."""
        try:
            sftp = await self.sftp()
            attrs = await sftp.stat(sftp_path(path))
        except (asyncssh.SFTPNoSuchFile, asyncssh.SFTPNoSuchPath):
            return None
        except (OSError, asyncssh.Error) as exc:
            raise self.file_error(exc, path) from exc
        return _attrs_stat(attrs)

    async def open_reader(
        self,
        path: str,
        *,
        block_size: int | None = None,
        max_requests: int | None = None,
        lane: int = 0,
    ) -> SftpFileReader:
        """An open SFTP handle: like a local fd, it keeps reading the file after a rename.
        ``block_size`` (bytes per SFTP read; default the server's largest) and
        ``max_requests`` (reads in flight; default asyncssh's) shape ``blocks``: their
        product is what one file keeps in flight over the round trip. ``lane``: the SFTP
        session it goes through (``sftp``); each has its own channel window."""
        for name, value in (("block_size", block_size), ("max_requests", max_requests)):
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive, not {value}")
        try:
            sftp = await self.sftp(lane)
            # block_size=0: asyncssh's parallel reader is off (its requests outlive a
            # read that is cut off); sftp_reads keeps them in flight instead.
            handle = await sftp.open(sftp_path(path), "rb", block_size=0)
        except (OSError, asyncssh.Error) as exc:
            raise self.file_error(exc, path) from exc
        block = block_size or sftp.limits.max_read_len or SFTP_FALLBACK_BLOCK
        in_flight = max_requests or default_in_flight(block)
        return SftpFileReader(self, handle, path, block=block, in_flight=in_flight)

    async def open_lanes(self, lanes: Iterable[int]) -> None:
        """Start the SFTP sessions of ``lanes`` now, all at once (a session costs about five
        round trips to start: a second at 200 ms), so readers find them ready. A failure
        is left for the reader that needs the lane to report."""
        await asyncio.gather(*(self.sftp(lane) for lane in lanes), return_exceptions=True)

    async def close(self) -> None:
        self._sftp.clear()  # the sessions die with the connection
        conn, self._conn = self._conn, None
        if conn is not None:
            await _close_conn(conn)
        await self._close_hops()

    async def _close_hops(self) -> None:
        hops, self._hops = self._hops, []
        for conn in reversed(hops):
            await _close_conn(conn)


class SftpFileReader:
    """A FileReader over one open SFTP handle."""

    def __init__(
        self,
        transport: SshTransport,
        handle: asyncssh.SFTPClientFile,
        path: str,
        *,
        block: int = 0,
        in_flight: int = 0,
    ) -> None:
        """``handle``: opened with ``block_size=0`` (one request per asyncssh read);
        ``block`` bytes per request and ``in_flight`` requests at once for ``blocks``."""
        self._transport = transport
        self._handle: asyncssh.SFTPClientFile | None = handle
        self._path = path
        self._block = block or SFTP_FALLBACK_BLOCK
        self._in_flight = in_flight or default_in_flight(self._block)

    async def _read_once(self, size: int, offset: int) -> bytes:
        """One SFTP read request; ``b""`` at the end of the file."""
        data = await self._require().read(size, offset)
        if len(data) > size:  # asyncssh passes on whatever the box answers
            raise TransportError(
                self._transport.host,
                f"{self._path}: the box answered a read badly ({len(data)} bytes for {size})",
            )
        return bytes(data)

    def _require(self) -> asyncssh.SFTPClientFile:
        if self._handle is None:
            raise ValueError("reader is closed")
        return self._handle

    async def read(self, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes from ``offset``; ``b""`` at or past the end."""
        self._require()
        if length <= 0:
            return b""
        try:
            return await read_serially(self._read_once, offset, length, self._block)
        except (OSError, asyncssh.Error) as exc:
            raise self._transport.file_error(exc, self._path) from exc

    async def blocks(self, offset: int, length: int) -> AsyncIterator[tuple[int, bytes]]:
        """``[offset, offset + length)`` with up to ``max_requests`` reads of ``block_size``
        in flight (``sftp_reads.parallel_blocks``: a short read asks again for the rest),
        pieces in any order, each checked (``checked_blocks``)."""
        self._require()
        if offset < 0 or length < 0:
            raise ValueError(f"blocks({offset}, {length}): a negative offset or length")
        if not length:
            return
        try:
            pieces = parallel_blocks(self._read_once, offset, length, self._block, self._in_flight)
            async for piece in checked_blocks(
                pieces,
                offset,
                length,
                host=self._transport.host,
                path=self._path,
                more_after=self._more_after,
            ):
                yield piece
        except (OSError, asyncssh.Error) as exc:
            raise self._transport.file_error(exc, self._path) from exc

    async def _more_after(self, end: int) -> bool:
        """Whether the file holds a byte at ``end`` (a short answer must be its end)."""
        return bool(await self._require().read(1, end))

    async def fstat(self) -> FileStat:
        """The open file's attributes (fstat on the handle, not stat on the path)."""
        try:
            return _attrs_stat(await self._require().stat())
        except (OSError, asyncssh.Error) as exc:
            raise self._transport.file_error(exc, self._path) from exc

    async def close(self) -> None:
        """Close the handle; errors are ignored since the connection may be gone."""
        handle, self._handle = self._handle, None
        if handle is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(handle.close(), 5)


def sftp_path(path: str) -> str:
    """A box path as SFTP wants it: relative paths resolve against the login HOME, so
    ``~/x`` becomes ``x`` (SFTP does not expand ``~``). Use it for raw ``sftp()`` calls."""
    if path == "~":
        return "."
    if path.startswith("~/"):
        return path[2:] or "."
    return path


async def _close_conn(conn: asyncssh.SSHClientConnection) -> None:
    conn.close()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(conn.wait_closed(), 5)


def _attrs_stat(attrs: asyncssh.SFTPAttrs) -> FileStat:
    mtime = float(attrs.mtime or 0) + (attrs.mtime_ns or 0) / 1e9
    return FileStat(size=attrs.size or 0, mtime=mtime, inode=None)


async def _drain(stream: asyncssh.SSHReader) -> str | bytes:
    with contextlib.suppress(Exception):
        return await asyncio.wait_for(stream.read(), 2)
    return ""


def _text(value: str | bytes | None) -> str:
    if value is None:
        return ""
    return value.decode(errors="replace") if isinstance(value, bytes) else value
