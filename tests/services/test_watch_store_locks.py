"""The watch memory's locks (issue 44): a host whose memory is being saved (``observe``,
in a thread, waiting on its file lock or the disk) never holds up the event loop's
check of another host (``unchanged``, called for every sample of a 500-host fleet)."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from test_watch_store import INODES, lost_state

from rgt_tui.fsutil import file_lock
from rgt_tui.services.watch.store import EventTracker, WatchStore


def inside(thread: threading.Thread, function: str) -> bool:
    """Whether ``thread`` is running ``function`` now (somewhere in its stack)."""
    frame = sys._current_frames().get(thread.ident or -1)
    while frame is not None:
        if frame.f_code.co_name == function:
            return True
        frame = frame.f_back
    return False


def test_a_save_waiting_on_its_lock_does_not_hold_up_another_hosts_check(tmp_path: Path):
    store = WatchStore(tmp_path / "watch")
    tracker = EventTracker(store, reminder_s=3600)
    assert tracker.observe("box2", lost_state(1000.0)) == []  # box2's memory loaded
    assert tracker.observe("box1", lost_state(1000.0)) == []
    store.directory.mkdir(parents=True, exist_ok=True)
    told: list[object] = []
    # Another rgt-tui (the TUI beside watch) holds box1's memory file: box1's save waits.
    with file_lock(store.directory / "box1.json.lock", 0):
        saving = threading.Thread(
            target=lambda: told.extend(tracker.observe("box1", lost_state(1001.0, (INODES,))))
        )
        saving.start()
        ready = threading.Event()
        while not ready.wait(0.01):  # until box1's save is blocked on its file lock
            if inside(saving, "file_lock"):
                ready.set()
            assert saving.is_alive()
        checked = threading.Event()
        answer: list[bool] = []
        check = threading.Thread(
            target=lambda: (
                answer.append(tracker.unchanged("box2", lost_state(1001.0))),
                # box1's own check does not wait either: "ask observe" (False).
                answer.append(tracker.unchanged("box1", lost_state(1001.0, (INODES,)))),
                checked.set(),
            )
        )
        check.start()
        # Before: box2's check waited for box1's save (30 s, the file lock's deadline).
        assert checked.wait(20), "box2's check waited for box1's save"
        assert saving.is_alive() and inside(saving, "file_lock")
        assert answer == [True, False]
    saving.join(60)
    assert [e.kind for e in told] == ["alert"]  # box1's save went through once let go
    check.join(5)
