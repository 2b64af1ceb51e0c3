"""What ``watch`` did on its own, in the open TUI's notices (the ``n`` key).

``watch`` keeps what its drivers told in the fleet's told log
(``services.watch.told_log``): a move of a preempted cell, a relaunch, a stop. The TUI
follows that file — a look at most every ``LOOK_EVERY_S``, in a worker (a stat, and a
read of what was appended) — and lists each unattended action once, as its own notices
list does the TUI's own; at start, those of the last ``SINCE_S`` too, so a user who opens
the TUI in the morning reads "box3: box3 stopped …" from the night. The TUI's own moves
(its ``OnPreempt``, ``controllers.spot``) are listed by it and never written there.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from typing import Any

from rgt_tui.controllers.notices import record
from rgt_tui.controllers.workers import run_work
from rgt_tui.domain.config import Fleet
from rgt_tui.paths import journal_dir
from rgt_tui.services.watch.told_log import ACTIONS, ToldLog, event_of, told_log_path

LOOK_EVERY_S = 2.0  # "within a few seconds", as the TUI follows the journal
SINCE_S = 24 * 3600.0  # at start: watch's actions of the last day
SEVERITY = {"info": "information", "warning": "warning", "critical": "error"}


class WatchActions:
    """Follows ``watch``'s told log for ``fleet`` and lists its actions (``look``)."""

    def __init__(self, app: Any, fleet: Fleet, clock: Callable[[], float] = time.time) -> None:
        self.app = app
        self.clock = clock
        self.log = None if fleet.is_default else ToldLog(told_log_path(journal_dir(fleet.path)))
        self._since = clock() - SINCE_S
        self._looked = float("-inf")
        self._looking = False

    def look(self) -> None:
        """Read what ``watch`` appended (at most every ``LOOK_EVERY_S``, in a worker)."""
        now = time.monotonic()
        if self.log is None or self._looking or now - self._looked < LOOK_EVERY_S:
            return
        self._looked, self._looking = now, True
        run_work(self.app, self._read(self.log), "watch-actions", exclusive=False)

    async def _read(self, log: ToldLog) -> None:
        try:
            lines = await asyncio.to_thread(log.refresh)
        except OSError:
            lines = []  # unreadable now: looked at again in a moment
        finally:
            self._looking = False
        for line in lines:
            event = event_of(line)
            at = line.get("time")
            if event is None or event.kind not in ACTIONS:
                continue
            # A time that is no number, or not a finite one (the log is a file on disk:
            # a NaN would sort past every notice), or a day past now (1e20 is finite and
            # no clock can show it: the n list crashed, the s40 audit) leaves it out.
            if not isinstance(at, int | float) or not math.isfinite(at) or at < self._since:
                continue
            if at > self.clock() + SINCE_S:
                continue
            severity = SEVERITY.get(event.severity, "warning")
            record(self.app, event.host, f"{event.title} (by watch)", event.body, severity, at)
