"""The `ssh` value of a fleet-file host: user@host:port, a bare host, or an ssh_config alias.

A provider's own command pasted whole (``ssh -p 22034 root@ssh4.vast.ai -L 8080:…``) is
understood too (``parse_ssh_command``): the destination, ``-p``, ``-l`` and ``-i`` are
taken; options that only shape the session (forwardings, verbosity, a log file) are
dropped, since rgt-tui opens its own channels; options that change where or how the login
goes (``-J``, ``-F``, most ``-o``) are refused with the exact ``user@host:port`` to write,
as dropping them would connect somewhere else.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

LOCAL = "local"
SSH_FORMS = (
    "user@host:port, user@host, host, host:port, an ~/.ssh/config alias, "
    "user@[::1]:2222 (IPv6 in brackets), or 'local' for this machine"
)
_USER_RE = re.compile(r"[A-Za-z0-9._][A-Za-z0-9._-]*")
_HOST_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
_BRACKETED_RE = re.compile(r"\[([0-9A-Fa-f:.]+(?:%[A-Za-z0-9._-]+)?)\](?::(.*))?")
_PORT_RE = re.compile(r"[0-9]{1,5}")

# OpenSSH's options (ssh(1)): those that take no argument, and those that take one.
_FLAGS = set("46AaCfGgKkMNnqsTtVvXxYy")
_WITH_ARG = set("BbcDEeFIiJLlmOoPpQRSWw")
# Session-only options: they shape a terminal session, not where or as whom it logs in.
_DROPPED = set("LRDwEeSObBcmP")
# Said of a setting only ~/.ssh/config can carry: the fix is then the alias alone, never
# the bare address (h581 #1: "-J … cannot be taken — write ssh = root@10.0.0.5:2222"
# named an address the box cannot be reached at without its jump host).
_ALIAS = "(put it in ~/.ssh/config under a Host alias, and write that alias as ssh)"
_REFUSED = {
    "J": "a jump host",
    "F": "another ssh config file",
    "I": "a PKCS#11 key",
    "W": "stdio forwarding",
    "Q": "a query (it does not log in)",
}
# `-o` settings taken as -p / -l / -i, and those safe to drop: host-key checking stays
# rgt-tui's own (DESIGN, Trust), keepalive and timeouts are the transport's.
_OPTION_ALIASES = {"port": "p", "user": "l", "identityfile": "i"}
_OPTIONS_DROPPED = frozenset(
    o.lower()
    for o in (
        "StrictHostKeyChecking", "UserKnownHostsFile", "ServerAliveInterval",
        "ServerAliveCountMax", "ConnectTimeout", "LogLevel", "Compression", "TCPKeepAlive",
        "ExitOnForwardFailure", "ForwardAgent", "ForwardX11", "RequestTTY", "BatchMode",
        "IdentitiesOnly", "LocalForward", "RemoteForward", "DynamicForward",
        "ControlMaster", "ControlPath", "ControlPersist",
    )
)  # fmt: skip


@dataclass(frozen=True)
class SshTarget:
    """Where to SSH: ``user@host:port`` with user and port optional (ssh_config fills them)."""

    user: str | None
    host: str
    port: int | None = None

    @property
    def is_local(self) -> bool:
        """Always false: this machine is spelled ``local`` and has no SshTarget."""
        return False

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port is not None else ""
        return f"{user}{host}{port}"


@dataclass(frozen=True)
class SshCommand:
    """What a pasted ``ssh …`` command says: where to log in and, with ``-i``, which key."""

    target: SshTarget
    identity_file: str | None = None


def is_ssh_command(text: str) -> bool:
    """True when ``text`` reads as a pasted command: ``ssh`` (or ``/usr/bin/ssh``) and more."""
    words = text.split()
    return len(words) > 1 and words[0].rsplit("/", 1)[-1] == "ssh"


def parse_ssh_target(text: str) -> SshTarget | None:
    """Parse an ``ssh`` value; None for ``local``; ValueError naming every fault found and
    listing the accepted forms."""
    if text == LOCAL:
        return None
    reasons: list[str] = []
    if not text:
        reasons.append("it is empty")
    elif any(ch.isspace() for ch in text):
        reasons.append(
            "it contains whitespace — write one user@host:port "
            "(a pasted command is understood when it starts with 'ssh')"
        )
    else:
        target = _target(text, reasons)
        if not reasons and target is not None:
            return target
    raise ValueError(f"bad ssh target {text!r}: {'; '.join(reasons)}; accepted forms: {SSH_FORMS}")


def _target(text: str, reasons: list[str]) -> SshTarget | None:
    """Parse a whitespace-free target, adding one reason per fault (all of them, not the
    first) to ``reasons``; None when there was any."""
    found = len(reasons)
    user: str | None = None
    rest = text
    ats = text.count("@")
    if ats:
        user, rest = text.split("@", 1)[0], text.rsplit("@", 1)[1]
        if "@@" in text:
            reasons.append(
                "'@' is doubled ('@@') — write a single '@' between the user and the host"
            )
        elif ats > 1:
            reasons.append(f"'@' appears {ats} times — write one, between the user and the host")
        if not user:
            reasons.append("the user before '@' is empty")
        elif not _USER_RE.fullmatch(user):
            reasons.append(f"user {user!r} is not a valid login name")
        if not rest:
            reasons.append("the host after '@' is empty")
            return None
    port_text: str | None
    if rest.startswith("["):
        match = _BRACKETED_RE.fullmatch(rest)
        if match is None or ":" not in match.group(1):
            reasons.append("expected an IPv6 address in brackets, such as [::1] or [::1]:2222")
            return None
        host, port_text = match.group(1), match.group(2)
    else:
        if rest.count(":") > 1:
            reasons.append("an IPv6 address must be written in brackets, such as user@[::1]:2222")
            return None
        host, sep, port_text = rest.partition(":")
        if not sep:
            port_text = None
        if not host:
            reasons.append("the host is empty")
        elif not _HOST_RE.fullmatch(host):
            reasons.append(f"host {host!r} may only use ASCII letters and digits, '.', '_' and '-'")
    port = _port(port_text, reasons) if port_text is not None else None
    return SshTarget(user, host, port) if len(reasons) == found else None


def _port(text: str, reasons: list[str], where: str = "after ':'") -> int | None:
    """A port number 1-65535; a reason added otherwise."""
    if text.isascii() and text.isdigit() and len(text) > 5:  # 441411: a number, too large
        reasons.append(f"port {text} is outside 1-65535")
        return None
    if not _PORT_RE.fullmatch(text):
        what = "is empty" if not text else "is not a number"
        reasons.append(f"the port {text!r} {where} {what} (a port is digits, such as 22)")
        return None
    port = int(text)
    if not 1 <= port <= 65535:
        reasons.append(f"port {port} is outside 1-65535")
        return None
    return port


def parse_ssh_command(text: str) -> SshCommand:
    """Read a pasted ``ssh [options] [user@]host [options]`` command (see the module doc);
    ValueError naming every option that cannot be taken, and the exact value to write."""
    reasons: list[str] = []
    # A command pasted over lines, each ended by a backslash, is one command (h553 #7: the
    # line end was read as a command run on the box).
    text = re.sub(r"\\(?:\r\n|\r|\n)", " ", text)
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise ValueError(f"cannot read the pasted ssh command {text!r} ({exc})") from None
    taken: dict[str, str] = {}  # "p", "l", "i" -> value
    destination: str | None = None
    command: list[str] = []
    rest = words[1:]
    while rest:
        word = rest.pop(0)
        if word == "--":
            if destination is None and rest:
                destination = rest.pop(0)
            command = rest
            break
        if not word.startswith("-") or word == "-":
            if destination is None:
                destination = word
                continue
            command = [word, *rest]  # OpenSSH: the first word after the host starts a command
            break
        for option, value in _options(word, rest, reasons):
            if option == "o":
                option, value = _config_option(value, reasons)
            if option in ("p", "l", "i"):
                if option in taken and taken[option] != value:
                    reasons.append(f"-{option} is given twice ({taken[option]} and {value})")
                taken.setdefault(option, value)
    if command:
        reasons.append(
            f"it runs a command on the box ({shlex.join(command)}), and rgt-tui runs its own"
        )
    target = _command_target(destination, taken, reasons)
    if reasons:
        if any(_ALIAS in r for r in reasons):
            where = f" (HostName {target.host} and the rest)" if target is not None else ""
            fix = f'write the Host alias{where}, then ssh = "<that alias>"'
        elif target is not None:
            fix = f'write ssh = "{target}"'
        else:
            fix = f"accepted forms: {SSH_FORMS}"
        raise ValueError(f"pasted ssh command {text!r}: {'; '.join(reasons)} — {fix}")
    assert target is not None  # no reasons: the destination parsed
    return SshCommand(target, taken.get("i"))


def _options(word: str, rest: list[str], reasons: list[str]) -> list[tuple[str, str]]:
    """The options in one ``-xyz`` word (getopt style: flags bundle, ``-p22`` or ``-p 22``),
    consuming an argument from ``rest`` when the last one takes it."""
    found: list[tuple[str, str]] = []
    letters = word[1:]
    for i, letter in enumerate(letters):
        if letter in _FLAGS:
            continue  # session flags (-N, -T, -A, -v…): rgt-tui opens its own channels
        if letter not in _WITH_ARG:
            reasons.append(f"-{letter} is not an ssh option")
            continue
        value = letters[i + 1 :] or (rest.pop(0) if rest else "")
        if not value:
            reasons.append(f"-{letter} is missing its value")
        elif letter in _REFUSED:
            reasons.append(f"-{letter} ({_REFUSED[letter]}) cannot be taken from it {_ALIAS}")
        elif letter not in _DROPPED:
            found.append((letter, value))
        return found
    return found


def _config_option(value: str, reasons: list[str]) -> tuple[str, str]:
    """An ``-o Name=value`` as (-p / -l / -i, value), ("", "") when dropped or refused."""
    name, setting = (re.split(r"\s*=\s*|\s+", value.strip(), maxsplit=1) + [""])[:2]
    key = name.lower()
    if key in _OPTION_ALIASES:
        return _OPTION_ALIASES[key], setting
    if key not in _OPTIONS_DROPPED:
        reasons.append(f"-o {value} cannot be taken from it {_ALIAS}")
    return "", ""


def _command_target(
    destination: str | None, taken: dict[str, str], reasons: list[str]
) -> SshTarget | None:
    """The destination merged with ``-l`` and ``-p``; None (with a reason) when unusable."""
    if destination is None:
        reasons.append("it names no user@host to log in to")
        return None
    text = destination.removeprefix("ssh://")
    user_part, at, host_part = text.rpartition("@")
    if host_part.count(":") > 1 and not host_part.startswith("["):
        # An IPv6 address as OpenSSH takes it in a command: the port comes with -p, never
        # after a ':' (h553 #7: `ssh root@2001:db8::1` was refused).
        text = f"{user_part}{at}[{host_part}]"
    found = len(reasons)
    parsed = _target(text, reasons)
    port = _port(taken["p"], reasons, "given to -p") if "p" in taken else None
    if parsed is None or len(reasons) > found:
        return None
    user = parsed.user or taken.get("l")
    if parsed.user and "l" in taken and taken["l"] != parsed.user:
        reasons.append(f"-l {taken['l']} and {parsed.user}@ name two different users")
    if parsed.port is not None and port is not None and parsed.port != port:
        reasons.append(f"-p {port} and :{parsed.port} name two different ports")
    return SshTarget(user, parsed.host, port if port is not None else parsed.port)
