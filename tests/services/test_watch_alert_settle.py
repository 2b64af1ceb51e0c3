"""Hour s23a #5: right after a start, an alert missing from a sample stays open until the
rules that need minutes of samples (idle, a silent log) have had them — 31 minutes. A
disk alert needs one sample: it closes without that wait (once missing for a quarter of an
hour: a disk hovering at its threshold is one alert), so a disk that fills again is told
again, while a rule that needs minutes still waits."""

from __future__ import annotations

from support.samples import FROZEN, agent_sample

from rgt_tui.domain.health import Alert
from rgt_tui.domain.snapshot import snapshot_from_agent
from rgt_tui.services.watch.events import HostState
from rgt_tui.services.watch.tracker import (
    QUIET_BEFORE_CLOSE_S,
    HostMemory,
    OpenAlert,
    alert_slot,
    derive,
)

INODES = Alert("disk.inodes", "critical", "inodes 100% used on /runs", "U7", "/runs")
SILENT = Alert("log.silent", "warning", "no log line for 12 min", "U33", "c1")


def state(now: float, *alerts: Alert) -> HostState:
    snap = snapshot_from_agent("box3", agent_sample("box3", t=now))
    return HostState(snap, alerts, "connected", None, None, None, None, now)


def test_a_disk_alert_closes_without_the_warm_up_and_a_refill_is_told_again() -> None:
    memory = HostMemory(
        open={alert_slot(INODES): OpenAlert(FROZEN), alert_slot(SILENT): OpenAlert(FROZEN)}
    )
    # A watch that has sampled the box for a minute: nothing that needs minutes may close.
    now = FROZEN + 600
    memory, events = derive("box3", memory, state(now), reminder_s=0, may_close=False)
    assert events == []
    memory, events = derive(
        "box3", memory, state(now + QUIET_BEFORE_CLOSE_S), reminder_s=0, may_close=False
    )
    assert set(memory.open) == {alert_slot(SILENT)}  # the disk freed a while: closed
    memory, events = derive(
        "box3", memory, state(now + QUIET_BEFORE_CLOSE_S + 60, INODES), reminder_s=0,
        may_close=False,
    )  # fmt: skip
    assert [(e.kind, e.severity) for e in events] == [("alert", "critical")]
    assert "inodes 100% used" in events[0].title + events[0].body


def test_a_disk_hovering_at_its_threshold_is_told_once_then_reminded() -> None:
    """h562 #1: a disk that checkpoints and prunes around 90 % crossed at every other
    sample, and each crossing opened a critical notification to every target, all night.
    Back before it was missing for QUIET_BEFORE_CLOSE_S, it is the alert already told,
    reminded on its schedule."""
    memory, told, now = HostMemory(), [], FROZEN
    for n in range(3600):  # two hours of 2 s samples, on and off every 20 s
        now += 2
        alerts = (INODES,) if (n // 10) % 2 == 0 else ()
        memory, events = derive("box3", memory, state(now, *alerts), reminder_s=3600)
        told += [e.kind for e in events]
    assert told == ["alert", "reminder"], told


def test_a_disk_full_again_after_a_gap_nothing_sampled_is_told_again() -> None:
    """Review h564 #2: `watch --once` from cron every 30 minutes saw full, freed, full:
    the refill came back after the hold with nothing sampled between, and was taken for
    the alert already told (only a reminder an hour on)."""
    memory, told, now = HostMemory(), [], FROZEN
    for n, alerts in enumerate([(INODES,), (), (INODES,), (), (INODES,)]):
        memory, events = derive(
            "box3", memory, state(now + n * 1800, *alerts), reminder_s=3600, may_close=False
        )
        told += [e.kind for e in events]
    assert told == ["alert", "alert", "alert"], told
