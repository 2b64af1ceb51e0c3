"""The tracker rule (U35), pure: the sample's clock decides, so no test waits."""

from __future__ import annotations

from dataclasses import replace

from rgt_tui.domain.cost import CostContext, host_alerts
from rgt_tui.domain.health import HealthContext, HealthState, Thresholds
from rgt_tui.domain.snapshot import HostSnapshot
from rgt_tui.domain.tracker_rule import tracker_alerts
from rgt_tui.profiles import profile as load_profile

START = 1_700_000_000.0
SNAP = HostSnapshot(host="h1", t=START + 30, cell="cell-a", cell_started=START, tracker_seen=False)
WANDB = HealthContext(tracker="wandb")


def at(minutes: float, **changes: object) -> HostSnapshot:
    return replace(SNAP, t=START + minutes * 60, **changes)


def test_fires_once_the_cell_ran_tracker_minutes_without_the_run_line() -> None:
    assert tracker_alerts(at(9.9), WANDB) == []
    (alert,) = tracker_alerts(at(10), WANDB)
    assert (alert.id, alert.gotcha, alert.subject, alert.severity) == (
        "tracker", "U35", "cell-a", "warning",
    )  # fmt: skip
    assert "cell cell-a has run 10 min" in alert.message
    assert "its curves are not being recorded" in alert.message
    assert "check the API key (credentials" in alert.message and "Disabled" in alert.message


def test_the_threshold_is_the_fleets() -> None:
    quick = HealthContext(tracker="mlflow", thresholds=Thresholds(tracker_minutes=1))
    (alert,) = tracker_alerts(at(1), quick)
    assert "mlflow's run line" in alert.message and "MLFLOW_TRACKING_URI" in alert.message


def test_no_alert_when_seen_unknown_off_or_no_cell() -> None:
    late = 120.0
    assert tracker_alerts(at(late, tracker_seen=True), WANDB) == []
    assert tracker_alerts(at(late, tracker_seen=None), WANDB) == []  # not read to its end
    assert tracker_alerts(at(late), HealthContext()) == []  # no tracker checked
    assert tracker_alerts(at(late, cell=None), WANDB) == []
    assert tracker_alerts(at(late, cell_started=None), WANDB) == []
    assert tracker_alerts(None, WANDB) == []


def test_a_hostile_cell_name_is_shown_escaped() -> None:
    (alert,) = tracker_alerts(at(11, cell="evil\x1b[2J\nname"), WANDB)
    assert "\x1b" not in alert.message and "\n" not in alert.message


def test_host_alerts_carries_it_for_the_pane_and_status_alike() -> None:
    profile = load_profile("generic-ssh")
    alerts = host_alerts(at(11), HealthState(), WANDB, CostContext(profile, None, START + 660))
    assert "tracker" in {a.id for a in alerts}
