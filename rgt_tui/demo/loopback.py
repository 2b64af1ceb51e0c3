"""Loopback SSH boxes: real asyncssh servers on 127.0.0.1, each over its own directory.

`rgt-tui demo` and the test suite both run the product against these, so every byte
goes through the same asyncssh client code, known_hosts checking and public-key
authentication as a rented box would. A box behaves like a small sshd:

- exec runs ``bash -c <command>`` in the box directory (its HOME) with a clean
  environment, stdin/stdout/stderr bridged both ways in binary, and the exit status or
  the killing signal reported back;
- when the channel or the connection goes away while the command still runs, its
  process group gets SIGHUP and, if the command is still alive a second later, SIGKILL.
  Jobs that detached with ``setsid``/tmux live in another session and survive, as on a
  real box (this is the GEN8/U3 "SSH hang-up" case the product must tell apart);
- SFTP serves the whole filesystem, with relative paths resolved against the box
  directory, as OpenSSH's sftp-server resolves them against HOME.

asyncssh swallows exceptions raised inside server handlers (the client only sees a
closed channel), so every handler here is wrapped: errors are logged on
``rgt_tui.demo`` and kept in ``LoopbackBox.errors`` for tests to assert empty.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import logging
import os
import shutil
import signal
import tempfile
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

import asyncssh

from rgt_tui.demo.gpu_replay import install_nvidia_smi

log = logging.getLogger("rgt_tui.demo")

LOOPBACK_HOST = "127.0.0.1"
_MAX_ERRORS = 20
_CHUNK = 65536
_HANGUP_GRACE_S = 1.0  # between SIGHUP and SIGKILL after a session drop
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
            "".join(_public_line(k) + "\n" for k in keys)
        )
        # The queue runner and services read the boot id from $RGT_BOOT_ID_FILE when set:
        # tests rewrite this file to simulate a reboot (docs/queues.md).
        self.boot_id_file = self.root / ".boot_id"
        # SSH connections accepted since creation (tests hold the app to one per host).
        self.connections_made = 0
        self.host_key_path = self.root.parent / f"{name}.host_key"
        self.host_key = host_key or _load_or_create_key(self.host_key_path)
        self.errors: deque[str] = deque(maxlen=_MAX_ERRORS)
        self._acceptor: asyncssh.SSHAcceptor | None = None
        self._conns: set[asyncssh.SSHServerConnection] = set()
        self._sessions: set[asyncio.Task[None]] = set()
        self._bash = shutil.which("bash") or "/bin/bash"
        # Folders searched before the usual PATH, as a box's own /opt/conda/bin is: tests
        # put a hostile box's programs there (its own tar, its own python3).
        self.extra_path: list[Path] = []

    @property
    def is_running(self) -> bool:
        """Whether the listener is up."""
        return self._acceptor is not None

    @property
    def known_hosts_line(self) -> str:
        """This box's known_hosts line, exactly as OpenSSH writes it for a non-22 port."""
        return f"[{LOOPBACK_HOST}]:{self.port} {_public_line(self.host_key)}"

    async def start(self) -> None:
        """Start listening (on the port of the previous run, if there was one)."""
        if self._acceptor is not None:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        if not self.boot_id_file.exists():  # kept across restarts: a test may have "rebooted" it
            self.boot_id_file.write_text(_real_boot_id())
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
        )
        self.port = self._acceptor.get_port()
        log.debug("%s listening on %s:%d", self.name, LOOPBACK_HOST, self.port)

    async def stop(self) -> None:
        """Stop listening and drop every open connection, as if the box went down.

        Connections are aborted (no SSH disconnect message), which is what a client sees
        when a box reboots or its network dies. Returns once the running commands were
        hung up on (or after a short grace).
        """
        acceptor, self._acceptor = self._acceptor, None
        if acceptor is not None:
            acceptor.close()
            await acceptor.wait_closed()
        for conn in list(self._conns):
            conn.abort()
        self._conns.clear()
        if self._sessions:
            await asyncio.wait(set(self._sessions), timeout=_STOP_GRACE_S)

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
        # A session without a command is a shell request; sshd runs the user's shell.
        argv = [self._bash] if command is None else [self._bash, "-c", command]
        child = await asyncio.create_subprocess_exec(
            *argv,
            cwd=self.root,
            env=self._session_env(process),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            # Own session and process group, as sshd gives each session: a hang-up hits
            # this group only, and setsid/tmux jobs (another session) survive it.
            start_new_session=True,
        )
        await _ExecBridge(process, child).run()

    def _session_env(self, process: asyncssh.SSHServerProcess[bytes]) -> dict[str, str]:
        user = _current_user()
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


