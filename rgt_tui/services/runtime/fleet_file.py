"""The fleet file is live: what changed between two readings, and the look for a change.

``FleetFileWatch`` looks at the fleet file's stamp (inode, size, mtime:
``records_watch.file_stamp``, the records' own mechanism) every ``every_s`` seconds on
the event loop, and reads the file again only when it changed; ``FleetRuntime`` applies
what ``fleet_changes`` finds (monitors and polls started, stopped or restarted) and tells
its consumers, the TUI and ``watch`` alike. A file with a mistake is refused whole: the
running fleet keeps its last good settings, and the mistake (``ConfigError``: file,
line, key) is told once until the file changes again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields, is_dataclass, replace
from pathlib import Path

from rgt_tui.domain.config import ConfigError, Fleet, HostConfig
from rgt_tui.domain.queue_records import tmux_session_name
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.records_watch import Stamp, file_stamp

FLEET_FILE_EVERY_S = 2.0  # an edit is taken within a few seconds, for one stat call
# What a host's shared connection is made from (``transport_for``): a change needs a
# new connection, not only a new monitor over the old one.
CONNECTION_FIELDS = ("ssh", "identity_file", "known_hosts", "host_key")


def _settings(fleet: Fleet) -> tuple[object, ...]:
    """The fleet-wide settings every monitor is built with."""
    return (fleet.poll_seconds, fleet.thresholds)


def _as_compared(host: HostConfig) -> HostConfig:
    # A host block moved down by one added above it is the same host: its header line
    # (and a refusal's message, which names that line, and where its identity_file is
    # written, which its connection errors name) are not what it asks for.
    return replace(host, line=None, pull_refused=None, identity_at="")


@dataclass(frozen=True)
class FleetChanges:
    """What a new reading of the fleet file changes for the running fleet."""

    added: tuple[HostConfig, ...] = ()
    removed: tuple[str, ...] = ()  # no longer run: gone from the file, or not picked now
    # Of ``removed``, those still in the file (``watch`` runs no torn-down box): not
    # "removed" in the summary (hour s45a #5: "removed box3" for a box torn down).
    unpicked: tuple[str, ...] = ()
    edited: tuple[HostConfig, ...] = ()  # the new config of each host that changed
    reconnect: frozenset[str] = frozenset()  # edited hosts whose connection changed
    settings: bool = False  # poll_seconds or thresholds: every monitor is rebuilt
    # A warning per removed host that was still at work or never torn down: nothing
    # watches, pulls or bills it here any more (hour s22a #2), said loudly by each front.
    left: tuple[tuple[str, str], ...] = ()  # (host, the warning)
    # What changed, by key: each edited host's, and [fleet]'s (results_dir, notify …),
    # so "changed box1" says what (s37 fleet hour #13) and a [fleet] key that rebuilds
    # no monitor is said at all (results_dir was not: hour #6).
    keys: dict[str, tuple[str, ...]] = field(default_factory=dict)
    fleet_keys: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        """True when nothing the running fleet does changes."""
        return not (self.added or self.removed or self.edited or self.settings or self.fleet_keys)

    def summary(self) -> str:
        """``added gpu3; removed gpu1; changed gpu2 (workdir)`` ('' when nothing changed)."""
        edited = [
            h.name + (f" ({', '.join(self.keys[h.name])})" if self.keys.get(h.name) else "")
            for h in self.edited
        ]
        parts = [
            f"{what} {', '.join(names)}"
            for what, names in (
                ("added", [h.name for h in self.added]),
                ("removed", [n for n in self.removed if n not in self.unpicked]),
                ("changed", edited),
            )
            if names
        ]
        if self.fleet_keys:
            parts.append(f"[fleet] changed: {', '.join(self.fleet_keys)}")
        if "results_dir" in self.fleet_keys:
            parts.append(
                "pulls and their records are kept in the new results_dir from now on: "
                "earlier ones stay in the old folder, unread (move the hosts' folders "
                "across to keep them counted)"
            )
        return "; ".join(parts)


# Tables of settings said by the key inside (``watch.notify``); an ssh target is one key.
_NESTED_KEYS = frozenset({"ready", "watch", "thresholds", "slurm", "group"})
# Fleet fields that are no [fleet] key (or not one a reload changes in place).
_NOT_FLEET_KEYS = frozenset({"path", "hosts", "is_default", "read_stamp"})


def changed_fields(
    before: object, after: object, *, skip: frozenset[str] = frozenset()
) -> tuple[str, ...]:
    """The keys whose values differ between ``before`` and ``after`` (dataclasses read
    from the fleet file), one level into the tables of settings (``notify``, ``disk_pct``),
    as the file names them. A key another defaults from (``durable_dir`` from
    ``workdir``) is listed with it: the values compared are the ones in force."""
    out: list[str] = []
    for f in fields(after):  # type: ignore[arg-type]
        if f.name in skip:
            continue
        a, b = getattr(before, f.name), getattr(after, f.name)
        if a == b:
            continue
        if f.name in _NESTED_KEYS and is_dataclass(a) and type(a) is type(b):
            out += list(changed_fields(a, b)) or [f.name]
        else:
            out.append(_KEY_OF.get(f.name, f.name))
    return tuple(dict.fromkeys(out))


# The fleet-file key a field is read from, where the two names differ (review s37:
# "watch.pull_every_s" named no key a user writes). The tables' own fields are said
# bare: their keys sit in the entry itself ([[hosts]], [fleet]).
_KEY_OF = {
    "pull_every_s": "pull_every",
    "reminder_minutes": "notify_reminder_minutes",
    "tracker_patterns": "tracker",
}


def fleet_changes(
    old: Fleet, new: Fleet, running: Iterable[HostConfig], wanted: Iterable[HostConfig]
) -> FleetChanges:
    """What taking ``new`` (its hosts to run: ``wanted``) changes for a fleet running
    ``old`` over ``running``. Pure."""
    before = {h.name: h for h in running}
    after = {h.name: h for h in wanted}
    edited = tuple(
        h for n, h in after.items() if n in before and _as_compared(before[n]) != _as_compared(h)
    )
    reconnect = frozenset(
        h.name
        for h in edited
        if any(getattr(before[h.name], f) != getattr(h, f) for f in CONNECTION_FIELDS)
    )
    return FleetChanges(
        added=tuple(h for n, h in after.items() if n not in before),
        removed=tuple(n for n in before if n not in after),
        unpicked=tuple(n for n in before if n not in after and n in {h.name for h in new.hosts}),
        edited=edited,
        reconnect=reconnect,
        settings=_settings(old) != _settings(new),
        keys={
            h.name: changed_fields(_as_compared(before[h.name]), _as_compared(h)) for h in edited
        },
        fleet_keys=changed_fields(old, new, skip=_NOT_FLEET_KEYS),
    )


class FleetFileWatch:
    """Looks at the fleet file (``path()``: it may change, the first ``+`` writes one)
    every ``every_s`` seconds; ``look`` reads it when its stamp changed."""

    def __init__(
        self,
        path: Callable[[], Path | None],
        *,
        every_s: float = FLEET_FILE_EVERY_S,
        load: Callable[[Path], Fleet] = load_fleet,
    ) -> None:
        self.path = path
        self.every_s = every_s
        self.load = load
        self._watched: Path | None = None
        self._seen: Stamp = None
        self.rejected: ConfigError | None = None  # the mistake told last, until it is fixed

    async def baseline(self) -> None:
        """Take the file as it is now as read (the fleet running was read from it)."""
        self._watched = self.path()
        self._seen = (
            None if self._watched is None else await asyncio.to_thread(file_stamp, self._watched)
        )

    def baseline_now(self, read: Stamp = None) -> None:
        """``baseline`` at once, when the watch is made: ``read``, the file as the fleet
        running was read from it (``Fleet.read_stamp``), else one stat now. An edit saved
        since is a change, not the baseline (it was lost: hour s31 CLI #3, a fix saved
        while `watch` started was never taken)."""
        self._watched = self.path()
        now = None if self._watched is None else file_stamp(self._watched)
        self._seen = read if read is not None and now is not None else now

    def changed_unread(self) -> bool:
        """The file changed since the last look (saved in the seconds before the next):
        what it says now is not known yet. One stat."""
        path = self.path()
        return path is not None and path == self._watched and file_stamp(path) != self._seen

    async def look(self) -> Fleet | ConfigError | None:
        """The fleet read again when the file changed since the last look; the mistake
        that refused it (once per change); None when it did not change."""
        path = self.path()
        if path != self._watched:
            await self.baseline()  # another file now (the first +): read as it was written
            return None
        if path is None:
            return None
        stamp = await asyncio.to_thread(file_stamp, path)
        if stamp == self._seen:
            return None
        self._seen = stamp
        try:
            fleet = await asyncio.to_thread(self.load, path)
        except ConfigError as error:
            self.rejected = error
            return error
        self.rejected = None
        return fleet


def renamed_words(old: str, new: str, running: str, owner: str = "") -> str | None:
    """A host renamed (its entry's name changed, the account the same) while its cell
    runs: the queue runs under the name that launched it (its tmux session, ``owner`` as
    the box records it; ``rgt-<old>`` when unknown), and another entry cannot stop, kill
    or retry it as its own (s37 fleet hour #1: S said "launched by another host entry …
    act on it from that entry", which no longer existed). None when the new name is the
    one that launched it (renamed back: h602 #3 was told to rename it to the wrong one)."""
    session = owner or tmux_session_name(old)
    if session == tmux_session_name(new):
        return None
    launcher = next((n for n in (old, new) if tmux_session_name(n) == session), None)
    if launcher is None:  # launched under a third name: said by its session
        return (
            f"{old} was renamed {new} while its cell {running} runs: the queue was launched "
            f"by another entry name (tmux session {session}), so {new} cannot stop, kill or "
            "retry it — name the entry as it was at that launch until the queue ends"
        )
    return (
        f"{old} was renamed {new} while its cell {running} runs: the queue runs under "
        f"{old}'s name (tmux session {session}), so {new} cannot stop, kill "
        "or retry it — "
        f"rename it back to {old} until the queue ends, then rename it"
    )


def left_words(
    host: str, running: str | None, torn_down: bool, *, group: bool = False
) -> str | None:
    """Why removing ``host`` from the fleet file is worth a warning: a cell still running
    there (``running``: its name), or no teardown on record; None when it was torn down
    and nothing ran. A ``group`` has no box of its own (its members are hosts of their
    own, watched and billed as such): only a job still running is worth one."""
    if group:
        if running is None:
            return None  # "its box … still bills — put its [[hosts]] block back": neither
        return (
            f"the group {host} was removed from the fleet file while its cell {running} "
            "runs on its boxes: nothing reads that job's queue or pulls it now — put its "
            "[[groups]] block back to follow it"
        )
    if torn_down and running is None:
        return None
    what = (
        f"while its cell {running} runs there"
        if running
        else "while its box is not recorded as torn down"
    )
    return (
        f"{host} was removed from the fleet file {what}: nothing watches or pulls it now, "
        "and if its box still runs it still bills — put its [[hosts]] block back to watch "
        f"it (then pull, and tear it down through its gate)"
    )
