"""The autostop's record of a stop, as ``services.watch.drivers.autostop`` writes it:
what makes a host 'stopped by watch' (``services.runtime.stopped``) for a test."""

from __future__ import annotations

from pathlib import Path

from rgt_tui.services.records import atomic_write_json
from rgt_tui.services.runtime.stopped import autostop_path


def record_stop(folder: Path, host: str, at: float) -> None:
    """A stop of ``host`` that ran with success at ``at``, in journal folder ``folder``."""
    stop = {"launch_ts": int(at) - 600, "box_id": "b", "claimed_at": at - 5, "idle_s": 90.0,
            "exit_status": 0, "timed_out": False, "ok": True, "output": "", "ended_at": at}  # fmt: skip
    atomic_write_json(autostop_path(folder, host), {"version": 1, "host": host, "stops": [stop]})
