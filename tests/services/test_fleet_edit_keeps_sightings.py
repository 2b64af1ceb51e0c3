"""A ``[fleet]``-only edit of the fleet file builds every host's monitor again; what the old
monitors saw carries on (hour s21a #10). Over real loopback boxes and real monitors: a box
that went silent before the edit still shows its last sample and its outage's start (not
"not answering since this TUI started" with the clock restarted at the edit), and a live
box's next sample ends no outage (no "back after a gap")."""

from __future__ import annotations

from pathlib import Path

from support.waiting import wait_for

from rgt_tui.demo.loopback import LoopbackFleet
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.runtime.runtime import FleetRuntime
from rgt_tui.services.telemetry import HostUpdate


async def test_a_fleet_settings_edit_keeps_what_the_monitors_saw(tmp_path: Path) -> None:
    async with LoopbackFleet(2, tmp_path / "fleet") as boxes:
        hosts = boxes.hosts_file
        fleet = load_fleet(hosts)
        seen: list[HostUpdate] = []

        def told(update: HostUpdate) -> None:
            seen.append(update)
            runtime.apply(update)

        runtime = FleetRuntime(fleet, FleetConnections(fleet.hosts), defer=told)
        runtime.start(polls=False)
        try:

            def sampled(name: str) -> bool:
                update = runtime.latest.get(name)
                return update is not None and update.snapshot is not None

            await wait_for(lambda: sampled("box1") and sampled("box2"), 60, "first samples")
            await boxes.box("box1").stop()  # box1 goes silent before the edit
            await wait_for(
                lambda: runtime.latest["box1"].connection.status == "reconnecting",
                60,
                "box1 read as reconnecting",
            )
            down_since = runtime.latest["box1"].connection.since
            last_sample = runtime.latest["box1"].snapshot
            first_seen = runtime.latest["box1"].first_seen
            old_box2 = runtime.monitors["box2"]

            hosts.write_text("[fleet]\npoll_seconds = 1.5\n\n" + hosts.read_text())
            changes = runtime.adopt(load_fleet(hosts))
            assert changes.settings and not changes.edited  # every monitor built again
            assert runtime.monitors["box2"] is not old_box2
            seen.clear()

            # box2's new monitor streams again: its first sample ends no outage.
            await wait_for(
                lambda: any(u.host == "box2" and u.snapshot is not None for u in seen),
                60,
                "box2 sampled by its new monitor",
            )
            box2 = [u for u in seen if u.host == "box2"]
            assert all(u.connection.gap_s is None for u in box2), box2[-1].connection
            assert all(u.connection.status == "connected" for u in box2)

            # box1's new monitor tries, and still knows the box: its last sample, when it
            # was first seen, and since when it has not answered.
            await wait_for(
                lambda: any(u.host == "box1" for u in seen), 60, "box1's new monitor told"
            )
            box1 = runtime.latest["box1"]
            assert box1.snapshot == last_sample
            assert box1.first_seen == first_seen
            assert box1.connection.status == "reconnecting"
            assert box1.connection.since == down_since
        finally:
            await runtime.close()
    assert not boxes.errors
