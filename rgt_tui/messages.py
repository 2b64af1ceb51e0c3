"""App-level messages: what the telemetry workers and the screens tell the App.

Widget messages live in their widget's class (``HostPane.Opened``); these are the ones
that belong to no single widget.
"""

from __future__ import annotations

from textual.message import Message

from rgt_tui.services.telemetry import HostUpdate


class HostUpdated(Message):
    """A host's monitor produced a sample or a connection change."""

    def __init__(self, update: HostUpdate) -> None:
        super().__init__()
        self.update = update

    @property
    def host(self) -> str:
        """The host the update is about."""
        return self.update.host

    def can_replace(self, message: Message) -> bool:
        # A newer sample of the same host supersedes a queued older one (toolong's
        # rule): a slow screen drops stale data instead of working through a backlog.
        return isinstance(message, HostUpdated) and message.host == self.host


class ReconnectRequested(Message):
    """The user asked to drop and retry a host's connection now."""

    def __init__(self, host: str) -> None:
        super().__init__()
        self.host = host


class OpenHostRequested(Message):
    """The user asked for a host's detail screen."""

    def __init__(self, host: str) -> None:
        super().__init__()
        self.host = host
