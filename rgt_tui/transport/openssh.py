"""The user's OpenSSH ``ssh``, for tools that bring their own transfer (rsync's ``-e``)
and for the shell on a box (``s``, ``rgt-tui shell``: interactive, a terminal forced
when this side has one).

Ours stays the only host-key check (DESIGN.md, Trust) whatever ~/.ssh/config says: the
command names the same known_hosts files the SSH transport reads (the host's file, then
those ssh_config names), with checking strict, and turns off agent and X11 forwarding,
port forwards, a shared master connection (one opened elsewhere skips the check) and
anything ssh could run here. Command-line options win over ssh_config in OpenSSH, and
``ssh -G`` (which resolves the configuration without connecting) confirms that they did;
where it shows a setting that would undo them (a ProxyJump hop is checked by its own
configuration, a KnownHostsCommand adds keys), the caller is told why and uses the SSH
transport instead.

Nothing of the user's environment reaches the box either, whatever ssh_config's
``SendEnv`` or ``SetEnv`` say (a user's hour found ``SendEnv RGT_*`` sending a variable
to the box through sync, the bulk pull and the shell; a ``SendEnv *_TOKEN`` would send a
credential). ``SendEnv`` only picks from ssh's own environment and a command-line
``SendEnv`` cannot take back the config's, so ssh runs without every variable the
resolved ``sendenv`` patterns match (``OpenSsh.env``), the locale's and the terminal's
aside; the rest stays, for a ProxyCommand or an askpass that needs it. ``SetEnv`` takes
its first value, so the command line's ``SetEnv RGT_TUI=1`` stands in for any the config
sets (an OpenSSH before 7.8 knows no SetEnv, in its config either: left out there).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from rgt_tui.domain.config import HostConfig
from rgt_tui.transport.known_hosts import (
    DEFAULT_KNOWN_HOSTS,
    Destination,
    known_hosts_name,
    resolve_destination,
)

# What must hold after ssh_config is applied (``ssh -G`` prints booleans its own way).
_REQUIRED = {
    "stricthostkeychecking": ("true", "yes"),
    "globalknownhostsfile": ("/dev/null",),
    "forwardagent": ("no",),
    "forwardx11": ("no",),
    "clearallforwardings": ("yes", "true"),
    "controlmaster": ("false", "no"),
    "permitlocalcommand": ("no", "false"),
}
# rsync's ssh runs unattended: no prompt may wait for a person who is not there. The shell
# is a person's: a passphrase may be asked, and the terminal is forced (``-t``).
_BATCH = {"batchmode": ("yes", "true")}
_INTERACTIVE = {"batchmode": ("no", "false"), "requesttty": ("force",)}
# Settings that must be absent (or "none"): each would let something else vouch for the
# box, or connect through a hop checked by other rules.
_ABSENT = ("proxyjump", "knownhostscommand", "controlpath", "remotecommand")
_G_TIMEOUT_S = 10.0
# What a SendEnv may send (the box sees them anyway: the locale it formats with, the
# terminal a shell draws on); every other variable a sendenv pattern matches is kept
# from ssh (``ssh_environment``). The locale's real categories only: an ``LC_*`` pattern
# must not carry ``LC_MY_TOKEN`` (sshd's usual AcceptEnv takes LC_*).
SAFE_TO_SEND = frozenset(
    {
        "LANG", "LANGUAGE", "TERM", "LC_ALL", "LC_CTYPE", "LC_COLLATE", "LC_MESSAGES",
        "LC_NUMERIC", "LC_TIME", "LC_MONETARY", "LC_PAPER", "LC_NAME", "LC_ADDRESS",
        "LC_TELEPHONE", "LC_MEASUREMENT", "LC_IDENTIFICATION",
    }
)  # fmt: skip
# The one variable ssh may set (its SetEnv is first-come: this one wins over the config's).
SET_ENV = "RGT_TUI=1"


def ssh_environment(
    send_env: Iterable[str], environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """``environ`` (this process's) less every variable ``send_env`` (the resolved
    SendEnv patterns) matches, ``SAFE_TO_SEND`` aside: nothing of the user's for ssh to
    send, and all the rest for what ssh runs (a ProxyCommand reading HTTPS_PROXY or
    AWS_PROFILE)."""
    environ = os.environ if environ is None else environ
    patterns = tuple(send_env)
    return {
        k: v
        for k, v in environ.items()
        if k in SAFE_TO_SEND or not any(fnmatchcase(k, p) for p in patterns)
    }


@dataclass(frozen=True)
class OpenSsh:
    """``ssh`` with our options (no destination), and the host name to give it."""

    argv: tuple[str, ...]
    destination: str  # the fleet file's address: rsync's ``HOST:PATH`` takes it
    # The environment to run it (or rsync) with: nothing a SendEnv could send the box.
    env: Mapping[str, str] = field(default_factory=lambda: ssh_environment(()))

    def rsync_shell(self) -> str:
        """The command as one string for rsync's ``-e`` (rsync splits it on spaces and
        honours quotes); ``openssh_for`` only builds commands this can spell."""
        return " ".join(a if _plain(a) else f"'{a}'" for a in self.argv)

    def command(self, remote_command: str) -> tuple[str, ...]:
        """The whole argv: ssh, our options, ``--``, the host, then the command the box's
        login shell runs (one argument: ssh hands it to that shell as it is)."""
        return (*self.argv, "--", self.destination, remote_command)

    def remote(self, path: str) -> str:
        """``host:path`` for rsync (an IPv6 address in brackets)."""
        host = f"[{self.destination}]" if ":" in self.destination else self.destination
        return f"{host}:{path}"


def openssh_for(
    host: HostConfig, *, interactive: bool = False, terminal: bool = True
) -> OpenSsh | str:
    """The ``ssh`` command for ``host``, or why it cannot be used (a sentence). Blocking:
    reads ssh_config and runs ``ssh -G``; call it in a thread.

    ``interactive``: for a person (the shell key): prompts allowed (a key's passphrase;
    never a host key, checking stays strict), and a terminal forced when ``terminal``
    (this side's stdin is one), else none."""
    if host.ssh is None:
        return "the host is this machine"
    ssh = shutil.which("ssh")
    if ssh is None:
        return "no OpenSSH client (ssh) on this machine"
    target = host.ssh
    try:
        dest = resolve_destination(target.host, target.port, target.user)
    except (OSError, ValueError) as exc:
        return f"~/.ssh/config cannot be read for {target.host} ({exc})"
    files = [(host.known_hosts or DEFAULT_KNOWN_HOSTS).expanduser(), *dest.known_hosts]
    options = {
        # Unattended (rsync): never a prompt; rgt-tui asks for no password or passphrase.
        "BatchMode": "no" if interactive else "yes",
        "StrictHostKeyChecking": "yes",
        "UserKnownHostsFile": " ".join(str(f) for f in files),
        "GlobalKnownHostsFile": "/dev/null",
        "CheckHostIP": "no",
        "UpdateHostKeys": "no",  # ssh must not rewrite the files we check against
        "ForwardAgent": "no",
        "ForwardX11": "no",
        "ClearAllForwardings": "yes",
        "GSSAPIDelegateCredentials": "no",
        "ControlMaster": "no",
        "ControlPath": "none",
        "PermitLocalCommand": "no",
        "RemoteCommand": "none",
        "SetEnv": SET_ENV,  # first-come: no SetEnv of the config's is sent
        "ConnectTimeout": "10",
        "ServerAliveInterval": "10",
        "ServerAliveCountMax": "3",
    }
    if interactive:
        # -t: the box's shell and tmux need a terminal. Not from a script (stdin from
        # /dev/null, a pipe): a forced terminal's shell never saw the EOF and waited at
        # its prompt forever, a session open on a box that bills (hour s45b #1); without
        # one, the box's shell reads the commands piped in and ends with the input.
        options["RequestTTY"] = "force" if terminal else "no"
    # ssh splits UserKnownHostsFile on spaces; rsync's -e also needs every argument
    # spelled without quotes. The shell's argv goes to ssh as it is.
    if any(_has_space(f) for f in files):
        return "a known_hosts path holds a space, which ssh's UserKnownHostsFile cannot take"
    argv = _argv(ssh, options, host)
    if not interactive and any(not _spellable(a) for a in argv):
        return "a path holds a quote that rsync's -e cannot pass to ssh"
    resolved = _resolve(argv, target.host)
    if isinstance(resolved, str) and "setenv" in resolved.lower():
        # An OpenSSH before 7.8 knows no SetEnv ("Bad configuration option"), in its
        # config either: nothing to stand in for.
        del options["SetEnv"]
        argv = _argv(ssh, options, host)
        resolved = _resolve(argv, target.host)
    if isinstance(resolved, str):
        return resolved
    required = {**_REQUIRED, **(_INTERACTIVE if interactive else _BATCH)}
    if interactive:
        # As asked: force, or no (which ssh -G prints as "false").
        required["requesttty"] = ("force",) if options["RequestTTY"] == "force" else ("no", "false")
    if "SetEnv" in options:
        required["setenv"] = (SET_ENV.lower(),)
    why = _config_undoes(resolved, files, required, dest)
    if why is not None:
        return why
    return OpenSsh(tuple(argv), target.host, ssh_environment(resolved.send_env))


def _argv(ssh: str, options: Mapping[str, str], host: HostConfig) -> list[str]:
    """ssh, our options, and the fleet file's port, user and key."""
    assert host.ssh is not None
    argv = [ssh]
    for key, value in options.items():
        argv += ["-o", f"{key}={value}"]
    if host.ssh.port is not None:
        argv += ["-p", str(host.ssh.port)]
    if host.ssh.user is not None:
        argv += ["-l", host.ssh.user]
    if host.identity_file is not None:
        argv += ["-i", str(host.identity_file.expanduser())]
    return argv


@dataclass(frozen=True)
class _Resolved:
    """What ``ssh -G`` resolved: each setting's first value (keys lower-cased), every
    SetEnv value and every SendEnv pattern."""

    settings: dict[str, str]
    set_env: tuple[str, ...]
    send_env: tuple[str, ...]


def _resolve(argv: list[str], destination: str) -> _Resolved | str:
    """The configuration ssh resolves for ``destination`` with ``argv`` (``ssh -G``,
    which does not connect), or why it could not be read."""
    try:
        done = subprocess.run(
            [*argv, "-G", "--", destination],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=_G_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"ssh -G could not check the SSH settings ({exc})"
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        return f"ssh -G refused the SSH settings ({lines[-1] if lines else done.returncode})"
    settings: dict[str, str] = {}
    lists: dict[str, list[str]] = {"setenv": [], "sendenv": []}
    for line in done.stdout.splitlines():
        key, _, value = line.partition(" ")
        key, value = key.lower(), value.strip()
        settings.setdefault(key, value)
        if key in lists:
            lists[key].append(value)
    return _Resolved(settings, tuple(lists["setenv"]), tuple(lists["sendenv"]))


def _config_undoes(
    resolved: _Resolved,
    files: list[Path],
    required: dict[str, tuple[str, ...]],
    dest: Destination,
) -> str | None:
    """What in the resolved configuration (``ssh -G``) undoes our options, or None. ssh
    must also reach the box our own check resolved (``dest``: HostName, Port) and match
    its key under the same known_hosts name (HostKeyAlias): an ssh_config that ssh reads
    and the SSH transport does not (OpenSSH reads ~ from the password database, asyncssh
    from $HOME) could otherwise send ssh elsewhere, or let another line vouch for the box."""
    settings = resolved.settings
    if "setenv" in required and resolved.set_env != (SET_ENV,):
        return f"ssh_config's SetEnv would send the box {', '.join(resolved.set_env)}"
    for key, allowed in required.items():
        if settings.get(key, "").lower() not in allowed:
            return f"ssh_config leaves {key} = {settings.get(key, 'unset')}"
    if settings.get("userknownhostsfile", "").split() != [str(f) for f in files]:
        return "ssh_config changes the known_hosts files ssh would check"
    for key in _ABSENT:
        if settings.get(key, "none").lower() != "none":
            return f"ssh_config sets {key} {settings[key]}"
    host, port = settings.get("hostname", "").lower(), settings.get("port", "")
    if host != dest.host.lower() or port != str(dest.port or 22):
        return (
            f"ssh would connect to {host}:{port}, not {dest.host}:{dest.port or 22} as "
            "rgt-tui's own check does (a HostName or Port it reads differently)"
        )
    alias = settings.get("hostkeyalias", "none")
    named = alias.lower() if alias.lower() != "none" else known_hosts_name(host, int(port))
    if named != dest.key_name:
        return (
            f"ssh would check the box's key as {named}, not {dest.key_name} as rgt-tui's "
            "own check does (a HostKeyAlias it reads differently)"
        )
    return None


def _plain(arg: str) -> bool:
    return not any(c.isspace() or c in "'\"\\" for c in arg)


def _spellable(arg: str) -> bool:
    return not any(c in "'\"\\\n\r\t" for c in arg)


def _has_space(path: Path) -> bool:
    return any(c.isspace() for c in str(path))
