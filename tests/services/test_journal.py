"""The journal: survives restarts (a fresh process), is written atomically under a lock
no concurrent writer loses events to, keeps each box's facts apart, and a damaged file
never opens a gate."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading

import pytest
from support.gate import BOX, IDENTITY, happy_events
from support.machine import tmpfs

from rgt_tui.domain.box_identity import BoxIdentity
from rgt_tui.domain.teardown_gate import (
    ManifestTaken,
    MissingCellAcknowledged,
    Rescanned,
    is_unlocked,
)
from rgt_tui.services.journal import Journal, JournalError, TeardownRecord

NEW_BOX = BoxIdentity("fedcba9876543210fedcba9876543210", "SHA256:box-two-host-key")


def _journal_of_box(tmp_path, *, torn: bool = False) -> Journal:
    journal = Journal(tmp_path)
    journal.observe_box("h1", IDENTITY, 1.0)
    journal.record("h1", 2.0, *happy_events())
    if torn:
        journal.add_teardown("h1", TeardownRecord(3.0, "true", 0, "", True, box_id=BOX))
    return journal


def test_journal_replays_to_the_same_gate_in_a_new_process(tmp_path):
    journal = _journal_of_box(tmp_path)
    assert is_unlocked(journal.load("h1").gate())
    code = (
        "from pathlib import Path; from rgt_tui.services.journal import Journal;"
        "from rgt_tui.domain.teardown_gate import is_unlocked;"
        f"print(is_unlocked(Journal(Path({str(tmp_path)!r})).load('h1').gate()))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
    assert not list(tmp_path.glob(".*.tmp"))  # no temp file left behind


def test_teardown_records_round_trip_and_count_for_their_box_only(tmp_path):
    journal = _journal_of_box(tmp_path, torn=True)
    assert journal.load("h1").torn_down_at == 3.0
    # A record naming another box (a race with a box change) is never this box's.
    journal.add_teardown("h1", TeardownRecord(4.0, "true", 0, "", True, box_id="x" * 32))
    assert journal.load("h1").torn_down_at == 3.0


def test_a_new_box_under_the_name_starts_closed_and_the_old_facts_are_history(tmp_path):
    journal = _journal_of_box(tmp_path, torn=True)
    assert journal.observe_box("h1", IDENTITY, 5.0).torn_down_at == 3.0  # same box: no change

    jh = journal.observe_box("h1", NEW_BOX, 6.0)
    again = journal.load("h1")  # and as saved
    for j in (jh, again):
        assert j.box == NEW_BOX and j.events == [] and j.teardowns == []
        assert j.torn_down_at is None and not is_unlocked(j.gate())
        (old,) = j.history
        assert old.box == IDENTITY and old.torn_down_at == 3.0 and old.retired_at == 6.0
        assert len(old.events) == len(happy_events()) and "another box" in old.why
    # Facts recorded now are the new box's; the old box's stay as they were.
    journal.record("h1", 7.0, MissingCellAcknowledged("cellA"))
    assert len(journal.load("h1").events) == 1
    assert len(journal.load("h1").history[0].events) == len(happy_events())


def test_a_changed_host_key_under_the_same_id_is_a_new_box(tmp_path):
    journal = _journal_of_box(tmp_path, torn=True)
    cloned = BoxIdentity(BOX, "SHA256:another-host-key")
    jh = journal.observe_box("h1", cloned, 6.0)
    assert jh.box == cloned and jh.torn_down_at is None and "host key changed" in jh.history[0].why
    # A key seen for the first time under a known id is that box's key, not a new box.
    fresh = Journal(tmp_path / "other")
    fresh.observe_box("h1", BoxIdentity(BOX, None), 1.0)
    fresh.record("h1", 2.0, *happy_events())
    jh = fresh.observe_box("h1", IDENTITY, 3.0)
    assert jh.box == IDENTITY and not jh.history and is_unlocked(jh.gate())


def test_a_journal_from_before_box_identities_loads_as_an_unknown_box(tmp_path):
    """Version 1 (no box): its facts never count for a box; once one answers, history."""
    journal = Journal(tmp_path)
    v1 = {
        "version": 1,
        "host": "h1",
        "first_seen": 1.0,
        "last_seen": 2.0,
        "events": [[2.0, {"type": "MissingCellAcknowledged", "name": "cellA"}]],
        "teardowns": [{"at": 3.0, "command": "true", "exit_status": 0, "output": "", "ok": True}],
    }
    journal.path("h1").write_text(json.dumps(v1))
    jh = journal.load("h1")
    assert jh.box is None and jh.torn_down_at == 3.0  # the unknown box's, until one answers
    assert not is_unlocked(jh.gate())
    jh = journal.observe_box("h1", IDENTITY, 4.0)
    assert jh.box == IDENTITY and jh.events == [] and jh.torn_down_at is None
    (old,) = jh.history
    assert old.box is None and old.torn_down_at == 3.0 and "no box was identified" in old.why
    assert journal.load("h1").history[0].events == old.events


def test_refusals_and_links_of_manifests_and_rescans_round_trip_and_old_events_load(tmp_path):
    journal = Journal(tmp_path)
    journal.observe_box("h1", IDENTITY, 1.0)
    refused = (("cellA/private", "cannot list folder: Permission denied"),)
    links = (("cellA/latest.pt", "cellA/ckpt.pt"),)
    events = happy_events()
    events[0] = ManifestTaken(events[0].files, 200.0, 101.0, refused=refused, links=links)
    events[-1] = Rescanned(events[-1].files, 210.0, events[-1].attempt, BOX, refused, links)
    journal.record("h1", 2.0, *events)
    jh = journal.load("h1")
    assert [e for _, e in jh.events] == events and is_unlocked(jh.gate())
    # Events written before re-scans carried refusals and links load with none.
    data = json.loads(journal.path("h1").read_text())
    for _, event in data["events"]:
        if event["type"] in ("ManifestTaken", "Rescanned"):
            del event["refused"], event["links"]
    journal.path("h1").write_text(json.dumps(data))
    old = [e for _, e in journal.load("h1").events]
    assert old[0].refused == old[0].links == () and old[-1].refused == old[-1].links == ()
    assert old[0].files == events[0].files and is_unlocked(journal.load("h1").gate())


def _writer(journal: Journal, tag: str, n: int) -> None:
    for i in range(n):
        journal.record("h1", float(i), MissingCellAcknowledged(f"{tag}-{i}"))


def test_concurrent_writers_in_threads_and_processes_lose_no_event(tmp_path):
    """Threads (as the TUI's workers write) and processes (as CLI runs do) at once."""
    journal = Journal(tmp_path)
    per = 40
    code = (
        "import sys; from pathlib import Path; from rgt_tui.services.journal import Journal;"
        "from rgt_tui.domain.teardown_gate import MissingCellAcknowledged as M;"
        "j = Journal(Path(sys.argv[1]));"
        f"[j.record('h1', float(i), M(sys.argv[2] + '-' + str(i))) for i in range({per})]"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(tmp_path), f"p{k}"]) for k in range(3)
    ]
    threads = [threading.Thread(target=_writer, args=(journal, f"t{k}", per)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    names = {e.name for _, e in journal.load("h1").events}
    expected = {f"{tag}-{i}" for tag in ("p0", "p1", "p2", "t0", "t1", "t2") for i in range(per)}
    assert names == expected


def test_a_stuck_lock_is_a_clear_error_not_a_hang(tmp_path):
    journal = Journal(tmp_path, lock_timeout=0.2)
    with Journal(tmp_path).locked("h1"), pytest.raises(JournalError) as err:
        journal.record("h1", 1.0, MissingCellAcknowledged("a"))
    assert "journal lock" in str(err.value) and "stays locked" in str(err.value)
    assert journal.load("h1").events == []


@pytest.mark.parametrize(
    "damage",
    [
        '{"version": 1, "host": "h1", "events": [[1.0, {"type": "Nope"}]]}',
        '{"version": 2, "host": "h1", "events": [], "box": {"box_id": "../x"}}',
        "{not json",
        "",
        # Not UTF-8: a traceback in status and watch, and the TUI's telemetry of the host
        # stopped (s36 faults #1).
        b"\xa3\x00garbage",
    ],
)
def test_damaged_journal_is_a_clear_error_and_never_unlocks(tmp_path, damage):
    journal = _journal_of_box(tmp_path)
    if isinstance(damage, bytes):
        journal.path("h1").write_bytes(damage)
    else:
        journal.path("h1").write_text(damage)
    with pytest.raises(JournalError) as err:
        journal.load("h1")
    assert str(journal.path("h1")) in str(err.value) and "stays locked" in str(err.value)
    assert "mv " in str(err.value)


def test_a_full_disk_is_a_journal_error_naming_the_file_and_the_old_record_stands(tmp_path):
    """A teardown check on a full disk was an OSError traceback (hour s17b #3): it is the
    journal's error now, which every caller says (the gate stays as it was), with where."""
    with tmpfs(tmp_path / "disk", "256k") as disk:
        journal = _journal_of_box(disk)
        before = journal.path("h1").read_bytes()
        filler = disk / "filler"
        with contextlib.suppress(OSError), filler.open("wb") as f:
            while True:
                f.write(b"\0" * 4096)
        with pytest.raises(JournalError) as caught:
            journal.record("h1", 99.0, *happy_events())
        said = str(caught.value)
        assert f"cannot save the teardown journal {journal.path('h1')}" in said, said
        assert f"free space there (df -h {disk})" in said, said
        assert journal.path("h1").read_bytes() == before  # the saved record is untouched
        assert not list(disk.glob(".*.tmp"))  # no half-written temporary file is left


def test_another_id_under_the_same_host_key_is_said_as_another_account(tmp_path):
    """The box id lives in the login account's ~/.rgt: a changed login user on the same
    machine read "another box answers" (hour s19b #5)."""
    journal = _journal_of_box(tmp_path)
    other_account = BoxIdentity("0" * 32, IDENTITY.host_key)
    jh = journal.observe_box("h1", other_account, 5.0)
    why = jh.history[-1].why
    assert "with the same host key: another login account on the same machine" in why, why
    jh = journal.observe_box("h1", NEW_BOX, 6.0)  # another key too: another box
    assert jh.history[-1].why.startswith("another box answers as h1"), jh.history[-1].why
