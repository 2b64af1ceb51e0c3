"""The `ssh` value of a fleet-file host: user@host:port, a bare host, or an ssh_config alias."""

from __future__ import annotations

import re
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


def parse_ssh_target(text: str) -> SshTarget | None:
    """Parse an ``ssh`` value; None for ``local``; ValueError listing the accepted forms."""

    def bad(reason: str) -> ValueError:
        return ValueError(f"bad ssh target {text!r}: {reason}; accepted forms: {SSH_FORMS}")

    if text == LOCAL:
        return None
    if not text:
        raise bad("it is empty")
    if any(ch.isspace() for ch in text):
        raise bad("it contains whitespace")
    user: str | None = None
    rest = text
    if "@" in text:
        user, _, rest = text.partition("@")
        if not user:
            raise bad("the user before '@' is empty")
        if not rest:
            raise bad("the host after '@' is empty")
        if "@" in rest or not _USER_RE.fullmatch(user):
            raise bad(f"user {user!r} is not a valid login name")
    if rest.startswith("["):
        match = _BRACKETED_RE.fullmatch(rest)
        if match is None or ":" not in match.group(1):
            raise bad("expected an IPv6 address in brackets, such as [::1] or [::1]:2222")
        host, port_text = match.group(1), match.group(2)
    else:
        if rest.count(":") > 1:
            raise bad("an IPv6 address must be written in brackets, such as user@[::1]:2222")
        host, sep, port_text = rest.partition(":")
        if not sep:
            port_text = None
        if not host:
            raise bad("the host is empty")
        if not _HOST_RE.fullmatch(host):
            raise bad(f"host {host!r} may only use letters, digits, '.', '_' and '-'")
    port = None
    if port_text is not None:
        if not _PORT_RE.fullmatch(port_text):
            raise bad(f"port {port_text!r} is not a number")
        port = int(port_text)
        if not 1 <= port <= 65535:
            raise bad(f"port {port} is outside 1-65535")
    return SshTarget(user, host, port)
