"""GEN1 in `watch`: a box recorded as torn down is not watched, but it is looked at; the
same box still answering past the providers' grace is told as critical (a user's hour:
`watch --once` said only "recorded as torn down: not watched" of a box that answered).
Told once across runs (each day it goes on: again); a box that no longer answers, or
another box under the name, is not news. Real components: a loopback asyncssh box, the
journal, the product's telemetry agent; `watch --once` as cron runs it."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from rgt_tui.domain.box_identity import BoxIdentity
from rgt_tui.paths import journal_dir
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.journal import Journal, TeardownRecord
from rgt_tui.services.watch.watcher import Watcher, watched_hosts


def tear_down(hosts: Path, host: str, box_id: str, at: float) -> None:
    """``host``'s box ``box_id`` recorded as torn down at ``at`` (as `teardown` does)."""
    journal = Journal(journal_dir(hosts))
    journal.observe_box(host, BoxIdentity(box_id, None), at - 3600)
    journal.add_teardown(host, TeardownRecord(at, "true", 0, "", True, box_id=box_id))


async def once(hosts: Path) -> list:
    watcher = Watcher(load_fleet(hosts))
    return [e for e in await watcher.once(timeout=20) if e.kind == "still_answers"]


async def test_a_torn_down_box_that_still_answers_is_told_critical_once(
    make_loopback_fleet,
) -> None:  # type: ignore[no-untyped-def]
    loop = await make_loopback_fleet(2)
    hosts = loop.hosts_file
    await once(hosts)  # the first sample writes each box's id (~/.rgt/box-id)
    box_id = (loop.box("box1").root / ".rgt" / "box-id").read_text().strip()
    tear_down(hosts, "box1", box_id, time.time() - 3600)
    tear_down(hosts, "box2", "0ld0ld0ld0ld0ld0ld0ld0ld0ld0ld00", time.time() - 3600)

    watched, skipped = watched_hosts(load_fleet(hosts))
    assert watched == [] and "in case the same box still answers" in skipped[0]
    (event,) = await once(hosts)  # box2 answers as another box: a new rental, not news
    assert (event.host, event.severity) == ("box1", "critical")
    assert event.title == "box1: STILL ANSWERS after its teardown" and "(GEN1)" in event.body
    assert "recorded as torn down" in event.body and "recorded" not in event.title  # once
    assert await once(hosts) == []  # told once (cron's next --once is quiet)

    await loop.box("box1").stop()
    tear_down(hosts, "box1", box_id, time.time() - 7200)  # a later record: a new key
    assert await once(hosts) == []  # gone, as it should be


async def test_metrics_name_a_torn_down_box_that_still_answers_after_a_restart(
    make_loopback_fleet,
) -> None:  # type: ignore[no-untyped-def]
    """A watch started after the teardown does not watch the box, so no sample carries its
    alert: /metrics exported nothing for it, and no rule could page (s37 money hour #4).
    The driver's look now keeps its alert in rgt_alert until the box stops answering."""
    from prometheus_client import generate_latest

    from rgt_tui.services.watch.sinks.metrics import FleetMetrics

    loop = await make_loopback_fleet(1)
    hosts = loop.hosts_file
    await once(hosts)
    box_id = (loop.box("box1").root / ".rgt" / "box-id").read_text().strip()
    tear_down(hosts, "box1", box_id, time.time() - 3600)

    fleet = load_fleet(hosts)
    fleet = dataclasses.replace(
        fleet, hosts=tuple(dataclasses.replace(h, cost_per_hour=2.99) for h in fleet.hosts)
    )
    metrics = FleetMetrics(fleet)  # one exporter across two looks, as a running watch's

    async def scrape() -> str:
        await Watcher(fleet, sinks=[metrics], hosts=[]).once(timeout=20)
        return generate_latest(metrics.registry).decode()

    text = await scrape()
    (line,) = [x for x in text.splitlines() if x.startswith("rgt_alert{")] or [text]
    assert 'host="box1"' in line and 'alert="teardown.still-answers"' in line, text
    assert 'severity="critical"' in line and 'gotcha="GEN1"' in line and line.endswith(" 1.0")
    # It may still bill: its rate counts in the fleet's $/h (h513 #2: it read $0).
    assert 'rgt_cost_per_hour{host="box1"} 2.99' in text, text

    await loop.box("box1").stop()
    text = await scrape()
    assert "rgt_alert{" not in text  # gone: the series goes, nothing pages
    assert 'rgt_cost_per_hour{host="box1"}' not in text
