"""Cost meter and the forgotten-box clocks."""

from __future__ import annotations

from rgt_tui.domain.cost import (
    IdleMeter,
    billing_start,
    cost_so_far,
    forgotten_box_alert,
    profile_clock_alerts,
)
from rgt_tui.profiles import profile

DAY = 86400.0


def test_cost_from_started_at_else_boot_time():
    assert billing_start(1000.0, 5000.0, 300.0) == 1000.0
    assert billing_start(None, 5000.0, 300.0) == 4700.0
    assert billing_start(None, 5000.0, None) is None
    assert cost_so_far(2.0, 0.0, 5400.0) == 3.0
    assert cost_so_far(2.0, 0.0, 99999.0, end=1800.0) == 1.0  # torn down: the meter stops
    assert cost_so_far(None, 0.0, 10.0) is None


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


def test_forgotten_box_after_grace():
    assert forgotten_box_alert(1000.0, 1000.0 + 20 * 60, 2.0) is None
    alert = forgotten_box_alert(1000.0, 1000.0 + 90 * 60, 2.0)
    assert (
        alert.gotcha == "GEN1" and "90 min ago" in alert.message and "$3.00 so far" in alert.message
    )
    assert forgotten_box_alert(1000.0, 1e9, None) is None


def test_autodl_powered_off_13_days_is_released_in_2():
    (alert,) = profile_clock_alerts(profile("autodl"), 0.0, 13 * DAY)
    assert "released in 2 days" in alert.message and alert.severity == "critical"
    assert profile_clock_alerts(profile("generic-ssh"), 0.0, 13 * DAY) == ()
    assert profile_clock_alerts(profile("autodl"), 0.0, 0.5 * DAY) == ()
    (late,) = profile_clock_alerts(profile("china"), 0.0, 12 * DAY)
    assert "may already be gone" in late.message
