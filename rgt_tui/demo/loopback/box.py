"""One loopback box: an asyncssh server on 127.0.0.1 over a local directory.

The listener, the per-connection and SFTP servers, and the exec handler that starts a
command in the box's environment (the bridging itself is ``session``'s, or ``terminal``'s
when the client asked for a pty). Handler errors are logged and kept in
``LoopbackBox.errors`` (see the package docstring).
"""

from __future__ import annotations

import asyncio
import getpass
import logging
import os
import shutil
import socket
from collections import deque
from pathlib import Path

import asyncssh

from rgt_tui.demo.loopback.session import ExecBridge
from rgt_tui.demo.loopback.terminal import PtyBridge, Terminal

log = logging.getLogger("rgt_tui.demo")

LOOPBACK_HOST = "127.0.0.1"
_MAX_ERRORS = 20
# Where a client's ``direct-tcpip`` channel may go: the box's own loopback (U39 tunnels).
_BOX_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
_STOP_GRACE_S = 3.0  # the hang-up grace plus margin for the handlers to finish


class LoopbackBox:
    """One loopback SSH server over a local directory that plays a rented box."""

    def __init__(
        self,
        name: str,
        root: Path,
        authorized_keys: asyncssh.SSHKey | list[asyncssh.SSHKey],
        *,
        port: int = 0,
        host_key: asyncssh.SSHKey | None = None,
        tmux_tmpdir: Path | None = None,
    ) -> None:
        self.name = name
        self.tmux_tmpdir = tmux_tmpdir  # None: the user's usual tmux server
        self.root = Path(root).resolve()
        self.port = port  # 0 until the first start picks one; then kept for restarts
        keys = authorized_keys if isinstance(authorized_keys, list) else [authorized_keys]
        self._authorized = asyncssh.import_authorized_keys(
            "".join(public_line(k) + "\n" for k in keys)
        )
        # The queue runner and services read the boot id from $RGT_BOOT_ID_FILE when set:
        # tests rewrite this file to simulate a reboot (docs/queues.md). Beside the box's
        # folder, as its host key is: not in its tree (a code check counts every file there).
        self.boot_id_file = self.root.parent / f"{name}.boot_id"
        # SSH connections accepted since creation (tests hold the app to one per host).
        self.connections_made = 0
        self.host_key_path = self.root.parent / f"{name}.host_key"
        self.host_key = host_key or load_or_create_key(self.host_key_path)
        self.errors: deque[str] = deque(maxlen=_MAX_ERRORS)
        self._acceptor: asyncssh.SSHAcceptor | None = None
        self._port_hold: socket.socket | None = None  # while stopped: see _hold_port
        self._conns: set[asyncssh.SSHServerConnection] = set()
        self._sessions: set[asyncio.Task[None]] = set()
        self._bash = shutil.which("bash") or "/bin/bash"
        # Folders searched before the usual PATH, as a box's own /opt/conda/bin is: tests
        # put a hostile box's programs there (its own tar, its own python3).
        self.extra_path: list[Path] = []
        # Variables every session gets, as a box's own environment would set them: tests
        # point a box-side script's test-only variable here (RGT_NVIDIA_DEV_PREFIX).
        self.extra_env: dict[str, str] = {}

    @property
    def is_running(self) -> bool:
        """Whether the listener is up."""
        return self._acceptor is not None

    @property
    def open_connections(self) -> int:
        """SSH connections open now (a client that closed its own is gone from here)."""
        return len(self._conns)

    @property
    def known_hosts_line(self) -> str:
        """This box's known_hosts line, exactly as OpenSSH writes it for a non-22 port."""
        return f"[{LOOPBACK_HOST}]:{self.port} {public_line(self.host_key)}"

    async def start(self) -> None:
        """Start listening (on the port of the previous run, if there was one)."""
        if self._acceptor is not None:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        if not self.boot_id_file.exists():  # kept across restarts: a test may have "rebooted" it
            self.boot_id_file.write_text(real_boot_id())
        self._acceptor = await asyncssh.listen(
            LOOPBACK_HOST,
            self.port,
            server_factory=lambda: _BoxServer(self),
            server_host_keys=[self.host_key],
            authorized_client_keys=self._authorized,
            process_factory=self._serve_process,
            sftp_factory=self._make_sftp,
            allow_scp=False,  # scp/rsync go through exec to the real binaries, as on sshd
            encoding=None,  # bytes pass through unchanged
            reuse_address=True,  # rebind the same port while old sockets sit in TIME_WAIT
            reuse_port=True,  # bind beside the placeholder that held the port while down
        )
        self.port = self._acceptor.get_port()
        self._release_port()
        log.debug("%s listening on %s:%d", self.name, LOOPBACK_HOST, self.port)

    async def stop(self) -> None:
        """Stop listening and drop every open connection, as if the box went down.

        Connections are aborted (no SSH disconnect message), which is what a client sees
        when a box reboots or its network dies. Returns once the running commands were
        hung up on (or after a short grace).
        """
        acceptor, self._acceptor = self._acceptor, None
        if acceptor is not None:
            self._hold_port()
            acceptor.close()
            await acceptor.wait_closed()
        for conn in list(self._conns):
            conn.abort()
        self._conns.clear()
        if self._sessions:
            await asyncio.wait(set(self._sessions), timeout=_STOP_GRACE_S)

    async def close(self) -> None:
        """Stop for good: as stop, and the port is let go."""
        await self.stop()
        self._release_port()

    def _hold_port(self) -> None:
        """Keep the port bound (not listening) while the box is down.

        A connection is refused there, as at a box that went down; but nothing else on
        this machine (another test's box, a client's ephemeral port) can take the port
        meanwhile, so start() gets it back. Without this, a restart raced every other
        socket here for it (CI: "address already in use" on a busy machine). SO_REUSEPORT
        alone, not SO_REUSEADDR: a socket binding beside it must ask for SO_REUSEPORT
        too, under this user, as our own listener does (asyncio's servers do not).
        """
        if self._port_hold is not None:
            return
        hold = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            hold.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            hold.bind((LOOPBACK_HOST, self.port))
        except OSError as exc:  # the box still goes down; only a restart may then race
            hold.close()
            log.warning("%s: port %d not held while down: %s", self.name, self.port, exc)
            return
        self._port_hold = hold

    def _release_port(self) -> None:
        hold, self._port_hold = self._port_hold, None
        if hold is not None:
            hold.close()

    async def restart(self) -> None:
        """Stop, then start again on the same port with the same host key."""
        await self.stop()
        await self.start()

    def record_error(self, what: str, exc: BaseException) -> None:
        """Log a server-side handler failure and keep it for tests to inspect."""
        log.error("%s: %s failed", self.name, what, exc_info=exc)
        self.errors.append(f"{what}: {type(exc).__name__}: {exc}")

    # -- handlers -------------------------------------------------------------------

    async def _serve_process(self, process: asyncssh.SSHServerProcess[bytes]) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._sessions.add(task)
        try:
            await self._run_exec(process)
        except Exception as exc:
            self.record_error(f"exec {process.command!r}", exc)
            try:
                process.exit(255)
            except Exception:  # the channel may already be gone; nothing left to tell
                pass
        finally:
            self._sessions.discard(task)

    async def _run_exec(self, process: asyncssh.SSHServerProcess[bytes]) -> None:
        if process.subsystem:
            process.stderr.write(f"subsystem {process.subsystem!r} not supported\n".encode())
            process.exit(1)
            return
        command = process.command
        # A session without a command is a shell request: sshd runs the user's login shell.
        argv = [self._bash, "-l"] if command is None else [self._bash, "-c", command]
        env = self._session_env(process)
        term = process.get_terminal_type()
        if term is not None:
            # A pty requested (ssh -t, the shell key): the child on a terminal of its own,
            # or a login shell would read raw keystrokes from a pipe and show nothing.
            terminal = Terminal(process)
            env |= {"TERM": term, "SSH_TTY": terminal.name}
            try:
                child = await terminal.spawn(argv, self.root, env)
            except BaseException:
                terminal.close()
                raise
            await PtyBridge(process, child, terminal).run()
            return
        child = await asyncio.create_subprocess_exec(
            *argv,
            cwd=self.root,
            env=env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            # Own session and process group, as sshd gives each session: a hang-up hits
            # this group only, and setsid/tmux jobs (another session) survive it.
            start_new_session=True,
        )
        await ExecBridge(process, child).run()

    def _session_env(self, process: asyncssh.SSHServerProcess[bytes]) -> dict[str, str]:
        user = current_user()
        env = {
            "HOME": str(self.root),
            "PATH": os.pathsep.join(
                [*map(str, self.extra_path), os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")]
            ),
            "USER": user,
            "LOGNAME": user,
            "LANG": "C.UTF-8",
            "SHELL": "/bin/bash",
            "PYTHONDONTWRITEBYTECODE": "1",
            "RGT_BOOT_ID_FILE": str(self.boot_id_file),
        }
        if self.tmux_tmpdir is not None:
            env["TMUX_TMPDIR"] = str(self.tmux_tmpdir)
        env.update(self.extra_env)
        peer = process.get_extra_info("peername") or ("127.0.0.1", 0)
        env["SSH_CONNECTION"] = f"{peer[0]} {peer[1]} {LOOPBACK_HOST} {self.port}"
        # Debian's sshd only accepts LANG and LC_* from the client (AcceptEnv); passing
        # more here would let code that relies on `env=` pass the demo and fail on boxes.
        for key, value in (process.env or {}).items():
            k = key.decode() if isinstance(key, bytes) else str(key)
            if k == "LANG" or k.startswith("LC_"):
                env[k] = value.decode() if isinstance(value, bytes) else str(value)
        return env

    def _make_sftp(self, chan: asyncssh.SSHServerChannel[bytes]) -> asyncssh.SFTPServer:
        try:
            return _BoxSFTPServer(chan, self.root)
        except Exception as exc:
            self.record_error("sftp session", exc)
            raise


class _BoxServer(asyncssh.SSHServer):
    """Per-connection callbacks: track connections so `stop()` can drop them."""

    def __init__(self, box: LoopbackBox) -> None:
        self._box = box
        self._conn: asyncssh.SSHServerConnection | None = None

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        self._conn = conn
        if not self._box.is_running:
            # Accepted just before stop() closed the listener: asyncio makes the protocol
            # in a task of its own, so this comes after stop() dropped every connection it
            # knew — and one left open answered a box that is down (CI, loaded: a test's
            # disk audit of a stopped box succeeded). Dropped as those were.
            asyncio.get_running_loop().call_soon(conn.abort)
            return
        self._box._conns.add(conn)
        self._box.connections_made += 1

    def connection_lost(self, exc: Exception | None) -> None:
        if self._conn is not None:
            self._box._conns.discard(self._conn)

    def begin_auth(self, username: str) -> bool:
        # Any user name; the authorized client key is what gets a client in.
        return True

    def connection_requested(
        self, dest_host: str, dest_port: int, orig_host: str, orig_port: int
    ) -> bool:
        # TCP forwarding (``ssh -L``; sshd's AllowTcpForwarding is yes by default), to the
        # box's own loopback only: the box is this machine, and nothing else is its.
        return dest_host in _BOX_LOOPBACK


class _BoxSFTPServer(asyncssh.SFTPServer):
    """The whole filesystem, with relative paths resolved against the box directory.

    Not a chroot: real boxes expose every path, and the product must cope with that.
    OpenSSH starts sftp-server in HOME, so ``get("results/x.pt")`` reads
    ``HOME/results/x.pt``; without this mapping asyncssh would resolve it against the
    demo process's own working directory.
    """

    def __init__(self, chan: asyncssh.SSHServerChannel[bytes], root: Path) -> None:
        super().__init__(chan)
        self._root = os.fsencode(root)

    def map_path(self, path: bytes) -> bytes:
        """Map a client path to a local one; relative paths start at the box root."""
        if path.startswith(b"/"):
            return path
        return os.path.join(self._root, path) if path else self._root


def current_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (some containers)
        return str(os.getuid())


def real_boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() + "\n"
    except OSError:  # not Linux: a stable stand-in, so "same boot" still holds
        return "00000000-0000-0000-0000-000000000000\n"


def public_line(key: asyncssh.SSHKey) -> str:
    """``ssh-ed25519 AAAA...`` without a comment."""
    fields = key.export_public_key("openssh").decode().split()
    return " ".join(fields[:2])


def load_or_create_key(path: Path) -> asyncssh.SSHKey:
    """Read the ed25519 private key at `path`, generating it (mode 0600) the first time."""
    if path.exists():
        return asyncssh.read_private_key(str(path))
    key = asyncssh.generate_private_key("ssh-ed25519")
    path.parent.mkdir(parents=True, exist_ok=True)
    # Create with 0600 from the start: OpenSSH refuses a private key others can read.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(key.export_private_key())
    path.with_name(path.name + ".pub").write_text(public_line(key) + "\n")
    return key
