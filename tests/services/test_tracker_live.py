"""The tracker check (U35) over a real loopback box: the real queue runner, the real
agent following the running cell's log, the pane's monitor and `rgt-tui status`.

- a cell whose log never prints the W&B run line raises the ``tracker`` alert, on the pane
  and in `status --json`; the sample's own clock decides when (no test waits it out);
- a cell that prints ``wandb: 🚀 View run … at https://wandb.ai/…`` raises none;
- with no tracker configured nothing is read and nothing raised.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from support.cli import arun
from support.fleet_files import set_host_key
from support.queues import SCRIPT_RUN, QueueFleet
from support.telemetry import Watch, alert_ids

from rgt_tui.domain.health import HealthContext, Thresholds
from rgt_tui.domain.tracker_rule import tracker_alerts
from rgt_tui.services.queue.launch import launch, plan_launch
from rgt_tui.services.telemetry import HostMonitor

RUN_LINE = "wandb: 🚀 View run dainty-sun-3 at https://wandb.ai/me/proj/runs/abc123"


def gated(name: str, first: str) -> str:
    """Prints ``first``, then waits until the test creates ``$HOME/<name>.go``."""
    return f'echo "{first}"\nwhile [ ! -e "$HOME/{name}.go" ]; do sleep 0.05; done'


async def start(qf: QueueFleet, queue: str, tracker: str | None) -> HostMonitor:
    if tracker is not None:
        set_host_key(qf.loopback.hosts_file, "tracker", tracker)
    qf.write_queue(queue)
    host = qf.host()
    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, host, transport), transport)
    await transport.close()
    # tracker_minutes 0: the alert is due as soon as the log was read without the line.
    return HostMonitor(
        host, qf.transport(), interval=0.3, thresholds=Thresholds(tracker_minutes=0),
        agent_args=["--no-gpu"],
    )  # fmt: skip


async def test_a_cell_without_its_run_line_alerts_and_one_with_it_does_not(
    make_queue_fleet, state_dir: Path
) -> None:
    qf: QueueFleet = await make_queue_fleet(1, run=SCRIPT_RUN)
    queue = (
        f"{qf.cell_script('silent', gated('silent', 'wandb: Disabled (no API key)'))} t\n"
        f"{qf.cell_script('tracked', gated('tracked', RUN_LINE))} t\n"
    )
    watch = Watch(await start(qf, queue, "wandb"))
    try:
        seen = await watch.until(lambda u: "tracker" in alert_ids(u), 40, "the tracker alert")
        snap = seen.snapshot
        assert snap is not None and snap.cell == "silent" and snap.tracker_seen is False
        alert = next(a for a in seen.alerts if a.id == "tracker")
        assert alert.gotcha == "U35" and alert.subject == "silent"
        assert "cell silent" in alert.message and "curves are not being recorded" in alert.message
        # The clock is the sample's: at the default 10 min it is due only once the cell's
        # start (its state record) is 10 min behind the sample.
        started = snap.cell_started
        assert started is not None and abs(snap.t - started) < 60
        assert tracker_alerts(snap, HealthContext(tracker="wandb")) == []
        late = replace(snap, t=started + 600)
        assert [a.id for a in tracker_alerts(late, HealthContext(tracker="wandb"))] == ["tracker"]

        # `rgt-tui status` raises it too, from its one sample, with the fleet's threshold.
        hosts = qf.loopback.hosts_file
        hosts.write_text("[fleet.thresholds]\ntracker_minutes = 0.001\n\n" + hosts.read_text())
        status = await arun(
            "status", "--json", env={"RGT_HOSTS": str(hosts), "XDG_STATE_HOME": str(state_dir)}
        )
        assert status.stdout.startswith("["), status.stdout + status.stderr
        (box,) = json.loads(status.stdout)
        assert "tracker" in {a["id"] for a in box["alerts"]}, box["alerts"]

        (qf.root() / "silent.go").touch()
        tracked = await watch.until(
            lambda u: u.snapshot is not None and u.snapshot.cell == "tracked"
            and u.snapshot.tracker_seen is True,
            40,
            "cell tracked, its run line seen",
        )  # fmt: skip
        assert "tracker" not in alert_ids(tracked)
        more = len(watch.updates)
        await watch.until(lambda u: watch.updates.index(u) >= more + 3, 20, "three more samples")
        after = [u for u in watch.updates[more:] if u.snapshot and u.snapshot.cell == "tracked"]
        assert after and all("tracker" not in alert_ids(u) for u in after)
        (qf.root() / "tracked.go").touch()
    finally:
        await watch.stop()


async def test_no_tracker_configured_no_check(make_queue_fleet) -> None:
    qf: QueueFleet = await make_queue_fleet(1, run=SCRIPT_RUN)
    queue = f"{qf.cell_script('silent', gated('silent', 'no tracker here'))} t\n"
    watch = Watch(await start(qf, queue, None))
    try:
        first = await watch.until(
            lambda u: u.snapshot is not None and u.snapshot.cell == "silent", 40, "cell silent"
        )
        more = watch.updates.index(first)
        await watch.until(lambda u: watch.updates.index(u) >= more + 3, 20, "three more samples")
        running = [u for u in watch.updates[more:] if u.snapshot and u.snapshot.cell == "silent"]
        assert all(u.snapshot and u.snapshot.tracker_seen is None for u in running)
        assert all("tracker" not in alert_ids(u) for u in running)
        (qf.root() / "silent.go").touch()
    finally:
        await watch.stop()
