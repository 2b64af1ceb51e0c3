"""A failed sync or preflight in the Queue tab's Readiness section says when it failed: an
old "✖ sync failed: the queue on box1 is running" read as the box's state minutes after
that queue had stopped (a user's hour)."""

from __future__ import annotations

import time

from rgt_tui.content.ready_text import ready_lines
from rgt_tui.controllers.jobs import HostJobs


def test_a_failure_line_carries_its_time() -> None:
    at = time.mktime((2026, 11, 30, 14, 2, 11, 0, 0, -1))
    state = HostJobs(
        "box1",
        sync_error=("the queue on box1 is running", "wait for it, then press y"),
        sync_error_at=at,
        preflight_error=("connection lost", "check the connection and press P again"),
        preflight_error_at=at,
    )
    text = [line.plain for line in ready_lines(state)]
    assert any(line.startswith("✖ sync failed: the queue on box1 is running · ") for line in text)
    stamp = time.strftime("%H:%M:%S", time.localtime(at))
    day = time.strftime("%Y-%m-%d %H:%M", time.localtime(at))
    assert all(stamp in line or day in line for line in text if "failed:" in line), text
    # Whose try it was: a sync from another terminal since is not seen here (s20b #7).
    assert all(line.endswith("(this screen's last try)") for line in text if "failed:" in line)
