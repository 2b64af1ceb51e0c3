"""What one SSH connection attempt needs, and the host-key check it makes.

Worked out off the event loop before each attempt (``connect_plan``: ssh_config, the
known_hosts files, the identity file), plus the options every connection sets so that
nothing of the user's reaches a box (``NOTHING_OF_THE_USERS``) and the client that
hands each presented key to the verdict (``CheckingClient``). ``ssh.SshTransport``
opens the connections.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path

import asyncssh

from rgt_tui.transport.base import TransportError
from rgt_tui.transport.known_hosts import (
    KeyVerdict,
    KnownKeys,
    read_known_keys,
    resolve_destination,
)

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


class CheckingClient(asyncssh.SSHClient):
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
class ConnectPlan:
    """What one connection attempt needs, worked out off the event loop (files, config)."""

    known: KnownKeys
    jump: str | None  # ssh_config's ProxyJump: hops this transport opens itself
    identity_needs_agent: bool  # identity_file needs a passphrase; the agent signs instead
    proxy_command: str = ""  # ssh_config's ProxyCommand for the box ("" when none)
    # Where the connection goes, ``host:port``, once ssh_config resolved it ("": not
    # known), and whether ssh_config changed it (a Host alias's HostName or Port): a
    # refusal names it (hour s22a #10: "connection refused" named no port nor alias).
    target: str = ""
    via_config: str = ""  # "HostName 10.0.0.5 and Port 2222": what ssh_config changed


def agent_running() -> bool:
    sock = os.environ.get("SSH_AUTH_SOCK")
    return bool(sock) and os.path.exists(sock)


def connect_plan(
    host: str,
    known_hosts: Path,
    identity_file: Path | None,
    address: str,
    port: int | None,
    username: str | None,
    hop: bool = False,
    identity_at: str = "",
) -> ConnectPlan:
    """Read ssh_config, the known_hosts files and the identity file (blocking I/O).

    ``host``: the fleet's name for the box, for the errors; ``known_hosts``: the file
    read first; ``hop``: for a ProxyJump hop (the identity file is the box's only);
    ``identity_at``: where the fleet file sets the identity file (``hosts.toml:14``)."""
    try:
        dest = resolve_destination(address, port, username)
    except (OSError, ValueError) as exc:
        raise TransportError(
            host,
            f"cannot read the ssh_config for {address}: {exc}",
            "fix ~/.ssh/config (asyncssh reads it as OpenSSH does)",
        ) from exc
    known = read_known_keys([known_hosts, *dest.known_hosts], dest.key_name)
    needs_agent = not hop and identity_needs_agent(host, identity_file, identity_at)
    # What ssh_config changed, said apart: a port the fleet file gives is its own, not
    # the config's (a user's re-test read "HostName/Port from ~/.ssh/config" for both).
    changed = [f"HostName {dest.host}"] if dest.host != address else []
    changed += [f"Port {dest.port}"] if port is None and dest.port != 22 else []
    via_config = " and ".join(changed)
    target = f"[{dest.host}]:{dest.port}" if ":" in dest.host else f"{dest.host}:{dest.port}"
    return ConnectPlan(known, dest.jump, needs_agent, dest.proxy_command, target, via_config)


def identity_setting(identity_at: str) -> str:
    """``identity_file (hosts.toml:14)``: the setting to fix, where the user wrote it."""
    return f"identity_file ({identity_at})" if identity_at else "identity_file in the fleet file"


def identity_needs_agent(host: str, identity_file: Path | None, identity_at: str = "") -> bool:
    """Whether identity_file needs a passphrase (rgt-tui never asks for one) while an
    ssh-agent runs: the agent's copy of the key signs then. TransportError when the
    file cannot be used at all."""
    if identity_file is None:
        return False
    path = identity_file.expanduser()
    try:
        asyncssh.read_private_key(str(path))
    except asyncssh.KeyImportError as exc:
        if "passphrase" not in str(exc).lower():
            raise TransportError(
                host,
                f"identity_file {path} is not a private key rgt-tui can read ({exc})",
                f"point {identity_setting(identity_at)} at the private key, not its .pub",
            ) from exc
        if agent_running():
            return True
        raise TransportError(
            host,
            f"identity_file {path} needs a passphrase, and rgt-tui never asks for one",
            f'add it to an ssh-agent: eval "$(ssh-agent)" && ssh-add {shlex.quote(str(path))}'
            " — rgt-tui then signs with the agent's copy",
        ) from exc
    except OSError as exc:
        raise TransportError(
            host,
            f"identity_file {path}: {exc.strerror or exc}",
            f"check {identity_setting(identity_at)}",
        ) from exc
    return False
