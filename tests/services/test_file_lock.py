"""The one file lock with a deadline (rgt_tui.fsutil.file_lock), and the journal's
words when another holder keeps it."""

from __future__ import annotations

from pathlib import Path

import pytest

from rgt_tui.fsutil import LockBusy, file_lock
from rgt_tui.services.journal import Journal, JournalError


def test_a_second_holder_waits_its_deadline_then_is_refused_and_the_lock_is_freed(tmp_path: Path):
    path = tmp_path / "h.json.lock"
    with file_lock(path, 0), pytest.raises(LockBusy), file_lock(path, 0.05):
        pass  # pragma: no cover
    with file_lock(path, 0):  # released with its descriptor
        pass


def test_the_journal_says_who_holds_its_lock_and_an_error_inside_stays_its_own(tmp_path: Path):
    journal = Journal(tmp_path, lock_timeout=0.05)
    with (
        file_lock(journal.lock_path("box1"), 0),
        pytest.raises(JournalError) as caught,
        journal.locked("box1"),
    ):
        pass  # pragma: no cover
    assert "has held the journal lock for 0.05 s" in str(caught.value)
    with pytest.raises(OSError, match="disk full"), journal.locked("box1"):
        raise OSError("disk full")  # not "cannot open the journal lock"
