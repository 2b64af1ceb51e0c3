"""What ``watch``'s drivers told on their own — a preemption, a move, a stop — kept so it
is told once across runs, and so the open TUI can list what ``watch`` did.

The tracker's events are remembered by the watch memory (``store``); the drivers' are
not derived from it: a preemption is named again from what the runtime kept after every
restart (that is how ``on_preempt`` finishes what a crash cut short), so without this
log each ``watch --once`` under cron printed and counted it again. ``ToldLog`` is an
append-only file of JSON lines in the fleet's watch folder, one per event of
``KINDS`` (its key, when, and the event): ``told`` says whether a key is in it and adds
it when not; ``refresh`` returns what other processes appended since the last read
(the TUI follows it: ``controllers.watch_actions``).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rgt_tui.fsutil import append_line
from rgt_tui.services.watch.events import WatchEvent
from rgt_tui.services.watch.store import watch_dir

# The drivers' events kept here: told once across runs (a still-answering box: once a day).
KINDS = (
    "preempted", "preempt_action", "preempt_action_by_other", "stopped", "still_answers",
    "stop_unknown",
)  # fmt: skip
# What watch did unattended, and what became of its stops: the TUI lists them. A stop
# that stopped nothing (still_answers) or whose outcome is unknown was left out while the
# stop's own "stopped" was listed: the reassuring line without the one that undid it (an
# overnight hour, s39 watch #4).
ACTIONS = ("preempt_action", "stopped", "still_answers", "stop_unknown")


def told_log_path(journal: Path) -> Path:
    """The drivers' told log beside the watch memory (not ``.json``: no host's memory)."""
    return watch_dir(journal) / "driver-told.jsonl"


class ToldLog:
    """The append-only log of the drivers' events (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.keys: set[str] = set()
        self._offset = 0

    def refresh(self) -> list[dict[str, Any]]:
        """The whole lines appended since the last read (ours or another process's), as
        ``{"key", "time", "event"}``; a torn or foreign line is skipped (blocking)."""
        try:
            with self.path.open("rb") as f:
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return []
        complete = data[: data.rfind(b"\n") + 1]  # a half-written last line waits
        self._offset += len(complete)
        new = []
        for raw in complete.splitlines():
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if isinstance(line, dict) and isinstance(line.get("key"), str):
                self.keys.add(line["key"])
                new.append(line)
        return new

    def told(self, event: WatchEvent, now: float) -> bool:
        """True when ``event``'s key was told already (this run or an earlier one);
        otherwise it is added and False (blocking)."""
        self.refresh()
        if event.key in self.keys:
            return True
        append_line(self.path, {"key": event.key, "time": now, "event": asdict(event)})
        self.keys.add(event.key)
        return False


def event_of(line: dict[str, Any]) -> WatchEvent | None:
    """The event a log line holds (None: a line of another version)."""
    try:
        return WatchEvent(**line["event"])
    except (KeyError, TypeError):
        return None
