"""ux-b #4: an interruptible box that stops answering tells one story — "preempted?",
then "preempted" (and "moved") — never also "the run may still be alive" (GEN8): not in
its alerts (the pane's ▲ line), not as a "silent" notification after the preemption was
told, not after a restart of ``watch`` (docs/spot.md: "instead of").

The recorded stream of a spot box goes to a real ``Watcher`` over the fleet's journal
(``support.replay``), as in ``test_preemption``.
"""

from __future__ import annotations

from pathlib import Path

from support.samples import FROZEN, agent_sample
from support.waiting import wait_for
from test_preemption import Clock, Mover, fleet_in, run_watch, stop, told, watcher_over

from rgt_tui.domain.health import HealthState
from rgt_tui.services.runtime.monitors import GEN8_ALERT
from rgt_tui.services.telemetry import ConnectionState, HostUpdate
from rgt_tui.services.watch.events import HostState
from rgt_tui.services.watch.tracker import SILENT_GRACE_S, HostMemory, derive


async def test_a_silent_spot_box_is_preempted_never_may_still_be_alive(tmp_path: Path) -> None:
    fleet, clock, mover = fleet_in(tmp_path), Clock(), Mover()
    watcher, monitor = watcher_over(fleet, clock, mover)
    task = await run_watch(watcher, monitor)
    try:
        monitor.sample(agent_sample("box1", t=clock.t, cell="eta_long", container_start=1000))
        clock.t += 10
        lost = monitor.lose()
        (gen8,) = [a for a in lost.alerts if a.id == GEN8_ALERT]
        assert gen8.message == "connection lost — preempted? (an interruptible box)"
        clock.t += SILENT_GRACE_S + 100  # past the preemption's grace and the silent one
        await watcher.check_now()
        await wait_for(lambda: len(told(watcher, "preempt_action")) == 1, timeout=30)
        clock.t += 180  # the report's "silent" came 3 min after "moved"
        await watcher.check_now()
        assert len(told(watcher, "preempted")) == 1
        assert told(watcher, "silent") == []
        assert not [e for e in watcher.told if "may still be alive" in e.body]
    finally:
        await stop(task)

    # watch restarts while the box is still gone: never reached by this run, yet seen by
    # the last one, so its silence is still the preemption's.
    watcher2, monitor2 = watcher_over(fleet, clock, mover)
    task = await run_watch(watcher2, monitor2)
    try:
        # What a real monitor says of a box that has not answered since it started.
        gone = ConnectionState("unreached", clock.t, attempt=1, error="Connection refused")
        assert monitor2.emit is not None
        monitor2.emit(HostUpdate("box1", gone, None, (), HealthState()))
        clock.t += SILENT_GRACE_S + 100
        await watcher2.check_now()
        assert told(watcher2, "silent") == []
    finally:
        await stop(task)


def test_an_interruptible_box_never_seen_is_silent_without_may_still_be_alive() -> None:
    """Nothing was ever seen of it to name a preemption from: "silent", in its words."""
    state = HostState(None, (), "unreached", FROZEN, None, None, None, FROZEN + 400, True)
    memory, events = derive("box1", HostMemory(), state, reminder_s=0)
    (silent,) = events
    assert silent.kind == "silent" and "may still be alive" not in silent.body
    assert "interruptible box, so preempted or released" in silent.body
    assert derive("box1", memory, state, reminder_s=0)[1] == []  # told once
