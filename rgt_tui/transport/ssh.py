"""SSH transport: one persistent asyncssh connection per host.

Host keys are checked here rather than by asyncssh's ``known_hosts`` argument so that a
refusal can say *which* key was presented and which one was expected: an unknown host
and a changed key (a re-created box, T6) get different messages, each with the
fingerprints and the exact command that fixes it. Nothing is ever accepted silently.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import shlex
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import asyncssh

from rgt_tui.transport.base import (
    CommandResult,
    FileStat,
    HostKeyError,
    Later,
    RangeReads,
    TransportError,
)
from rgt_tui.transport.ssh_stream import (
    command_channel,
    socket_channel,
    stream_channel,
)
from rgt_tui.transport.ssh_stream import describe as _describe
from rgt_tui.transport.ssh_stream import send_later as _send_later
from rgt_tui.transport.ssh_tuning import tune

CONNECT_TIMEOUT_S = 10.0
# Three missed keepalives 10 s apart declare the link dead, well before TCP would.
KEEPALIVE_INTERVAL_S = 10.0
KEEPALIVE_COUNT_MAX = 3
DEFAULT_KNOWN_HOSTS = Path("~/.ssh/known_hosts")
PREFERRED_CIPHERS = (
    "aes128-gcm@openssh.com",
    "aes256-gcm@openssh.com",
    "chacha20-poly1305@openssh.com",
    "aes128-ctr",
    "aes256-ctr",
)
# A bigger receive window than asyncssh's 2 MiB keeps a far box's pipe full
# (2 MiB per round trip is only 20 MB/s at 100 ms).
WINDOW_BYTES = 16 * 2**20


@dataclass
class _KeyVerdict:
    """What the host-key check saw, kept for the error message after asyncssh refuses."""

    presented: asyncssh.SSHKey | None = None
    known: list[asyncssh.SSHKey] = field(default_factory=list)
    revoked: bool = False


def _fingerprint(key: asyncssh.SSHKey) -> str:
    return f"{key.get_algorithm()} {key.get_fingerprint('sha256')}"


def _known_hosts_name(host: str, port: int | None) -> str:
    """The name OpenSSH writes into known_hosts for host:port."""
    return host if port in (None, 22) else f"[{host}]:{port}"


class _CheckingClient(asyncssh.SSHClient):
    """Validates the server's host key against known_hosts, remembering the verdict."""

    def __init__(self, known_hosts: Path, verdict: _KeyVerdict) -> None:
        self._known_hosts = known_hosts
        self._verdict = verdict

    def connection_made(self, conn: asyncssh.SSHClientConnection) -> None:
        tune(conn)

    def validate_host_public_key(
        self, host: str, addr: str, port: int, key: asyncssh.SSHKey
    ) -> bool:
        self._verdict.presented = key
        trusted, revoked = _match(self._known_hosts, host, addr, port)
        self._verdict.known = trusted
        self._verdict.revoked = key in revoked
        return key in trusted and not self._verdict.revoked


