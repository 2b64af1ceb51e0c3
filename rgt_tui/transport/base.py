"""The Transport protocol: what every service needs from a box, SSH or local.

Services take a Transport and never know which kind it is, so the local machine and a
rented box run through the same code (DESIGN.md, data flow step 2).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


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


class HostKeyError(TransportError):
    """The box's host key is unknown or has changed (T6). Never accepted silently."""

    def __init__(
        self,
        host: str,
        message: str,
        fix: str,
        *,
        presented: str,
        known: tuple[str, ...] = (),
    ) -> None:
        super().__init__(host, message, fix)
        self.presented = presented  # SHA256 fingerprint the server showed
        self.known = known  # fingerprints known_hosts holds for it (changed key)


@dataclass(frozen=True)
class CommandResult:
    """The outcome of one finished remote command."""

    exit_status: int | None  # None when the command was killed by a signal
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.exit_status == 0


@runtime_checkable
class Transport(Protocol):
    """A connection to one host that can run commands and long-lived processes."""

    host: str

    async def connect(self) -> None:
        """Open the connection (one attempt); raise TransportError with the reason."""

    async def run(
        self, command: str, *, input: str | None = None, timeout: float | None = None
    ) -> CommandResult:
        """Run a shell command to completion; stdin gets ``input`` then EOF."""

    def stream_lines(self, command: str, *, input: str | None = None) -> AsyncIterator[str]:
        """Run a long-lived command and yield its stdout line by line (no newline).

        ``input`` is written to stdin, which is then closed. The iterator ends when the
        command exits; a dropped connection raises TransportError.
        """

    async def close(self) -> None:
        """Close the connection; safe to call twice."""

    @property
    def connected(self) -> bool:
        """Whether the connection is open right now."""
