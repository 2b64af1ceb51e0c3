"""RecordsWatch: which hosts' journal or pulled records another process changed, over
real files written the way rgt-tui writes them (atomically, by rename)."""

from __future__ import annotations

from pathlib import Path

from support.samples import write_fleet

from rgt_tui.domain.box_identity import BoxIdentity
from rgt_tui.paths import journal_dir
from rgt_tui.services.journal import Journal
from rgt_tui.services.records import (
    atomic_write_json,
    host_results_dir,
    manifest_path,
    pulled_path,
    verification_path,
)
from rgt_tui.services.records_watch import Change, RecordsWatch


def test_changes_are_seen_once_and_own_writes_are_not_news(tmp_path: Path) -> None:
    fleet = write_fleet(tmp_path)
    host = fleet.hosts[0].name
    journal = Journal(journal_dir(fleet.path, {"XDG_STATE_HOME": str(tmp_path / "state")}))
    watch = RecordsWatch(lambda: journal, lambda: fleet)
    names = [h.name for h in fleet.hosts]
    verification = verification_path(host_results_dir(fleet.results_dir, host))

    # The first look reads every journal once, and re-checks nothing.
    assert watch.changed(names) == [Change(n, journal=True, records=False) for n in names]
    assert watch.changed(names) == []

    # Another process observes a box, then verifies: each is seen, once.
    journal.observe_box(host, BoxIdentity("a" * 32), 1.0)
    assert watch.changed(names) == [Change(host, journal=True, records=False)]
    atomic_write_json(verification, {"ok": True})
    assert watch.changed(names) == [Change(host, journal=False, records=True)]
    assert watch.changed(names) == []

    # A host whose own job runs: its records wait until it is done...
    atomic_write_json(verification, {"ok": False})
    assert watch.changed(names, busy={host}) == []
    assert watch.changed(names) == [Change(host, journal=False, records=True)]

    # ... and what its own pull or verify wrote is settled, not news; a teardown
    # recorded by another process meanwhile still is.
    atomic_write_json(verification, {"ok": True})
    journal.observe_box(host, BoxIdentity("b" * 32), 2.0)
    watch.settle(host)
    assert watch.changed(names) == [Change(host, journal=True, records=False)]


def test_the_pulled_record_written_after_the_manifest_is_news_too(tmp_path: Path) -> None:
    """A pull in another process writes its manifest first and what it brought seconds
    later: a look between the two saw the manifest alone, and the TUI showed "4 of 6
    files here" until its next pull (a user's hour, five times)."""
    fleet = write_fleet(tmp_path)
    host = fleet.hosts[0].name
    journal = Journal(journal_dir(fleet.path, {"XDG_STATE_HOME": str(tmp_path / "state")}))
    watch = RecordsWatch(lambda: journal, lambda: fleet)
    names = [h.name for h in fleet.hosts]
    folder = host_results_dir(fleet.results_dir, host)
    watch.changed(names)  # the first look
    atomic_write_json(manifest_path(folder), {"files": 6})
    assert watch.changed(names) == [Change(host, journal=False, records=True)]
    atomic_write_json(pulled_path(folder), {"files": 6})
    assert watch.changed(names) == [Change(host, journal=False, records=True)]
    assert watch.changed(names) == []
