"""Cost meter and the forgotten-box clocks."""

from __future__ import annotations

from rgt_tui.domain.cost import (
    CostContext,
    IdleMeter,
    billing_start,
    cost_alerts,
    cost_so_far,
    forgotten_box_alert,
    host_alerts,
    merge_alerts,
    profile_clock_alerts,
    queue_done_at,
)
from rgt_tui.domain.health import CLOCK_JUMP_S, Alert, HealthContext, HealthState
from rgt_tui.domain.queue_state import FINISHED, CellView, QueueView
from rgt_tui.domain.snapshot import HostSnapshot
from rgt_tui.profiles import profile

DAY = 86400.0


def test_cost_from_started_at_else_first_seen_never_uptime():
    assert billing_start(1000.0, 4900.0) == 1000.0  # the user said when
    # No started_at: from when rgt-tui first saw the box, whatever its uptime.
    assert billing_start(None, 4940.0) == 4940.0
    assert billing_start(None, None) is None  # never seen: unknown, not "since boot"
    assert cost_so_far(10.0, billing_start(None, 4940.0), 5000.0) == 10.0 * 60 / 3600
    assert cost_so_far(2.0, 0.0, 5400.0) == 3.0
    assert cost_so_far(2.0, 0.0, 99999.0, end=1800.0) == 1.0  # torn down: the meter stops
    assert cost_so_far(None, 0.0, 10.0) is None


def test_cost_leaves_out_the_spans_the_box_billed_nothing():
    """h582 #3: a box watch's autostop stopped, then started again, billed nothing
    between; only the part of a span inside the meter's run counts."""
    hour = 3600.0
    assert cost_so_far(2.0, 0.0, 4 * hour, unbilled=[(hour, 3 * hour)]) == 4.0
    assert (
        cost_so_far(2.0, 0.0, 4 * hour, unbilled=[(hour, 2 * hour), (3 * hour, 3.5 * hour)]) == 5.0
    )
    # A span before the start or past the end counts only where it overlaps the run.
    assert cost_so_far(2.0, hour, 3 * hour, unbilled=[(0.0, 1.5 * hour)]) == 3.0
    assert cost_so_far(2.0, 0.0, 9 * hour, end=2 * hour, unbilled=[(1.5 * hour, 5 * hour)]) == 3.0
    assert cost_so_far(2.0, 0.0, hour, unbilled=[(0.0, 2 * hour)]) == 0.0  # never below 0


def test_idle_meter_counts_only_idle_and_no_cell_running():
    m = IdleMeter()
    for t in range(0, 601, 60):
        m = m.observe(float(t), (1.0, 2.0), cell_running=False)
    assert m.idle_minutes == 10
    m = m.observe(660.0, (1.0,), cell_running=True)  # a cell runs: not idle
    m = m.observe(720.0, (1.0,), cell_running=False)
    m = m.observe(780.0, (50.0,), cell_running=False)  # busy GPU: not idle
    assert m.idle_minutes == 10
    assert (
        IdleMeter().observe(0.0, (), False).observe(60.0, (), False).idle_s == 0
    )  # no GPU: no verdict


def test_idle_meter_counts_no_jump_of_the_boxs_clock():
    """h562 #4: a clock set 400 days on is no idle time; a drop of 40 minutes is."""
    m = IdleMeter().observe(0.0, (1.0,), False).observe(60.0, (1.0,), False)
    m = m.observe(400 * DAY, (1.0,), False).observe(400 * DAY + 60, (1.0,), False)
    assert m.idle_minutes == 2
    assert m.observe(400 * DAY + 60 + 2400, (1.0,), False).idle_minutes == 42
    assert m.observe(400 * DAY + 60 + CLOCK_JUMP_S + 1, (1.0,), False).idle_minutes == 2


def test_forgotten_box_after_grace():
    assert forgotten_box_alert(1000.0, 1000.0 + 20 * 60, 2.0) is None
    alert = forgotten_box_alert(1000.0, 1000.0 + 90 * 60, 2.0)
    assert (
        alert.gotcha == "GEN1"
        and "90 min ago" in alert.message
        and "$3.00 since it finished" in alert.message
    )
    # No rate set is not free (h513 #1: deleting the line silenced GEN1); 0 is.
    unknown = forgotten_box_alert(1000.0, 1000.0 + 90 * 60, None)
    assert unknown is not None and "still answers, at a rate not set (set cost_per_hour" in (
        unknown.message
    )
    assert forgotten_box_alert(1000.0, 1e9, 0.0) is None


