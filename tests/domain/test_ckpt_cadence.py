"""Work at risk (issue 40), pure: the ckpt.cadence info alert from a recorded sequence of
checkpoint writes as the agent reports them, and the ages line."""

from __future__ import annotations

from rgt_tui.domain.at_risk import ages_line
from rgt_tui.domain.health import HealthContext, HealthState, evaluate
from rgt_tui.domain.snapshot import snapshot_from_agent

MTBF_3H = 3 * 3600.0


def sample(every_s: float, write_s: float | None = 30.0, cell: str | None = "eta_long"):
    writes = [[1000.0 + i * every_s, write_s, 1 << 30] for i in range(5)]
    last = writes[-1][0]
    ckpt = {"name": "checkpoint.pt", "mtime": last, "size": 1 << 30, "writes": writes}
    return snapshot_from_agent("box1", {"v": 1, "t": last + 60, "cell": cell, "ckpt": ckpt})


def cadence_alerts(snap, mtbf_s):
    alerts = evaluate(snap, HealthState(), HealthContext(mtbf_s=mtbf_s))
    return [a for a in alerts if a.id == "ckpt.cadence"]


def test_checkpointing_over_twice_w_is_an_info_alert() -> None:
    (alert,) = cadence_alerts(sample(41 * 60), MTBF_3H)
    assert alert.severity == "info" and alert.subject == "eta_long"
    assert alert.message.startswith(
        "checkpoints every 41 min; for this box W ≈ 13 min (write 30 s, MTBF 3 h) — over 2·W"
    )


def test_no_alert_within_twice_w_without_mtbf_timing_or_cell() -> None:
    assert cadence_alerts(sample(20 * 60), MTBF_3H) == []  # W ≈ 13 min: 20 < 26
    assert cadence_alerts(sample(41 * 60), None) == []  # not interruptible: no MTBF
    assert cadence_alerts(sample(41 * 60, write_s=None), MTBF_3H) == []  # no write timed
    assert cadence_alerts(sample(41 * 60, cell=None), MTBF_3H) == []  # nothing runs


def test_hostile_ckpt_is_a_problem_never_a_crash() -> None:
    snap = snapshot_from_agent("b", {"v": 1, "t": 5.0, "ckpt": "x" * 10})
    assert snap.checkpoints is None and any("ckpt" in p for p in snap.problems)
    bad = {"name": "\x1b[31mevil", "mtime": True, "writes": [[1.0, -5, 3], "x", [None, 1, 2]] * 50}
    seen = snapshot_from_agent("b", {"v": 1, "t": 5.0, "ckpt": bad}).checkpoints
    assert seen is not None and seen.mtime is None and "\x1b" not in (seen.name or "")
    assert len(seen.writes) <= 16 and all(w.write_s is None for w in seen.writes)


def test_ages_line() -> None:
    assert (
        ages_line(10_000 - 180, 10_000 - 41 * 60, 10_000)
        == "ckpt 3m ago on box · 41m ago verified here"
    )
    assert ages_line(None, None, 5.0) == "no checkpoint seen on box yet · none verified here"
    # Resumed here from another host's copy (s44 note: it read "none verified here").
    assert (
        ages_line(None, 10_000 - 41 * 60, 10_000, "box1\x1b[2J")
        == "no checkpoint seen on box yet · 41m ago verified here (from box1\\x1b[2J's copy)"
    )
    assert ages_line(None, None, 5.0, "box1").endswith("none verified here")
