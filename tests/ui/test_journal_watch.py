"""One truth across processes: what the command line records (a pull, a verify, a
teardown) reaches an open TUI within a few seconds, over a real loopback box, the
app's real monitors and `rgt-tui` run in a subprocess as a person runs it in another
terminal. A box recorded torn down stops its telemetry and never raises GEN8 ("the run
may still be alive"), even once it is gone and ``r`` tries it again.
"""

from __future__ import annotations

from pathlib import Path

from support.cli import arun
from support.fleet_files import set_host_key
from support.pilot import SIZE, screen_text, wait_for
from support.teardown_ui import results_on_box

from rgt_tui.app import RgtApp
from rgt_tui.content.host_text import ALIVE_NOTE
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.records_watch import WATCH_EVERY_S
from rgt_tui.services.runtime.monitors import GEN8_ALERT

# A few polls of the records, generous for a loaded machine: still "a few seconds".
REACHES_S = WATCH_EVERY_S * 5


def _items(app: RgtApp) -> dict[str, bool]:
    gate = app.jobs.state("box1").gate
    return {c.key: c.ok for c in gate.conditions} if gate is not None else {}


async def test_the_command_lines_records_reach_the_open_tui_and_no_gen8(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    hosts = loopback_fleet.hosts_file
    marker = tmp_path / "destroyed"
    set_host_key(hosts, "teardown", f"echo destroyed > {marker}")
    results_on_box(loopback_fleet.box("box1").root)
    env: dict[str, str | None] = {"RGT_HOSTS": str(hosts)}  # XDG_STATE_HOME: state_dir's
    app = RgtApp(load_fleet(hosts), config_dir=tmp_path / "config")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(
            lambda: (u := app.latest.get("box1")) is not None and u.snapshot is not None,
            40,
            pilot=pilot,
        )
        # The checklist on show: nothing pulled yet.
        await pilot.press("t")
        await wait_for(lambda: isinstance(app.screen, HostDetailScreen), pilot=pilot)
        await wait_for(lambda: _items(app) and not app.jobs.state("box1").running, 60, pilot=pilot)
        assert not _items(app)["pulled"]

        # Pulled and verified in another terminal: the checklist follows.
        pulled = await arun("pull", "box1", env=env)
        assert pulled.returncode == 0, pulled.stdout + pulled.stderr
        verified = await arun("verify", "box1", env=env)
        assert verified.returncode == 0, verified.stdout + verified.stderr
        await wait_for(
            lambda: (
                _items(app).get("pulled")
                and _items(app).get("verified")
                and not app.jobs.state("box1").running
            ),
            REACHES_S + 60,  # + the re-check's own re-scan of the box
            "the checklist to show the command line's pull and verify",
            pilot=pilot,
        )

        # Torn down in another terminal: the open TUI shows it and stops polling it.
        torn = await arun("teardown", "box1", "--confirm", "box1", env=env)
        assert torn.returncode == 0, torn.stdout + torn.stderr
        assert marker.exists()
        pane = app.fleet_screen.panes["box1"]
        await wait_for(
            lambda: pane.has_class("-torn-down") and "box1" in app.runtime.stopped,
            REACHES_S,
            "the command line's teardown to reach the TUI",
            pilot=pilot,
        )
        assert app.jobs.state("box1").torn_down_at is not None
        assert not app.runtime.running("box1")
        # Cancelled; its task ends once its channel is closed (a round trip, longer on a
        # loaded machine).
        await wait_for(lambda: app.runtime.monitor_tasks["box1"].done(), pilot=pilot)
        assert not app.runtime.monitor_tasks["box2"].done()  # the others go on

        # The box is gone; r gives it one attempt, which finds nobody: gone, not GEN8.
        await loopback_fleet.box("box1").stop()
        stopped = app.runtime.monitor_tasks["box1"]
        await pilot.press("escape")  # the cursor was in the confirmation box
        await wait_for(lambda: app.screen is app.fleet_screen, pilot=pilot)
        assert (selected := app.fleet_screen.selected) is not None and selected.host.name == "box1"
        await pilot.press("r")
        # A task is awaitable, and wait_for awaits what it is handed: the task in a tuple.
        (attempt,) = await wait_for(
            lambda: (w := app.runtime.monitor_tasks["box1"]) is not stopped and (w,), pilot=pilot
        )
        await wait_for(lambda: attempt.done() and "box1" in app.runtime.stopped, 40, pilot=pilot)
        latest = app.latest["box1"]
        assert latest.connection.status != "connected"
        assert not any(a.id == GEN8_ALERT for a in latest.alerts), latest.alerts
        await pilot.pause()
        text = screen_text(app)
        assert ALIVE_NOTE not in text and "GEN8" not in text
        assert pane.has_class("-torn-down") and "torn down" in str(pane.border_subtitle)
