"""The journal: survives restarts (a fresh process), is written atomically, and a damaged
file never opens a gate."""

from __future__ import annotations

import subprocess
import sys

import pytest
from tests_support_gate import happy_events

from rgt_tui.domain.teardown_gate import is_unlocked
from rgt_tui.services.journal import Journal, JournalError, TeardownRecord


def test_journal_replays_to_the_same_gate_in_a_new_process(tmp_path):
    journal = Journal(tmp_path)
    journal.record("h1", 1.0, *happy_events())
    assert is_unlocked(journal.load("h1").gate())
    code = (
        "from pathlib import Path; from rgt_tui.services.journal import Journal;"
        "from rgt_tui.domain.teardown_gate import is_unlocked;"
        f"print(is_unlocked(Journal(Path({str(tmp_path)!r})).load('h1').gate()))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
    assert not list(tmp_path.glob(".*.tmp"))  # no temp file left behind


def test_teardown_records_round_trip(tmp_path):
    journal = Journal(tmp_path)
    j = journal.load("h1")
    j.teardowns.append(TeardownRecord(5.0, "true", 0, "", True))
    journal.save(j)
    assert journal.load("h1").torn_down_at == 5.0


@pytest.mark.parametrize(
    "damage", ['{"version": 1, "host": "h1", "events": [[1.0, {"type": "Nope"}]]}', "{not json", ""]
)
def test_damaged_journal_is_a_clear_error_and_never_unlocks(tmp_path, damage):
    journal = Journal(tmp_path)
    journal.record("h1", 1.0, *happy_events())
    journal.path("h1").write_text(damage)
    with pytest.raises(JournalError) as err:
        journal.load("h1")
    assert str(journal.path("h1")) in str(err.value) and "stays locked" in str(err.value)
    assert "mv " in str(err.value)
