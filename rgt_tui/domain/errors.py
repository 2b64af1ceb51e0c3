"""The errors of reaching a box: a host unreachable, a session refused, a host key refused.

They live in the domain, not beside the transport that raises them, because every layer
speaks of them: services retry on them, the TUI shows a refused key for the user to trust
and the command line turns them into exit codes, and neither of those two may import the
transport (DESIGN, Layers). Plain data (host, message, fix, the key's facts): no I/O.
``rgt_tui.transport.base`` names them too, for the transport's own modules.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["HostKeyError", "SessionRefused", "TransportError"]


class TransportError(Exception):
    """A box could not be reached or a command could not be started on it.

    ``str()`` is a one-line, user-facing reason that names the host; ``fix`` is the
    next step the user can take, when one is known.
    """

    def __init__(self, host: str, message: str, fix: str | None = None) -> None:
        self.host = host
        self.message = message
        self.fix = fix
        super().__init__(f"{host}: {message}" + (f" — {fix}" if fix else ""))


class CommandFailed(TransportError):
    """A command ran on the box and exited non-zero (``status``; None: ended by a
    signal): the box answered. Callers that know the command read ``status`` (127: not
    found) rather than the message's words."""

    def __init__(self, host: str, message: str, status: int | None) -> None:
        super().__init__(host, message)
        self.status = status


class NoAnswer(TransportError):
    """Nothing answered at the box's own address: the connection was refused, timed out,
    found no route, or the name no longer resolves — what a destroyed box does. Never
    raised for a jump host's or a proxy command's failure, nor once something answered
    there (a refused key or login: the address still answers)."""


class SessionRefused(TransportError):
    """The box refused another session on a live connection (sshd's MaxSessions): not a
    drop; it passes once one of the open sessions ends."""


class HostKeyError(TransportError):
    """The box's host key was refused (T6). Never accepted silently.

    ``kind``: "unknown" (no key recorded for the name: the user may trust it after
    comparing ``presented`` with the provider's fingerprint; ``trust_line`` is the exact
    line and ``known_hosts_file`` where it goes, see ``known_hosts.trust_host_key``),
    "changed" (another key is recorded: ``known`` lists it, ``fix`` says how to remove it)
    or "revoked" (marked ``@revoked``: refused, nothing to trust).

    ``jump_host``: set when the refused key is a ProxyJump hop's, not the box's: the host
    name of that hop as ssh_config gives it. The key is then the jump host's, to compare
    with the jump host's own fingerprint (never the box provider's), and trusting it takes
    that name typed (a jump host is shared and long-lived).
    """

    def __init__(
        self,
        host: str,
        message: str,
        fix: str,
        *,
        kind: str = "unknown",
        presented: str,
        known: tuple[str, ...] = (),
        trust_line: str | None = None,
        known_hosts_file: Path | None = None,
        jump_host: str | None = None,
    ) -> None:
        super().__init__(host, message, fix)
        self.kind = kind
        self.presented = presented  # "ssh-ed25519 SHA256:..." the server showed
        self.known = known  # fingerprints recorded for it (changed, revoked)
        self.trust_line = trust_line if kind == "unknown" else None
        self.known_hosts_file = known_hosts_file
        self.jump_host = jump_host

    @property
    def key_owner(self) -> str:
        """The host whose key this is: the jump host for a hop's key, else the box."""
        return self.jump_host or self.host