def test_forgotten_box_after_a_stop_names_the_relaunch():
    """A queue the user stopped left cells to run: GEN1 says stopped and names L beside
    the teardown (h513 #8: "finished … tear it down" stood beside the stop's "L
    relaunches"), and the sample's flag reaches it through cost_alerts."""
    alert = forgotten_box_alert(1000.0, 1000.0 + 90 * 60, 2.0, stopped=True)
    assert alert is not None
    assert alert.message.startswith("queue stopped 90 min ago")
    assert "$3.00 since it stopped" in alert.message
    assert "relaunch what is left (L), or pull, verify and tear it down" in alert.message
    now = 1_000_000.0
    for stopped, word in ((True, "queue stopped"), (False, "queue finished")):
        sample = HostSnapshot("h", t=now, queue_done_at=now - 3600, queue_stopped=stopped)
        ctx = CostContext(profile("vastai"), 2.0, now, received_at=now)
        (gen1,) = [a for a in cost_alerts(sample, ctx) if a.gotcha == "GEN1"]
        assert gen1.message.startswith(word)


def test_autodl_powered_off_13_days_is_released_in_2():
    (alert,) = profile_clock_alerts(profile("autodl"), 0.0, 13 * DAY)
    assert "released in 2 days" in alert.message and alert.severity == "critical"
    assert profile_clock_alerts(profile("generic-ssh"), 0.0, 13 * DAY) == ()
    assert profile_clock_alerts(profile("autodl"), 0.0, 0.5 * DAY) == ()
    (late,) = profile_clock_alerts(profile("china"), 0.0, 12 * DAY)
    assert "may already be gone" in late.message


def test_queue_done_at_translates_the_box_clock_by_the_records_age():
    cells = (CellView(0, "alpha", "done", 0, 1000, 2000),)
    done = QueueView("h", FINISHED, cells, None, "boot", 2000 + 3600, None)
    assert queue_done_at(done, 50_000.0) == 50_000.0 - 3600
    running = QueueView("h", "running", cells, None, "boot", 2000 + 3600, None)
    assert queue_done_at(running, 50_000.0) is None


def test_cost_alerts_come_from_the_sample_alone():
    """The forgotten box needs nothing but the agent's sample: the box's clock says how
    long ago the queue finished, whatever this machine's clock says."""
    gpu_box = profile("vastai")
    done_an_hour_ago = HostSnapshot("h", t=5_000_000.0, queue_done_at=5_000_000.0 - 3600)
    ctx = CostContext(gpu_box, 2.0, now=90.0, received_at=60.0)  # our clock is far off
    (alert,) = cost_alerts(done_an_hour_ago, ctx)
    assert alert.id == "cost.forgotten" and "60 min ago" in alert.message
    assert cost_alerts(done_an_hour_ago, CostContext(gpu_box, 0.0, now=90.0)) == ()  # free
    short = CostContext(gpu_box, 2.0, now=90.0, forgotten_minutes=90.0)
    assert cost_alerts(done_an_hour_ago, short) == ()
    running = HostSnapshot("h", t=5_000_000.0, cell="c1")
    assert cost_alerts(running, ctx) == ()
    lost = CostContext(profile("autodl"), 2.0, now=13 * DAY, unreachable_since=0.0)
    assert [a.id for a in cost_alerts(None, lost)] == ["profile.release_clock"]


def test_host_alerts_merge_health_and_cost_most_severe_first():
    snap = HostSnapshot("h", t=5_000_000.0, queue_done_at=5_000_000.0 - 3600)
    alerts = host_alerts(
        snap,
        HealthState(),
        HealthContext(connection="reconnecting"),
        CostContext(profile("runpod"), 1.0, now=100.0, received_at=100.0),
    )
    assert [(a.id, a.severity) for a in alerts] == [
        ("cost.forgotten", "critical"),
        ("connection.lost", "warning"),
    ]
    # Idle for an hour too: GEN1 says it all; one notice per reminder, not two (h513 #11).
    idle = HealthState(idle_since=5_000_000.0 - 3600)
    billed = HealthContext(cost_per_hour=1.0)
    cost = CostContext(profile("runpod"), 1.0, now=100.0, received_at=100.0)
    assert [a.id for a in host_alerts(snap, idle, billed, cost)] == ["cost.forgotten"]
    running = HostSnapshot("h", t=5_000_000.0)  # not done: the idle alert stands alone
    assert [a.id for a in host_alerts(running, idle, billed, cost)] == ["cost.idle"]
    twice = Alert("x", "info", "m", "G")
    assert merge_alerts([twice], [twice, Alert("y", "critical", "m", "G")]) == (
        Alert("y", "critical", "m", "G"),
        twice,
    )