class _ExecBridge:
    """Bridges one exec channel and its child process the way sshd does."""

    def __init__(
        self, process: asyncssh.SSHServerProcess[bytes], child: asyncio.subprocess.Process
    ) -> None:
        self._process = process
        self._child = child

    async def run(self) -> None:
        """Pump the streams until the child is done or the channel goes away."""
        assert self._child.stdout is not None and self._child.stderr is not None
        outputs = [
            asyncio.create_task(self._pump_out(self._child.stdout, self._process.stdout)),
            asyncio.create_task(self._pump_out(self._child.stderr, self._process.stderr)),
        ]
        tasks = [
            asyncio.create_task(self._pump_in()),
            *outputs,
            finished := asyncio.create_task(self._finished(outputs)),
            closed := asyncio.create_task(self._process.channel.wait_closed()),
        ]
        try:
            done, _ = await asyncio.wait({finished, closed}, return_when=asyncio.FIRST_COMPLETED)
            if finished in done and not self._process.is_closing():
                self._report_exit()
            else:
                await self._hang_up()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _finished(self, outputs: list[asyncio.Task[None]]) -> None:
        # sshd reports the exit once the child is gone AND its output reached EOF, so a
        # background job still holding stdout keeps the channel open (as on a real box).
        await asyncio.gather(*outputs)
        await self._child.wait()

    async def _pump_in(self) -> None:
        stdin = self._child.stdin
        assert stdin is not None
        sink = False  # once the child closed its stdin, discard input as sshd does
        while True:
            try:
                data = await self._process.stdin.read(_CHUNK)
            except asyncssh.SignalReceived as exc:
                self._signal_group(getattr(signal, f"SIG{exc.signal}", None))
                continue
            except (asyncssh.BreakReceived, asyncssh.TerminalSizeChanged):
                continue
            except (asyncssh.Error, OSError):
                data = b""  # the connection went away: treat as EOF
            if not data:
                if not stdin.is_closing():
                    stdin.close()
                return
            if sink:
                continue
            try:
                stdin.write(data)
                await stdin.drain()
            except (BrokenPipeError, ConnectionResetError):
                sink = True

    async def _pump_out(
        self, reader: asyncio.StreamReader, writer: asyncssh.SSHWriter[bytes]
    ) -> None:
        while data := await reader.read(_CHUNK):
            try:
                writer.write(data)
                await writer.drain()  # flow control: a slow client slows the child
            except (BrokenPipeError, ConnectionError, asyncssh.Error):
                return  # channel gone; run() hangs up on the child

    def _report_exit(self) -> None:
        rc = self._child.returncode
        assert rc is not None
        self._process.stdout.write_eof()  # sshd sends EOF, then the status, then close
        if rc < 0:
            # Same fields as OpenSSH: the bare signal name, no message, no language tag.
            name = signal.Signals(-rc).name.removeprefix("SIG")
            self._process.exit_with_signal(name, False, "", "")
        else:
            self._process.exit(rc)

    async def _hang_up(self) -> None:
        """SIGHUP the session's group; SIGKILL it if the command outlives the grace."""
        if self._child.stdin is not None and not self._child.stdin.is_closing():
            self._child.stdin.close()
        # Output that can no longer go anywhere is thrown away, as sshd closes its ends of
        # the pipes: a command blocked writing to a full pipe gets on to its hang-up, and
        # asyncio's wait() (which waits for the pipes' end too) can return.
        discard = [
            asyncio.create_task(_discard(pipe))
            for pipe in (self._child.stdout, self._child.stderr)
            if pipe is not None
        ]
        # The whole group, even when the command already exited: a job it put in the
        # background may still hold the channel's stdout.
        self._signal_group(signal.SIGHUP)
        try:
            await asyncio.wait_for(self._child.wait(), _HANGUP_GRACE_S)
        except asyncio.TimeoutError:
            # Only when the command itself ignored SIGHUP: a nohup'd job that the
            # command left behind in its group survives, as it does on a real box.
            self._signal_group(signal.SIGKILL)
            await self._child.wait()
        finally:
            for task in discard:
                task.cancel()

    def _signal_group(self, sig: signal.Signals | None) -> None:
        if sig is None:
            return
        try:
            os.killpg(self._child.pid, sig)  # pgid == pid: start_new_session=True
        except (ProcessLookupError, PermissionError):
            pass  # the whole group is already gone


