"""Where ``watch`` tells what it saw: the ``Sink`` protocol, and its sinks —
notifications (``notify``: Apprise, one message per event key) and Prometheus metrics
(``metrics``). ``rgt-tui watch`` wires them explicitly (``cli/watch.py``), with its own
line-per-event printer."""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Protocol

from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.health import Alert
from rgt_tui.services.watch.events import HostState, WatchEvent


class Sink(Protocol):
    """What the watcher hands each sink, in this order: ``resume`` once at the start,
        then a host's ``HostState`` after every sample, queue poll or tick (``on_host``) and
        every event it owes (``on_event``: the runtime's, and the drivers' stops and pulls);
    the torn-down boxes that still answer after each look at them (``on_torn_down``);
        and the fleet as it is after each change of the fleet file (``on_fleet``).

        Each may return an awaitable, awaited before the next sink hears, or nothing; one
        that raises is reported and the others still hear. A sink subclasses this and
        overrides what it uses: the others do nothing."""

    def resume(self) -> Awaitable[object] | None:
        """Send what is owed from an earlier run (a notification a target never got)."""
        return None

    def on_host(self, host: HostConfig, state: HostState) -> Awaitable[None] | None:
        """``host`` as its pane would show it now."""
        return None

    def on_event(self, event: WatchEvent) -> Awaitable[None] | None:
        """An event owed (told once: the watch memory keeps what was told)."""
        return None

    def on_torn_down(self, answering: Mapping[str, Alert]) -> Awaitable[None] | None:
        """The boxes recorded as torn down that answered the latest look at them, with the
        alert each carries (``drivers.still_answers``; every ten minutes): a box no longer
        named has stopped answering."""
        return None

    def on_pull(self, host: str, ok: bool, at: float) -> Awaitable[None] | None:
        """A periodic pull of ``host`` ended at ``at``: came through (``ok``), or failed
        (told once as ``pull_failed``; a box that does not answer is neither)."""
        return None

    def on_fleet(self, fleet: Fleet) -> Awaitable[None] | None:
        """The fleet file changed and was applied (hosts added, removed or edited; the
        fleet's settings): what the sink keeps of the fleet is ``fleet`` from now on."""
        return None
