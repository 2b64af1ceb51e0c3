"""Issue 40, found by the real-box test (tests/e2e/test_preempt_real.py): a RunPod spot
box gets TERM, then KILL ~5 s later. The TERM ends the cell while the box still answers,
so its last samples name no cell; the preemption must still name the cell it
interrupted. A cell that ended longer than the grace before the loss is no preemption's,
and one whose queue view says done is never moved.

The recorded stream of samples (``support.replay``) goes to ``PreemptionWatch`` by hand.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from support.replay import ReplayMonitor
from support.samples import FROZEN, agent_sample
from test_preemption import CKPT, fleet_in  # the same spot fleet: box1 moves to box2

from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.preemption import LOST
from rgt_tui.domain.queue_state import DONE, CellView, QueueView
from rgt_tui.services.runtime.preemption import CELL_SLACK_S, PreemptionWatch
from rgt_tui.services.watch.drivers.on_preempt import OnPreempt, Outcome
from rgt_tui.services.watch.events import WatchEvent


def lost_after_term(tmp_path: Path, ended_s: float):
    """box1 runs eta_long, the cell ends (its samples name none for ``ended_s``), then
    the box stops answering past the grace: what the watch names."""
    fleet = fleet_in(tmp_path)
    host = fleet.host("box1")
    watch = PreemptionWatch(fleet, memory_dir=tmp_path / "p", blip_s=1.0)  # RunPod: 5 s
    t = FROZEN
    monitor = ReplayMonitor(host, lambda: t)
    monitor.emit = lambda update: None  # no runtime: the updates are observed by hand
    first = monitor.sample(agent_sample("box1", t=t, cell="eta_long", container_start=1000))
    assert watch.observe(host, first, t) is None
    for dt in (0.5, ended_s):  # TERM: the box answers, the cell gone
        after = monitor.sample(agent_sample("box1", t=t + dt, container_start=1000))
        assert watch.observe(host, after, t + dt) is None
    gone = monitor.lose()
    return watch, watch.observe(host, gone, t + ended_s + 6.0)


def test_a_cell_ended_within_the_grace_is_the_one_the_preemption_interrupted(tmp_path):
    watch, named = lost_after_term(tmp_path, ended_s=4.0)
    assert named is not None and named.kind == LOST and named.cell == "eta_long"
    # What was kept names it too (a watch restarted while the box is gone).
    again = PreemptionWatch(watch.fleet, memory_dir=tmp_path / "p", blip_s=1.0)
    assert again.seen("box1") is not None and again.seen("box1").cell == "eta_long"


def test_a_cell_ended_longer_than_the_grace_before_is_no_preemptions(tmp_path):
    # Past the grace and the slack for the box's last answers (CELL_SLACK_S): it ended
    # on its own before the preemption.
    _, named = lost_after_term(tmp_path, ended_s=5.0 + CELL_SLACK_S + 10.0)
    assert named is not None and named.kind == LOST and named.cell is None


async def test_a_cell_whose_queue_says_done_is_not_moved(tmp_path: Path) -> None:
    fleet = fleet_in(tmp_path)
    _, named = lost_after_term(tmp_path, ended_s=2.0)
    assert named is not None and named.cell == "eta_long"
    done = QueueView(
        "box1", "finished", (CellView(0, "eta_long", DONE, exit_code=0),), None, "b", 0, None
    )
    calls: list[str] = []

    async def mover(
        fleet: Fleet, source: HostConfig, cell: str, spare: HostConfig, at: float
    ) -> Outcome:
        calls.append(cell)
        return Outcome(True, "moved")

    told: list[WatchEvent] = []
    driver = OnPreempt(
        fleet, None, emit=told.append, queue_view=lambda h: done, mover=mover,  # type: ignore[arg-type]
    )  # fmt: skip
    await driver.on_preempted(fleet.host("box1"), replace(named, checkpoint=CKPT, step=40))
    assert calls == []
    (said,) = [e.body for e in told if e.kind == "preempt_action"]
    assert said == "eta_long finished on box1 before the preemption: nothing to move"
