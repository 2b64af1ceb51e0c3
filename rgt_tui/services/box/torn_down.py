"""Hosts the journal records as torn down, and a status report of one read against its
record: the same box still answering is the forgotten-box cost leak (GEN1); another box
answering under the name is a new rental; no answer is what a torn-down box should do.
Shared by ``rgt-tui status``, ``pull`` and ``watch``'s still-answers check."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from rgt_tui.domain.box_identity import BoxIdentity
from rgt_tui.domain.config import Fleet
from rgt_tui.domain.cost import FORGOTTEN_ALERT
from rgt_tui.domain.torn_down import STILL_ANSWERS, answers_after_teardown, still_answers_alert

if TYPE_CHECKING:
    from rgt_tui.services.box.status import HostReport

Teardown = tuple[float, BoxIdentity | None]  # when the current box was torn down, and which


def torn_down_hosts(
    fleet: Fleet, hosts: list[str], damaged: dict[str, str] | None = None
) -> dict[str, Teardown]:
    """Each of ``hosts`` the journal records as torn down: when, and the box it was. A
    journal that cannot be read says nothing here (the teardown gate reports it), but is
    put in ``damaged`` (host → the error, with its fix) when one is given."""
    from rgt_tui.services.journal import JournalError, journal_for

    journal = journal_for(fleet)
    torn: dict[str, Teardown] = {}
    for name in hosts:
        try:
            jh = journal.load(name)
        except JournalError as exc:
            if damaged is not None:
                damaged[name] = str(exc)
            continue
        if jh.torn_down_at is not None:
            torn[name] = (jh.torn_down_at, jh.box)
    return torn


def with_teardown(report: HostReport, teardown: Teardown | None, now: float) -> HostReport:
    """``report`` of a host recorded as torn down: answering, with the still-answers alert
    first (GEN1); not answering, as it should be, without alerts (a release clock or a
    forgotten box: nothing of a destroyed box bills). Another box answering under the
    name (another id) is a new rental: reported as it is."""
    if teardown is None:
        return report
    if not report.reachable:
        # Gone, as it should be (its cost was counted to the teardown: collect_status).
        return dataclasses.replace(report, alerts=(), error=None, fix=None)
    from rgt_tui.services.queue.backends import backend_for
    from rgt_tui.services.queue.scheduler import JobGated

    at, recorded = teardown
    if not answers_after_teardown(recorded, report.snapshot.box_id, None):
        return report
    cluster = isinstance(backend_for(report.host), JobGated)
    alert = still_answers_alert(at, now, cluster=cluster)
    # Not also GEN1's "forgotten … pull, verify and tear it down": done already (s37
    # money hour #1); the leak's own fix is the provider's console.
    others = tuple(a for a in report.alerts if a.id != FORGOTTEN_ALERT)
    return dataclasses.replace(report, alerts=(alert, *others))


def still_answers(report: HostReport, torn: dict[str, Teardown]) -> bool:
    """Whether ``report`` is of a torn-down box that still answers (its alert is on)."""
    return report.host.name in torn and any(a.id == STILL_ANSWERS for a in report.alerts)