async def _discard(reader: asyncio.StreamReader) -> None:
    with contextlib.suppress(Exception):
        while await reader.read(_CHUNK):
            pass


class _BoxServer(asyncssh.SSHServer):
    """Per-connection callbacks: track connections so `stop()` can drop them."""

    def __init__(self, box: LoopbackBox) -> None:
        self._box = box
        self._conn: asyncssh.SSHServerConnection | None = None

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        self._conn = conn
        self._box._conns.add(conn)
        self._box.connections_made += 1

    def connection_lost(self, exc: Exception | None) -> None:
        if self._conn is not None:
            self._box._conns.discard(self._conn)

    def begin_auth(self, username: str) -> bool:
        # Any user name; the authorized client key is what gets a client in.
        return True


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


class LoopbackFleet:
    """N loopback boxes plus the client key, known_hosts and hosts.toml to reach them."""

    def __init__(
        self,
        n: int = 3,
        base_dir: Path | None = None,
        *,
        queue_dir: Path | None = None,
        run: str | None = None,
        workload: bool = False,
        tmux_tmpdir: Path | None = None,
        gpus: bool = False,
        costs: Sequence[tuple[str, float]] = (),
    ) -> None:
        """``queue_dir``: give each host ``queue = <queue_dir>/<box>.txt`` (and ``run``).
        ``workload``: install the demo training workload on every box with a ready queue
        (queue_dir defaults to ``<base_dir>/queues``, run to the workload's template).
        ``tmux_tmpdir``: the boxes' sessions use their own tmux server there (tests run
        side by side without sharing session names); None: the user's usual server.
        ``gpus``: each box's PATH starts with a stand-in ``nvidia-smi`` replaying a recorded
        H100 (``gpu_replay``). ``costs``: (profile, cost per hour) for box 1, 2, ... in turn,
        so the fleet shows what it costs."""
        self.n = n
        self.base_dir = Path(base_dir) if base_dir is not None else None
        self.queue_dir = Path(queue_dir) if queue_dir is not None else None
        self.run = run
        self.workload = workload
        self.tmux_tmpdir = tmux_tmpdir
        self.gpus = gpus
        self.costs = tuple(costs)
        self.boxes: list[LoopbackBox] = []
        self._made_base_dir = False

    @property
    def hosts_file(self) -> Path:
        """The fleet file (``hosts.toml``) listing every box."""
        return self._dir / "hosts.toml"

    @property
    def known_hosts(self) -> Path:
        """The known_hosts file with every box's host key."""
        return self._dir / "known_hosts"

    @property
    def client_key(self) -> Path:
        """The private client key (ed25519, mode 0600) every box authorizes."""
        return self._dir / "client_key"

    @property
    def username(self) -> str:
        """The user name the fleet file logs in as (the current user)."""
        return _current_user()

    @property
    def errors(self) -> list[str]:
        """Handler errors of every box, prefixed with the box name."""
        return [f"{b.name}: {e}" for b in self.boxes for e in b.errors]

    def box(self, name: str) -> LoopbackBox:
        """The box called `name`."""
        for b in self.boxes:
            if b.name == name:
                return b
        raise KeyError(name)

    def connect(self, box: LoopbackBox | str, **kwargs: object) -> asyncssh.SSHClientConnection:
        """``asyncssh.connect`` to a box with the fleet's key and known_hosts.

        Returns asyncssh's awaitable / async context manager, as ``asyncssh.connect`` does.
        """
        b = self.box(box) if isinstance(box, str) else box
        options: dict[str, object] = {
            "username": self.username,
            "client_keys": [str(self.client_key)],
            "known_hosts": str(self.known_hosts),
            "config": None,  # ignore ~/.ssh/config so tests see only these settings
        }
        options.update(kwargs)
        return asyncssh.connect(LOOPBACK_HOST, b.port, **options)  # type: ignore[return-value]

    async def start(self, n: int | None = None, base_dir: Path | None = None) -> None:
        """Create ``base_dir/box1..boxN``, start their servers and write the fleet files.

        Files already there (client key, host keys) are reused, so a fleet restarted over
        the same directory keeps its identities.
        """
        if self.boxes:
            raise RuntimeError("LoopbackFleet already started")
        self.n = n if n is not None else self.n
        if base_dir is not None:
            self.base_dir = Path(base_dir)
        if self.base_dir is None:
            self.base_dir = Path(tempfile.mkdtemp(prefix="rgt-demo-"))
            self._made_base_dir = True
        self.base_dir = self.base_dir.resolve()
        self.base_dir.mkdir(parents=True, exist_ok=True)
        client = _load_or_create_key(self.client_key)
        if self.tmux_tmpdir is not None:
            self.tmux_tmpdir.mkdir(parents=True, exist_ok=True)
        self.boxes = [
            LoopbackBox(f"box{i}", self.base_dir / f"box{i}", client, tmux_tmpdir=self.tmux_tmpdir)
            for i in range(1, self.n + 1)
        ]
        for b in self.boxes:
            (b.root / "results").mkdir(parents=True, exist_ok=True)
            b.boot_id_file.write_text(_real_boot_id())  # a fleet starts in this boot
            if self.gpus:  # beside the box's folder, as its host key is: not in its tree
                b.extra_path.append(install_nvidia_smi(self.base_dir / f"{b.name}.bin").parent)
        if self.workload:
            from rgt_tui.demo.workload_setup import install_workload, workload_run_template

            self.queue_dir = self.queue_dir or self.base_dir / "queues"
            self.run = self.run or workload_run_template()
            for b in self.boxes:
                install_workload(b.root, b.name, self.queue_dir / f"{b.name}.txt")
        results = await asyncio.gather(*(b.start() for b in self.boxes), return_exceptions=True)
        failed = [r for r in results if isinstance(r, BaseException)]
        if failed:
            await self.stop()
            raise failed[0]
        self.known_hosts.write_text("".join(b.known_hosts_line + "\n" for b in self.boxes))
        self.hosts_file.write_text(self._hosts_toml())

    async def stop(self) -> None:
        """Stop every box (their directories and fleet files stay)."""
        await asyncio.gather(*(b.stop() for b in self.boxes), return_exceptions=True)

    async def __aenter__(self) -> LoopbackFleet:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
        if self._made_base_dir and self.base_dir is not None:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    @property
    def _dir(self) -> Path:
        if self.base_dir is None:
            raise RuntimeError("LoopbackFleet has no base_dir until it is started")
        return self.base_dir

    def _profile_lines(self, i: int) -> list[str]:
        """The profile (and cost per hour) of box ``i`` in the fleet file."""
        if not self.costs:
            return ['profile = "generic-ssh"']
        profile, cost = self.costs[i % len(self.costs)]
        return [f"profile = {_toml_str(profile)}", f"cost_per_hour = {cost}"]

    def _hosts_toml(self) -> str:
        lines = ["# Loopback demo fleet written by rgt-tui (rgt_tui/demo/loopback.py).", ""]
        for i, b in enumerate(self.boxes):
            lines += [
                "[[hosts]]",
                f"name = {_toml_str(b.name)}",
                f"ssh = {_toml_str(f'{self.username}@{LOOPBACK_HOST}:{b.port}')}",
                f"identity_file = {_toml_str(str(self.client_key))}",
                f"known_hosts = {_toml_str(str(self.known_hosts))}",
                *self._profile_lines(i),
                f"workdir = {_toml_str(str(b.root))}",
                f"durable_dir = {_toml_str(str(b.root / 'results'))}",
                f"mounts = [{_toml_str(str(b.root))}]",
            ]
            if self.queue_dir is not None:
                lines.append(f"queue = {_toml_str(str(self.queue_dir / f'{b.name}.txt'))}")
            if self.run is not None:
                lines.append(f"run = {_toml_str(self.run)}")
            lines.append("")
        return "\n".join(lines)


def _current_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (some containers)
        return str(os.getuid())


def _real_boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() + "\n"
    except OSError:  # not Linux: a stable stand-in, so "same boot" still holds
        return "00000000-0000-0000-0000-000000000000\n"


def _public_line(key: asyncssh.SSHKey) -> str:
    """``ssh-ed25519 AAAA...`` without a comment."""
    fields = key.export_public_key("openssh").decode().split()
    return " ".join(fields[:2])


def _load_or_create_key(path: Path) -> asyncssh.SSHKey:
    """Read the ed25519 private key at `path`, generating it (mode 0600) the first time."""
    if path.exists():
        return asyncssh.read_private_key(str(path))
    key = asyncssh.generate_private_key("ssh-ed25519")
    path.parent.mkdir(parents=True, exist_ok=True)
    # Create with 0600 from the start: OpenSSH refuses a private key others can read.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(key.export_private_key())
    path.with_name(path.name + ".pub").write_text(_public_line(key) + "\n")
    return key


def _toml_str(value: str) -> str:
    """A TOML basic string (backslashes, quotes and control characters escaped)."""
    out = []
    for ch in value:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


__all__ = ["LOOPBACK_HOST", "LoopbackBox", "LoopbackFleet"]
