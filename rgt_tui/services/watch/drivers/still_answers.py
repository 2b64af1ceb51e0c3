"""``watch``'s look at the boxes the journal records as torn down (GEN1).

A torn-down box is not watched: it is gone. But a teardown record proves only that a
command exited 0 or that the user said so; the same box answering afterwards may still be
billing, and a headless ``watch`` is where nobody else would notice. So every
``every_s`` (and once in ``watch --once``) each such host is sampled as ``rgt-tui
status`` samples it; the same box answering past the providers' grace is told as a
critical ``still_answers`` event, once when first found and again each day it goes on
answering. Another box under the name (a new rental) and no answer are not news.
After each look the sinks hear which still answer (``/metrics`` exports their alert).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable

from rgt_tui.domain.config import Fleet
from rgt_tui.domain.health import Alert
from rgt_tui.domain.torn_down import STILL_ANSWERS
from rgt_tui.services.box.status import collect_status
from rgt_tui.services.box.torn_down import torn_down_hosts, with_teardown
from rgt_tui.services.watch.events import WatchEvent

EVERY_S = 600.0  # a box billing by the hour, looked at every ten minutes
SAMPLE_TIMEOUT_S = 30.0
DAY_S = 86400.0


class StillAnswers:
    """Samples the fleet's torn-down hosts and emits a ``still_answers`` event for each
    whose recorded box answers with the alert at critical."""

    def __init__(
        self,
        fleet: Fleet,
        *,
        emit: Callable[[WatchEvent], None],
        clock: Callable[[], float],
        every_s: float = EVERY_S,
        on_look: Callable[[dict[str, Alert]], object] = lambda answering: None,
    ) -> None:
        self.fleet = fleet
        self.emit = emit
        # After each look, the hosts whose box answered past the grace (/metrics keeps
        # their alert: after a watch restart nothing else names a torn-down box).
        self.on_look = on_look
        self.clock = clock
        self.every_s = every_s

    async def check(self) -> list[WatchEvent]:
        """Sample every torn-down host once; emit and return what is told."""
        torn = torn_down_hosts(self.fleet, [h.name for h in self.fleet.hosts])
        if not torn:
            self.on_look({})
            return []
        hosts = tuple(h for h in self.fleet.hosts if h.name in torn)
        reports = await collect_status(
            dataclasses.replace(self.fleet, hosts=hosts), timeout=SAMPLE_TIMEOUT_S
        )
        now = self.clock()
        told = []
        answering: dict[str, Alert] = {}
        for report in reports:
            at = torn[report.host.name][0]
            alert = next(
                (
                    a
                    for a in with_teardown(report, torn[report.host.name], now).alerts
                    if a.id == STILL_ANSWERS
                ),
                None,
            )
            if alert is None or alert.severity != "critical":
                continue  # gone, another box, a cluster, or within the providers' grace
            host = report.host.name
            answering[host] = alert
            day = int((now - at) // DAY_S)
            event = WatchEvent(
                "still_answers",
                host,
                f"still_answers:{host}:{at:.0f}:{day}",
                # The body says the rest ("recorded as torn down … STILL ANSWERS: it may
                # still be billing"): said twice on one console line (hour s45a #5).
                f"{host}: STILL ANSWERS after its teardown",
                f"{alert.message} ({alert.gotcha})",
                "critical",
            )
            self.emit(event)
            told.append(event)
        self.on_look(answering)
        return told

    async def run(self) -> None:
        """Check now, then every ``every_s``, until cancelled."""
        while True:
            await self.check()
            await asyncio.sleep(self.every_s)
