"""SSH transport: one persistent asyncssh connection per host.

Ours is the only host-key check (DESIGN.md, Trust): the keys the known_hosts files hold
for the box are handed to asyncssh explicitly (``known_hosts.py``), so no ssh_config line
can switch checking off, and a refusal says which key was presented and which one was
expected, with the exact fix. Nothing of the user's goes to a box whatever ssh_config
says: no agent or X11 forwarding, no environment, no Kerberos credentials, no pty, no
RemoteCommand. Text from a box is decoded with replacement, so no byte can drop the
connection.

Here: connecting (hops, the host-key refusal, accept-new) and commands. What an attempt
reads first and the options it sets are in ``ssh_plan``; SFTP sessions and file reads in
``ssh_sftp``; channel plumbing in ``ssh_stream``.

Over 450 lines on purpose: connecting is one sequence (plan, hops, the key verdict,
accept-new's record, the refusals' words) that a review of the trust rules reads whole.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import shlex
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import asyncssh

from rgt_tui.domain.text import printable
from rgt_tui.timeouts import within
from rgt_tui.transport.base import (
    MAX_OUTPUT_BYTES,
    MAX_STREAM_LINE,
    CommandFailed,
    CommandResult,
    NoAnswer,
    TransportError,
    overlong_line,
)
from rgt_tui.transport.handshakes import handshake_slot
from rgt_tui.transport.known_hosts import (
    DEFAULT_KNOWN_HOSTS,
    KeyVerdict,
    append_line,
    host_key_algs,
    key_error,
    parse_jump,
    public_line,
)
from rgt_tui.transport.ssh_forward import SshPortForward, forward_port
from rgt_tui.transport.ssh_plan import (
    NOTHING_OF_THE_USERS,
    CheckingClient,
    ConnectPlan,
    connect_plan,
    identity_setting,
)
from rgt_tui.transport.ssh_sftp import SftpSessions
from rgt_tui.transport.ssh_stream import (
    command_channel,
    run_capped,
    stream_channel,
    when_allowed,
)
from rgt_tui.transport.ssh_stream import describe as _describe
from rgt_tui.transport.ssh_stream import send_input as _send_input

# A refused connection's second way: a box that answered there before restarted or
# stopped (h521 #3). ``add`` leaves it out: a box it pastes has never answered.
ANSWERED_BEFORE = (
    "; if it answered there before, its sshd or the box restarted or stopped (a reboot, "
    "a stop, a preemption): try again once it is back"
)
CONNECT_TIMEOUT_S = 10.0
# No route to the box's address: a destroyed box's, as much as a refused connection.
# (ENETUNREACH is left out: no route to any network is this side offline.)
NO_ROUTE = frozenset({errno.EHOSTUNREACH, errno.EHOSTDOWN})
PORT_LOOK_S = 3.0


async def _port_takes(target: str) -> bool:
    """Whether ``host:port`` (``[v6]:port``) takes a TCP connection now (closed at once)."""
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        return False
    try:
        _reader, writer = await within(
            asyncio.open_connection(host.strip("[]"), int(port)), PORT_LOOK_S
        )
    except (OSError, asyncio.TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


async def _every_address_refuses(infos: list[tuple]) -> bool:
    """Whether each of these ``getaddrinfo`` addresses refuses a TCP connection or has no
    route to it. A name with several addresses (an A and an AAAA record) that all fail
    reaches us as asyncio's one combined ``OSError`` with no errno, so it is asked again
    address by address; a timeout or any other error is not taken as no answer."""
    loop = asyncio.get_running_loop()
    for family, kind, proto, _name, addr in infos:
        with socket.socket(family, kind, proto) as sock:
            sock.setblocking(False)
            try:
                await within(loop.sock_connect(sock, addr), PORT_LOOK_S)
            except ConnectionRefusedError:
                continue
            except OSError as exc:
                if exc.errno in NO_ROUTE:
                    continue
                return False
            except asyncio.TimeoutError:
                return False
            return False  # this address took the connection
    return bool(infos)


async def _no_address_answers(target: str) -> bool:
    """Whether every address of ``host:port`` refuses or has no route (see above)."""
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        return False
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(
            host.strip("[]"), int(port), type=socket.SOCK_STREAM
        )
    except OSError:
        return False
    return await _every_address_refuses(infos)


# What a jump host's OpenSSH sshd says (OPEN_CONNECT_FAILED with strerror's text) when the
# box's address took no connection: the jump host saw it gone, as a direct connect would.
# The jump host is the user's own, checked by its own key; anything else it says (a
# timeout, forwarding prohibited, a name its DNS cannot find) stays "cannot tell".
JUMP_SAW_NO_ANSWER = frozenset({"connection refused", "no route to host", "host is down"})


def _jump_saw_no_answer(exc: BaseException) -> bool:
    return (
        isinstance(exc, asyncssh.ChannelOpenError)
        and exc.code == asyncssh.OPEN_CONNECT_FAILED
        and exc.reason.strip().lower() in JUMP_SAW_NO_ANSWER
    )


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


class SshTransport(SftpSessions):
    """A Transport over one persistent asyncssh connection."""

    forwards_ports = True  # ``forward_port``: an ``ssh -L`` on the open connection

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
        identity_at: str = "",
    ) -> None:
        """``known_hosts``: the file trusted keys are read from first and added to (default
        ~/.ssh/known_hosts, resolved at connect time). ``host_key``: "strict", or
        "accept-new" to record a first key (a changed key is still refused).
        ``identity_at``: where the fleet file sets ``identity_file``, for its errors."""
        self.host = host
        self.address = address
        self.port = port
        self.username = username
        self.identity_file = identity_file
        self.identity_at = identity_at
        self._known_hosts = known_hosts
        self.accept_new = host_key == "accept-new"
        self._recorded_in: Path | None = None  # recorded_key_in
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
    def recorded_key_in(self) -> Path | None:
        """Where accept-new recorded the box's first key on the last connection."""
        return self._recorded_in

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
            async with handshake_slot():  # a fleet's start, paced (handshakes.py)
                await self._connect()

    async def _connect(self) -> None:
        await self._close_hops()
        self._recorded_in = None
        plan = await asyncio.to_thread(
            connect_plan,
            self.host,
            self.known_hosts,
            self.identity_file,
            self.address,
            self.port,
            self.username,
            identity_at=self.identity_at,
        )
        tunnel = await self._open_hops(plan.jump) if plan.jump else None
        try:
            conn = await self._open(self.address, self.port, self.username, plan, tunnel)
        except BaseException:
            await self._close_hops()
            raise
        self._conn = conn
        self._host_key = conn.get_server_host_key()

    async def _open_hops(self, jump: str) -> asyncssh.SSHClientConnection:
        """Open ssh_config's ProxyJump hops here, each with the same host-key check and
        the same nothing-forwarded options (asyncssh would open them with ssh_config's
        own settings: unchecked keys and a forwarded agent under a lax config)."""
        tunnel: asyncssh.SSHClientConnection | None = None
        for hop in jump.split(","):
            user, host, port = parse_jump(hop)
            plan = await asyncio.to_thread(
                connect_plan,
                self.host,
                self.known_hosts,
                self.identity_file,
                host,
                port,
                user,
                True,
            )
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
        plan: ConnectPlan,
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
                address, client_factory=lambda: CheckingClient(verdict), **options
            )
        except asyncssh.HostKeyNotVerifiable as exc:
            jump = address if hop else None  # whose key it is: the hop's, not the box's
            raise key_error(self.host, verdict, self.known_hosts, exc.reason, jump) from exc
        except asyncssh.PermissionDenied as exc:
            raise TransportError(
                self.host,
                f"authentication refused{' by ' + where if where else ''} "
                f"({printable(exc.reason, 200)})",
                self._auth_fix(plan),
            ) from exc
        except asyncio.TimeoutError as exc:
            # The box's own address, no proxy between: what a destroyed box does.
            direct = not hop and not plan.proxy_command and not plan.jump
            # asyncssh's timeout covers the handshake and the login too: a box that took
            # the connection and was slow after it still answers (review s46 #1). Only a
            # port that does not take a connection now is no answer.
            if direct and await _port_takes(plan.target):
                direct = False
            raise (NoAnswer if direct else TransportError)(
                self.host,
                f"no answer{' from ' + where if where else ''} within {self.connect_timeout:g} s",
                "is the box running?",
            ) from exc
        except socket.gaierror as exc:  # an OSError: said apart, with the name and the fix
            # A name that does not exist is the box's; a DNS that cannot answer now
            # (EAI_AGAIN: offline, a captive portal) is this side's (review s46 #3).
            gone = not hop and exc.errno in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", -2))
            raise (NoAnswer if gone else TransportError)(
                self.host,
                f"{'jump host' if hop else 'the address'} {address!r} does not resolve "
                f"({_describe(exc)})",
                # A hop comes from ssh_config's ProxyJump, never from the fleet file (a
                # user's hour was sent to the fleet file's ssh line).
                f"check the ProxyJump line for {self.address} in ~/.ssh/config"
                if hop
                else f"check {self.host}'s ssh = ... in the fleet file (a typo, or a box "
                "released and its name gone); with a name from ~/.ssh/config, its HostName "
                "there",
            ) from exc
        except (OSError, asyncssh.Error) as exc:
            if plan.proxy_command and not hop:
                # asyncssh drops the command's stderr: "broken pipe" alone sent users to
                # the box, when the command (a VPN, a bastion's CLI) had failed here.
                raise TransportError(
                    self.host,
                    f"{_describe(exc)} through ssh_config's ProxyCommand for {address} "
                    f"({printable(plan.proxy_command, 120)}): the command may have failed "
                    "before the box answered",
                    f"run ssh -v {shlex.quote(address)} to see the command's own error",
                ) from exc
            if hop:  # the jump host's refusal read as the box's own (hour s17b #7)
                at = f"{address}:{port}" if port else address
                raise TransportError(
                    self.host,
                    f"jump host {at} (ssh_config's ProxyJump for {self.address}): {_describe(exc)}",
                    f"check the ProxyJump line for {self.address} in ~/.ssh/config",
                ) from exc
            if isinstance(exc, ConnectionRefusedError) and plan.target:
                how = f" ({plan.via_config} from ~/.ssh/config)" if plan.via_config else ""
                raise NoAnswer(
                    self.host,
                    f"connection refused by {plan.target}{how}: is sshd running on that port?",
                    "check the port in the provider's SSH command"
                    + (f" and what ~/.ssh/config sets for {address}" if plan.via_config else "")
                    + f" (the fleet file's ssh for {self.host})"
                    + ANSWERED_BEFORE,
                ) from exc
            if tunnel is not None and isinstance(exc, asyncssh.ChannelOpenError):
                # The last hop could not open the way to the box: its words, named as its.
                raise (NoAnswer if _jump_saw_no_answer(exc) else TransportError)(
                    self.host,
                    f"the jump host (ssh_config's ProxyJump {printable(plan.jump or '', 120)}) "
                    f"could not reach {plan.target or address}: {_describe(exc)}",
                    "is the box running? check its address in the provider's SSH command "
                    f"and what ~/.ssh/config sets for {address}",
                ) from exc
            closed = (asyncssh.ConnectionLost, ConnectionResetError, BrokenPipeError)
            if isinstance(exc, closed) and plan.target:
                # Closed while connecting, before the handshake ended: "connection lost"
                # read as a box that had answered (hour s24b #6: one that never had). A
                # reset instead of a close, as the timing goes, is the same (a CI run).
                raise TransportError(
                    self.host,
                    f"{plan.target} accepted the connection and closed it before the SSH "
                    "handshake ended: the box may still be starting, or that port is not "
                    "its sshd",
                    "wait a minute and try again; if it stays so, check the host and port in "
                    f"the provider's SSH command (the fleet file's ssh for {self.host})",
                ) from exc
            unreachable = isinstance(exc, OSError) and (
                exc.errno in NO_ROUTE
                or (
                    exc.errno is None  # asyncio's combined error: a name with several addresses
                    and tunnel is None
                    and bool(plan.target)
                    and await _no_address_answers(plan.target)
                )
            )
            raise (NoAnswer if unreachable and plan.target else TransportError)(
                self.host, _describe(exc)
            ) from exc
        except ValueError as exc:  # a key or an ssh_config value asyncssh cannot use
            raise TransportError(
                self.host,
                f"cannot connect with these SSH settings: {exc}",
                f"check {identity_setting(self.identity_at)} and ~/.ssh/config",
            ) from exc
        if verdict.accepted is not None:
            await self._record_new_key(conn, plan.known.name, verdict.accepted)
        return conn

    def _auth_fix(self, plan: ConnectPlan) -> str:
        if plan.identity_needs_agent:
            path = shlex.quote(str(self.identity_file.expanduser()))  # type: ignore[union-attr]
            return f"identity_file needs a passphrase and the ssh-agent lacks it: ssh-add {path}"
        return (
            f"check {identity_setting(self.identity_at)}, or that the key is in ssh-agent / "
            "the box's authorized_keys"
        )

    async def _record_new_key(
        self, conn: asyncssh.SSHClientConnection, name: str, key: asyncssh.SSHKey
    ) -> None:
        """host_key = accept-new: the box proved it holds this first key (the key
        exchange is signed with it); record it so a different key is refused next time."""
        path = self.known_hosts
        try:
            await asyncio.to_thread(append_line, path, f"{name} {public_line(key)}")
            self._recorded_in = path
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
            process = await when_allowed(
                conn, lambda: conn.create_process(command, encoding="utf-8", errors="replace")
            )
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
            raise CommandFailed(
                self.host,
                f"remote command exited with status {status}: {err[-1] if err else 'no message'}",
                status,
            )

    async def forward_port(self, remote_port: int, *, local_port: int = 0) -> SshPortForward:
        """Forward ``127.0.0.1:local_port`` here to ``remote_port`` on the box over the open
        connection (``ssh_forward``); OSError when the port here is taken."""
        return await forward_port(self._require(), self.host, remote_port, local_port)

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


async def _close_conn(conn: asyncssh.SSHClientConnection) -> None:
    conn.close()
    with contextlib.suppress(Exception):
        await within(conn.wait_closed(), 5)


async def _drain(stream: asyncssh.SSHReader) -> str | bytes:
    with contextlib.suppress(Exception):
        return await within(stream.read(), 2)
    return ""


def _text(value: str | bytes | None) -> str:
    if value is None:
        return ""
    return value.decode(errors="replace") if isinstance(value, bytes) else value
