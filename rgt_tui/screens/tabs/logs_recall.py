"""What the Logs tab last drew of each log, for the next Logs tab on it in this app run.

A detail screen is made anew each time it opens, and its Logs tab with it. Without a
memory, reopening it while the box was down showed an empty view saying "opening…" for
the whole outage, and the lines read a minute before were gone (ux-g 6). With it, the
next tab draws the last lines at once and follows on from where the last one stopped.

Bounded: the last ``RECALL_LINES`` lines drawn (each already cut at the tab's 4 KiB) of
the ``RECALL_LOGS`` logs looked at last. The App owns one (``RgtApp.log_recall``) and
hands it to each detail screen, whose tabs read it from their ``HostView``: it goes with
the app, and two apps in one process (the tests) never share one.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Literal

from rich.text import Text

from rgt_tui.domain.logscan import LogPosition

RECALL_LINES = 500
RECALL_LOGS = 8

Kind = Literal["line", "crash", "note"]


@dataclass
class Recalled:
    """One log as a tab last drew it: its last lines and notes, and where reading stopped."""

    drawn: deque[tuple[Text, Kind]] = field(default_factory=lambda: deque(maxlen=RECALL_LINES))
    position: LogPosition | None = None  # past the last line drawn; None: nothing read
    dropped: int = 0  # lines drawn before the ones kept (the next tab says so)

    def remember(self, text: Text, kind: Kind) -> None:
        """Keep a line the tab drew; the oldest goes (counted) once ``RECALL_LINES`` are."""
        if len(self.drawn) == self.drawn.maxlen and kind != "note":
            self.dropped += 1
        self.drawn.append((text, kind))


class LogRecall:
    """The logs one app's Logs tabs drew, the last looked at kept (``RECALL_LOGS``)."""

    def __init__(self) -> None:
        self._logs: OrderedDict[tuple[str, str], Recalled] = OrderedDict()

    def entry(self, host: str, key: str) -> Recalled:
        """``key`` (the tab's source, on a rank) of ``host``: the one drawn before, or a
        new one; either way now the last looked at."""
        found = self._logs.pop((host, key), None) or Recalled()
        self._logs[(host, key)] = found
        while len(self._logs) > RECALL_LOGS:
            self._logs.popitem(last=False)
        return found
