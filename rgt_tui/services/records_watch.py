"""Which hosts' records another process changed: one truth across processes.

The TUI and the command line share a fleet's records: the journal (``paths.journal_dir``:
box, gate facts, teardowns) and the pulled copy's ``.rgt/manifest.json``,
``pulled.json`` and ``verification.json``. A `rgt-tui teardown`, `pull` or `verify` run in another terminal
changes them under an open TUI, which polls this every few seconds (``WATCH_EVERY_S``)
and takes what changed (``JobRunner.take_outside_changes``).

Polling ``stat`` rather than inotify: a few system calls per host, no dependency, and
the same on every platform and file system. A file's stamp is its inode, size and
mtime in nanoseconds: the journal and the records are replaced by a rename (a new
inode) on every write, so no write goes unseen, however fast two follow each other.
Nothing here reads a file; blocking (``stat``): call it in a thread.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass
from pathlib import Path

from rgt_tui.domain.config import Fleet
from rgt_tui.services.journal import Journal
from rgt_tui.services.records import (
    host_results_dir,
    manifest_path,
    pulled_path,
    verification_path,
)

WATCH_EVERY_S = 2.0  # "within a few seconds", for a few stat calls per host

Stamp = tuple[int, int, int] | None  # (inode, size, mtime ns); None: no such file


@dataclass(frozen=True)
class Change:
    """What changed for one host since the last look."""

    host: str
    journal: bool  # its journal (or it was looked at for the first time)
    records: bool  # its pulled copy's manifest, pulled record or verification: a pull or verify ran


def file_stamp(path: Path | str) -> Stamp:
    """``path``'s (inode, size, mtime ns), or None when it cannot be stat'ed: what
    changes on every write, a rename over it included (blocking)."""
    try:
        st = os.stat(path)
    except OSError:  # missing, or unreadable: either way nothing to take from it
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


class RecordsWatch:
    """Remembers each host's files as last seen and says which changed since."""

    def __init__(self, journal: Callable[[], Journal], fleet: Callable[[], Fleet]) -> None:
        self._journal = journal
        self._fleet = fleet
        self._seen: dict[str, tuple[Stamp, tuple[Stamp, ...]]] = {}

    def _records(self, host: str) -> tuple[Stamp, ...]:
        # The pulled record too: a pull writes its manifest first and what it brought
        # seconds later (a look between them read "4 of 6 files here" until the next pull).
        folder = host_results_dir(self._fleet().results_dir, host)
        paths = (manifest_path(folder), pulled_path(folder), verification_path(folder))
        return tuple(file_stamp(path) for path in paths)

    def changed(self, hosts: Iterable[str], busy: Container[str] = ()) -> list[Change]:
        """The hosts whose files changed since the last look (each seen once first:
        its journal counts as changed, its records do not). The records of a ``busy``
        host (a job of this process runs there and writes them) are not looked at."""
        journal = self._journal()
        out: list[Change] = []
        for host in hosts:
            before = self._seen.get(host)
            stamp = file_stamp(journal.path(host))
            if before is None:
                self._seen[host] = (stamp, self._records(host))
                out.append(Change(host, journal=True, records=False))
                continue
            records = before[1] if host in busy else self._records(host)
            self._seen[host] = (stamp, records)
            if (stamp, records) != before:
                out.append(Change(host, stamp != before[0], records != before[1]))
        return out

    def settle(self, host: str) -> None:
        """Take the host's records as they are now as seen: this process's own job
        wrote them. Its journal is left as last looked at: a teardown recorded by
        another process meanwhile must still be taken."""
        before = self._seen.get(host)
        if before is not None:
            self._seen[host] = (before[0], self._records(host))
