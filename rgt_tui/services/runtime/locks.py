"""``HostLocks``: which job holds each host in this process, one at a time per host.

The fleet runtime owns the one instance (``FleetRuntime.locks``) and hands it to
everything that must not overlap on a host, whoever starts it: the TUI's jobs (a ``p``,
a verify, a sync, a teardown: ``controllers.jobs.JobRunner``), the periodic pull and the
autostop (``services.watch.drivers``). So an autostop never runs while a pull, a verify
or a teardown holds the host, and no pull starts while an autostop's check and stop do.
"""

from __future__ import annotations


class HostLocks:
    """Which job holds each host in this process: one job at a time per host.

    Single-threaded (the event loop's), so no lock is needed around the dict; a second
    claim is refused at once, naming the holder, never queued behind it."""

    def __init__(self) -> None:
        self._held: dict[str, str] = {}

    def holder(self, host: str) -> str | None:
        """The job holding ``host`` now (None: free)."""
        return self._held.get(host)

    def claim(self, host: str, job: str) -> str | None:
        """Hold ``host`` for ``job``; returns None when claimed, else the job holding it."""
        held = self._held.get(host)
        if held is not None:
            return held
        self._held[host] = job
        return None

    def release(self, host: str, job: str) -> None:
        """Let ``host`` go, if ``job`` holds it."""
        if self._held.get(host) == job:
            del self._held[host]
