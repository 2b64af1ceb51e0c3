"""A real OpenSSH ``sshd`` on 127.0.0.1 for tests, with its own keys and fleet file.

The loopback asyncssh boxes cover most tests; this one checks that what works against
them also works against the sshd real boxes run (OpenSSH's own known_hosts format,
key exchange and sftp). CI runs as root, hence ``PermitRootLogin yes``.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import signal
import subprocess
import time
from pathlib import Path
from types import TracebackType

import asyncssh
import psutil

from support.machine import children, free_port

SSHD = Path("/usr/sbin/sshd")
INSTALL_HINT = "install openssh-server (.ci/run does this)"
_START_TIMEOUT_S = 60.0  # generous: a busy machine starts sshd slowly


class OpenSshServer:
    """One ``sshd -D`` process on a loopback port, plus keys, known_hosts and hosts.toml."""

    def __init__(
        self,
        base_dir: Path,
        host_name: str = "real1",
        config: tuple[str, ...] = (),
        log_level: str = "ERROR",
    ) -> None:
        """``config``: more sshd_config lines; ``log_level``: sshd's LogLevel (DEBUG3 logs
        every channel request a client makes, e.g. ``auth-agent-req@openssh.com``)."""
        self.base_dir = Path(base_dir).resolve()
        self.host_name = host_name
        self.user = getpass.getuser()
        self.port = 0  # picked on the first start, kept for restarts
        self.workdir = self.base_dir / host_name
        self.host_key = self.base_dir / "ssh_host_ed25519_key"
        self.client_key = self.base_dir / "client_key"
        self.authorized_keys = self.base_dir / "authorized_keys"
        self.known_hosts = self.base_dir / "known_hosts"
        self.hosts_file = self.base_dir / "hosts.toml"
        self.config = self.base_dir / "sshd_config"
        self.log_file = self.base_dir / "sshd.log"
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_from = 0
        self.extra_config = config  # more sshd_config lines ("MaxSessions 3")
        self.log_level = log_level

    @property
    def is_running(self) -> bool:
        """Whether the sshd listener process is alive."""
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int:
        """The listener's pid (each connection's sshd is a child of it)."""
        assert self._proc is not None, "sshd is not running"
        return self._proc.pid

    def start(self) -> None:
        """Write keys and config on first use, start sshd and wait until it accepts."""
        if self.is_running:
            return
        if not SSHD.exists():
            raise RuntimeError(f"{SSHD} not found: {INSTALL_HINT}")
        host_pub = self.prepare_keys()
        # A port picked here (not a restart's, which must stay) may be taken between the
        # pick and sshd's bind (tests in parallel, any client's outgoing port): then pick
        # another.
        picked = not self.port
        for _ in range(5):
            if picked:
                self.port = free_port()
            if self._launch():
                break
        else:
            raise RuntimeError(f"sshd could not bind a free port: {self.log_file.read_text()}")
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {host_pub}\n")
        self.hosts_file.write_text(self._hosts_toml())

    def _launch(self) -> bool:
        """Start sshd on ``self.port``; False when the port was taken before it bound."""
        self._write_config()
        # sshd insists on its privilege-separation directory even under -D. Not root:
        # the mkdir fails and sshd's own error (in the log) says what is missing.
        with contextlib.suppress(OSError):
            Path("/run/sshd").mkdir(mode=0o755, parents=True, exist_ok=True)
        with self.log_file.open("ab") as log:
            self._log_from = log.tell()  # this start's lines follow
            # -E: every sshd process (the per-connection ones too) appends to the log.
            self._proc = subprocess.Popen(
                [str(SSHD), "-D", "-E", str(self.log_file), "-f", str(self.config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        return self._wait_until_listening()

    def prepare_keys(self) -> str:
        """Create the directories, host key and client key (kept when there); return the
        host key's public line. ``start`` calls it; a test calls it first to sign the host
        key (a ``HostCertificate`` line in ``extra_config``) before sshd starts."""
        self.base_dir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "results").mkdir(parents=True, exist_ok=True)
        host_pub = _ensure_key(self.host_key)
        client_pub = _ensure_key(self.client_key)
        self.authorized_keys.write_text(client_pub + "\n")
        return host_pub

    def stop(self) -> None:
        """Kill the per-connection sshd processes, then the listener (the box goes down)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        # Each connection's sshd runs in its own session (setsid), so a group kill would
        # miss it; find them by parent pid instead.
        for pid in children(proc.pid):
            _kill(pid, signal.SIGKILL)
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def __enter__(self) -> OpenSshServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def connect(self, **kwargs: object) -> asyncssh.SSHClientConnection:
        """``asyncssh.connect`` to this sshd with the generated key and known_hosts."""
        options: dict[str, object] = {
            "username": self.user,
            "client_keys": [str(self.client_key)],
            "known_hosts": str(self.known_hosts),
            "config": None,
        }
        options.update(kwargs)
        return asyncssh.connect("127.0.0.1", self.port, **options)  # type: ignore[return-value]

    def session_env(self) -> dict[str, str]:
        """What every session's environment gets (sshd's ``SetEnv``): HOME first, then
        the ``SetEnv`` lines of ``extra_config``."""
        env = {"HOME": str(self.workdir)}
        for line in self.extra_config:
            if line.startswith("SetEnv "):
                env |= dict(pair.split("=", 1) for pair in line.split()[1:])
        return env

    def _write_config(self) -> None:
        lines = [
            f"Port {self.port}",
            "ListenAddress 127.0.0.1",
            f"HostKey {self.host_key}",
            f"AuthorizedKeysFile {self.authorized_keys}",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",
            f"PidFile {self.base_dir / 'sshd.pid'}",
            "Subsystem sftp internal-sftp",
            "PermitRootLogin yes",
            f"LogLevel {self.log_level}",
            "UseDNS no",
            "PrintMotd no",
            # sshd keeps only the first SetEnv line: every variable goes in one. The box's
            # ~ is its folder: this machine's own ~/.rgt (a queue someone ran here) is no
            # part of the test (its queue records made a verify miss cells).
            "SetEnv " + " ".join(f"{k}={v}" for k, v in self.session_env().items()),
            *(line for line in self.extra_config if not line.startswith("SetEnv ")),
            # OpenSSH >= 9.8 penalises a source address after dropped connections, and
            # the tests drop connections on purpose; older versions reject the option.
            "PerSourcePenalties no",
        ]
        self.config.write_text("\n".join(lines) + "\n")
        check = subprocess.run(
            [str(SSHD), "-t", "-f", str(self.config)], capture_output=True, text=True
        )
        if check.returncode != 0 and "PerSourcePenalties" in check.stderr:
            self.config.write_text("\n".join(lines[:-1]) + "\n")

    def _wait_until_listening(self) -> bool:
        """True once this sshd listens on its port (its own socket: a connection could
        reach another test's server that won the port); False when it lost the port."""
        deadline = time.monotonic() + _START_TIMEOUT_S
        while time.monotonic() < deadline:
            assert self._proc is not None
            if self._proc.poll() is not None:
                log = self.log_file.read_bytes()[self._log_from :].decode(errors="replace")
                if "Address already in use" in log:
                    self._proc = None
                    return False
                raise RuntimeError(f"sshd exited with {self._proc.returncode}: {log}")
            if self._listens():
                return True
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"sshd did not listen on port {self.port} within {_START_TIMEOUT_S}s")

    def _listens(self) -> bool:
        """This sshd process holds a listening socket on its port."""
        assert self._proc is not None
        try:
            sockets = psutil.Process(self._proc.pid).net_connections(kind="tcp")
        except psutil.Error:
            return False
        return any(s.status == psutil.CONN_LISTEN and s.laddr.port == self.port for s in sockets)

    def _hosts_toml(self) -> str:
        return (
            "[[hosts]]\n"
            f'name = "{self.host_name}"\n'
            f'ssh = "{self.user}@127.0.0.1:{self.port}"\n'
            f'identity_file = "{self.client_key}"\n'
            f'known_hosts = "{self.known_hosts}"\n'
            'profile = "generic-ssh"\n'
            f'workdir = "{self.workdir}"\n'
            f'durable_dir = "{self.workdir / "results"}"\n'
            f'mounts = ["{self.workdir}"]\n'
        )


def _ensure_key(path: Path) -> str:
    """Create an ed25519 key at `path` (mode 0600) if missing; return its public line."""
    if path.exists():
        key = asyncssh.read_private_key(str(path))
    else:
        key = asyncssh.generate_private_key("ssh-ed25519")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key.export_private_key())
    public = " ".join(key.export_public_key("openssh").decode().split()[:2])
    path.with_name(path.name + ".pub").write_text(public + "\n")
    return public


def _kill(pid: int, sig: signal.Signals) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