def _match(known_hosts: Path, host: str, addr: str, port: int | None) -> tuple[list, list]:
    if not known_hosts.exists():
        return [], []
    try:
        matched = asyncssh.match_known_hosts(str(known_hosts), host, addr, port)
    except (OSError, ValueError, asyncssh.Error):
        return [], []
    return list(matched[0]), list(matched[2])


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
        connect_timeout: float = CONNECT_TIMEOUT_S,
    ) -> None:
        self.host = host
        self.address = address
        self.port = port
        self.username = username
        self.identity_file = identity_file
        self.known_hosts = (known_hosts or DEFAULT_KNOWN_HOSTS).expanduser()
        self.connect_timeout = connect_timeout
        self._conn: asyncssh.SSHClientConnection | None = None
        self._lock = asyncio.Lock()
        # SFTP sessions by lane, each with the connection it belongs to. Lane 0 is shared
        # by log following, stats and pulls; a pull gives each large file in flight its own.
        self._sftp: dict[int, tuple[asyncssh.SFTPClient, asyncssh.SSHClientConnection]] = {}
        self._sftp_locks: dict[int, asyncio.Lock] = {}
        # The quickest SFTP round trip seen (an upper bound on the link's): sizes how many
        # reads a pull keeps in flight (remote_file.reads_in_flight).
        self.sftp_round_trip_s: float | None = None

    @property
    def connected(self) -> bool:
        conn = self._conn
        return conn is not None and not conn.is_closed()

    def _host_key_algs(self) -> list[str] | None:
        """Ask for the key type known_hosts holds, so a box with several keys shows that one."""
        trusted, _ = _match(self.known_hosts, self.address, self.address, self.port)
        algs = [k.get_algorithm() for k in trusted]
        return list(dict.fromkeys(algs)) or None

    async def connect(self) -> None:
        """One connection attempt; TransportError (or HostKeyError) says why it failed."""
        async with self._lock:
            if self.connected:
                return
            verdict = _KeyVerdict()
            options: dict = {
                "known_hosts": (),  # checking happens in _CheckingClient
                "keepalive_interval": KEEPALIVE_INTERVAL_S,
                "keepalive_count_max": KEEPALIVE_COUNT_MAX,
                "connect_timeout": self.connect_timeout,
                # AES-GCM first: one AES-NI call per packet, where asyncssh's chacha20 path
                # costs several; it doubled bulk SFTP reads here (docs/pulls.md). A user's
                # ssh_config Ciphers line still applies to what the server can take.
                "encryption_algs": PREFERRED_CIPHERS,
                "window": WINDOW_BYTES,
            }
            if self.port is not None:
                options["port"] = self.port
            if self.username is not None:
                options["username"] = self.username
            if self.identity_file is not None:
                options["client_keys"] = [str(self.identity_file.expanduser())]
            algs = self._host_key_algs()
            if algs:
                options["server_host_key_algs"] = algs
            try:
                self._conn = await asyncssh.connect(
                    self.address,
                    client_factory=lambda: _CheckingClient(self.known_hosts, verdict),
                    **options,
                )
            except asyncssh.HostKeyNotVerifiable as exc:
                raise self._host_key_error(verdict) from exc
            except asyncssh.PermissionDenied as exc:
                raise TransportError(
                    self.host,
                    f"authentication refused ({exc.reason})",
                    "check identity_file, or that the key is in ssh-agent / the box's authorized_keys",
                ) from exc
            except asyncio.TimeoutError as exc:
                raise TransportError(
                    self.host, f"no answer within {self.connect_timeout:g} s", "is the box running?"
                ) from exc
            except (OSError, asyncssh.Error) as exc:
                raise TransportError(self.host, _describe(exc)) from exc

    def _host_key_error(self, verdict: _KeyVerdict) -> HostKeyError:
        name = _known_hosts_name(self.address, self.port)
        kh = shlex.quote(str(self.known_hosts))
        presented = verdict.presented
        if presented is None:
            return HostKeyError(self.host, "host key could not be checked", "retry", presented="?")
        fp = _fingerprint(presented)
        line = f"{name} {presented.export_public_key('openssh').decode().strip()}"
        trust = (
            f"if {fp} is the fingerprint your provider shows, run: echo {shlex.quote(line)} >> {kh}"
        )
        if verdict.revoked:
            return HostKeyError(
                self.host,
                f"host key {fp} is marked @revoked in {self.known_hosts}",
                "do not connect; ask the provider",
                presented=fp,
            )
        if verdict.known:
            old = tuple(_fingerprint(k) for k in verdict.known)
            return HostKeyError(
                self.host,
                f"HOST KEY CHANGED: known_hosts has {', '.join(old)}, the box now shows {fp}. "
                "Expected when a box was re-created (T6); otherwise someone may be intercepting",
                f"ssh-keygen -R {shlex.quote(name)} -f {kh}, then {trust}",
                presented=fp,
                known=old,
            )
        return HostKeyError(
            self.host,
            f"unknown host key {fp} ({name} is not in {self.known_hosts})",
            trust,
            presented=fp,
        )

    def _require(self) -> asyncssh.SSHClientConnection:
        if not self.connected:
            raise TransportError(self.host, "not connected")
        assert self._conn is not None
        return self._conn

    async def run(
        self, command: str, *, input: str | None = None, timeout: float | None = None
    ) -> CommandResult:
        """Run a command to completion over the open connection."""
        conn = self._require()
        try:
            result = await conn.run(command, input=input, timeout=timeout, check=False)
        except asyncssh.TimeoutError as exc:
            raise TransportError(
                self.host, f"command timed out after {timeout:g} s: {command[:60]}"
            ) from exc
        except (OSError, asyncssh.Error) as exc:
            raise TransportError(self.host, _describe(exc)) from exc
        return CommandResult(result.exit_status, _text(result.stdout), _text(result.stderr))

    async def stream_lines(self, command: str, *, input: str | None = None) -> AsyncIterator[str]:
        """Yield a long-lived command's stdout lines; raise TransportError on a drop."""
        async with self._streaming(command, input) as stdout:
            async for line in stdout:
                if not line:  # asyncssh's reader yields one "" at EOF
                    break
                yield line.rstrip("\n")

    def stream_bytes(
        self,
        command: str,
        *,
        input: str | None = None,
        later: Later | None = None,
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
            later=later,
            window=window,
        )

    def stream_socket(
        self,
        path: str,
        *,
        input: str | None = None,
        later: Later | None = None,
        window: int | None = None,
    ) -> AsyncIterator[bytes]:
        """Connect to the Unix socket ``path`` on the box through this connection (sshd
        connects it; no shell starts), write ``input`` then ``later``'s texts to it (then
        end of input) and yield what it sends as raw chunks. SocketRefused if sshd will not
        connect it; TransportError on a drop. Only SSH has this: callers check for it."""
        return stream_channel(
            self._require,
            self.host,
            socket_channel(self.host, path),
            input=input,
            later=later,
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
            process = await conn.create_process(command, encoding="utf-8")
        except (OSError, asyncssh.Error) as exc:
            raise TransportError(self.host, _describe(exc)) from exc
        send, eof = process.stdin.write, process.stdin.write_eof
        writing = asyncio.ensure_future(_send_later(send, eof, input, None))
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

        Lane 0 serves every caller; a pull reads each large file in flight on a lane of its
        own, a separate session with its own server process on the box. One session serving
        three files at once made sshd use ~40% more CPU and the large files take ~20% longer
        on the bench (docs/pulls.md). A client belongs to the current connection: after a
        drop and ``connect()``, the next call starts a fresh one. Callers must not close it.
        For file work beyond ``stat``/``read_range``/``open_reader`` (resumable pulls), use
        it directly: pass paths through ``sftp_path()`` (SFTP does not expand ``~``) and map
        errors through ``file_error``.
        """
        conn = self._require()
        async with self._sftp_locks.setdefault(lane, asyncio.Lock()):
            held = self._sftp.get(lane)
            if held is not None and held[1] is conn:
                return held[0]
            started = time.monotonic()
            try:
                client = await conn.start_sftp_client()
            except (OSError, asyncssh.Error) as exc:
                if lane and isinstance(exc, asyncssh.ChannelOpenError):
                    # The box allows no more sessions on this connection (sshd's
                    # MaxSessions, 10 by default): this lane shares lane 0's.
                    client = await self.sftp(0)
                    self._sftp[lane] = (client, conn)
                    return client
                raise TransportError(
                    self.host,
                    f"SFTP unavailable: {_describe(exc)}",
                    "enable the sftp subsystem in the box's sshd_config (Subsystem sftp ...)",
                ) from exc
            # Opening the channel, starting the subsystem and the SFTP handshake are three
            # round trips; the server's start-up only makes this estimate larger (safe).
            trip = (time.monotonic() - started) / 3
            if self.sftp_round_trip_s is None or trip < self.sftp_round_trip_s:
                self.sftp_round_trip_s = trip
            self._sftp[lane] = (client, conn)
            return client

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

    async def open_reader(self, path: str) -> SftpFileReader:
        """An open SFTP handle: like a local fd, it keeps reading the file after a rename."""
        try:
            sftp = await self.sftp()
            handle = await sftp.open(sftp_path(path), "rb")
        except (OSError, asyncssh.Error) as exc:
            raise self.file_error(exc, path) from exc
        return SftpFileReader(self, handle, path)

    async def close(self) -> None:
        self._sftp.clear()  # the sessions die with the connection
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.wait_closed(), 5)


class SftpFileReader:
    """A FileReader over one open SFTP handle."""

    def __init__(self, transport: SshTransport, handle: asyncssh.SFTPClientFile, path: str) -> None:
        self._transport = transport
        self._handle: asyncssh.SFTPClientFile | None = handle
        self._path = path

    def _require(self) -> asyncssh.SFTPClientFile:
        if self._handle is None:
            raise ValueError("reader is closed")
        return self._handle

    async def read(self, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes from ``offset``; ``b""`` at or past the end."""
        handle = self._require()
        if length <= 0:
            return b""
        try:
            data = await handle.read(length, offset)
        except (OSError, asyncssh.Error) as exc:
            raise self._transport.file_error(exc, self._path) from exc
        return bytes(data)

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
