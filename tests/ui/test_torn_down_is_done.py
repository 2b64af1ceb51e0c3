"""A torn-down host is done (issue 43 item 7), over real loopback boxes and the app's
real monitors: once a teardown is recorded (here by another process, through the
journal the open TUI watches), the pane greys out and reads "torn down HH:MM · cost $",
never "connected · up …"; the host's monitor stops, its SSH connection (and its SFTP
sessions) closes on the box's side too, and the Overview says when and what it cost.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

from support.pilot import SIZE, notes, screen_text, text_of, wait_for

from rgt_tui.app import RgtApp
from rgt_tui.demo.loopback import LoopbackFleet
from rgt_tui.domain.queue_records import (
    cells_tsv_line,
    parse_cell_state,
    parse_cells_tsv,
    parse_runner_state,
)
from rgt_tui.domain.queue_state import QueueView, derive_view
from rgt_tui.paths import journal_dir
from rgt_tui.screens.disk_usage import DiskUsageScreen
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.journal import Journal, TeardownRecord
from rgt_tui.services.records_watch import WATCH_EVERY_S

RATE = 1.89
BILLED_S = 2 * 3600  # started two hours before the teardown: $3.78


def _finished_with_one_not_run() -> QueueView:
    """A finished queue with a cell appended after its end, never launched."""
    launch = "launch 1700000000 boot-box1 tmux 0 /root/.rgt/bin/run_queue.0123456789ab.sh 4242\n"
    deployed = parse_cells_tsv(
        "".join(cells_tsv_line(i, n, f"run {n}") for i, n in enumerate(["alpha", "extra"]))
    )
    attempts = {"alpha": parse_cell_state("start 1700000001 boot-box1 4300\nend 1700000055 0\n")}
    return derive_view(
        "box1", deployed, parse_runner_state(launch + "done 1700000060 1 0\n"), attempts,
        boot_id="boot-box1", now=1700000100, runner_alive=False,
    )  # fmt: skip


def _started_at(hosts: Path, host: str, at: float) -> None:
    """Give ``host`` a ``started_at`` (a TOML date-time) in the fleet file."""
    stamp = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    lines = hosts.read_text().splitlines()
    lines.insert(lines.index(f'name = "{host}"') + 1, f"started_at = {stamp}")
    hosts.write_text("\n".join(lines) + "\n")


async def test_a_torn_down_host_greys_out_closes_and_says_when_and_its_cost(
    tmp_path: Path, state_dir: Path
) -> None:
    async with LoopbackFleet(2, tmp_path / "fleet", costs=(("vastai", RATE),)) as boxes:
        torn_at = float(int(time.time()))
        _started_at(boxes.hosts_file, "box1", torn_at - BILLED_S)
        app = RgtApp(load_fleet(boxes.hosts_file), config_dir=tmp_path / "config")
        async with app.run_test(size=SIZE) as pilot:
            pane = app.fleet_screen.panes["box1"]
            # Connected, sampled, and its box recorded in the journal.
            await wait_for(lambda: app.jobs.state("box1").box is not None, 40, pilot=pilot)
            await wait_for(lambda: "● connected" in pane.render().plain, pilot=pilot)
            await wait_for(lambda: "inodes" in pane.render().plain, pilot=pilot)
            assert app.connections.is_connected("box1")
            assert boxes.box("box1").open_connections == 1
            box_id = app.jobs.state("box1").box.box_id

            # A cell appended after the queue's end: the pane offers L (h581 #10).
            app.runtime.queue_viewed("box1", _finished_with_one_not_run())
            await wait_for(lambda: "1 not run: L starts" in pane.render().plain, pilot=pilot)

            # Recorded torn down by another process (`rgt-tui teardown` in a terminal).
            record = TeardownRecord(torn_at, "true", 0, "", True, box_id=box_id)
            Journal(journal_dir(boxes.hosts_file)).add_teardown("box1", record)
            await wait_for(lambda: pane.has_class("-torn-down"), WATCH_EVERY_S * 5, pilot=pilot)
            when = time.strftime("%H:%M", time.localtime(torn_at))
            shown = f"■ torn down {when} · cost ${RATE * BILLED_S / 3600:.2f}"
            await wait_for(lambda: shown in pane.render().plain, pilot=pilot)
            text = pane.render().plain
            assert "connected" not in text and " up " not in text, text
            # Its last sample is not drawn: greyed out, a box's figures still read as
            # a box at work (a user's hour).
            assert "inodes" not in text and "disk" not in text, text
            # Nor a launch L would refuse there (no poll comes to redraw it).
            assert "L starts" not in text, text

            # Done: its monitor stopped, and its connection closed on both ends.
            task = app.runtime.monitor_tasks["box1"]
            await wait_for(lambda: task.done() and "box1" in app.runtime.stopped, pilot=pilot)
            await wait_for(lambda: not app.connections.is_connected("box1"), pilot=pilot)
            await wait_for(lambda: boxes.box("box1").open_connections == 0, pilot=pilot)
            assert not app.runtime.is_live("box1")
            # The other box goes on as before.
            assert not app.runtime.monitor_tasks["box2"].done()
            assert app.connections.is_connected("box2")
            made = boxes.box("box1").connections_made

            # The Overview says when it was torn down and what it cost.
            app.open_host("box1")
            await wait_for(lambda: isinstance(app.screen, HostDetailScreen), pilot=pilot)
            await wait_for(lambda: shown in screen_text(app), pilot=pilot)
            overview = screen_text(app)
            assert "$3.78 total" in overview and "● connected" not in overview
            # Nothing reconnects on its own meanwhile.
            assert boxes.box("box1").connections_made == made

            # Destroyed: r looks once more, and the answer to it is not "press r" again
            # (h461 #7: the toast told the user to do what they had just done).
            await boxes.box("box1").stop()
            await pilot.press("escape")
            await wait_for(lambda: app.screen is app.fleet_screen, pilot=pilot)
            app.fleet_screen.select("box1")
            await pilot.press("r")
            answer = "box1 was torn down: it did not answer when you asked (r)"
            await wait_for(
                lambda: any(answer in n for n in notes(app)), 60, pilot=pilot,
                show=lambda: "\n".join(notes(app)),
            )  # fmt: skip
            assert not any(answer in n and "Press r" in n for n in notes(app)), notes(app)
            # p asks the box, and one that does not answer pulls nothing and says so as the
            # teardown it is: the refused port turned the Pulls tab red over a settled
            # teardown (h471 #5). (One that answers is pulled: the test below.)
            await pilot.press("p")
            refused = "nothing pulled: box1 is recorded as torn down ("
            await wait_for(lambda: any(refused in n for n in notes(app)), 60, pilot=pilot)
            assert "v checks it here" in next(n for n in notes(app) if refused in n)
            await wait_for(lambda: app.jobs.state("box1").running == "", pilot=pilot)
            assert app.jobs.state("box1").pull_error is None, app.jobs.state("box1")
            # u: the dialog says the teardown, not "check the port" (h471 #3).
            await pilot.press("escape")
            app.open_host("box1")
            await wait_for(lambda: isinstance(app.screen, HostDetailScreen), pilot=pilot)
            await pilot.press("u")
            said = "box1 is recorded as torn down ("
            status = await wait_for(
                lambda: (
                    isinstance(app.screen, DiskUsageScreen)
                    and text_of(app.screen.query_one("#disk-status"))
                ),
                60,
                pilot=pilot,
            )
            assert said in status and "there is no box to read" in status, status
            assert "port" not in status, status


async def test_p_on_a_torn_down_box_that_still_answers_pulls_it(
    tmp_path: Path, state_dir: Path
) -> None:
    """Review h473 #1: p was refused from the records alone ("does not answer") while the
    box answered, in the minutes after a teardown command that only stopped it (GEN1).
    It is asked, and pulled."""
    async with LoopbackFleet(1, tmp_path / "fleet") as boxes:
        app = RgtApp(load_fleet(boxes.hosts_file), config_dir=tmp_path / "config")
        async with app.run_test(size=SIZE) as pilot:
            pane = app.fleet_screen.panes["box1"]
            await wait_for(lambda: app.jobs.state("box1").box is not None, 40, pilot=pilot)
            box_id = app.jobs.state("box1").box.box_id
            record = TeardownRecord(time.time(), "true", 0, "", True, box_id=box_id)
            Journal(journal_dir(boxes.hosts_file)).add_teardown("box1", record)
            await wait_for(lambda: pane.has_class("-torn-down"), WATCH_EVERY_S * 5, pilot=pilot)
            app.fleet_screen.select("box1")
            await pilot.press("p")
            await wait_for(
                lambda: app.jobs.state("box1").pull_result is not None,
                60,
                pilot=pilot,
                show=lambda: "\n".join(notes(app)),
            )
            assert not any("nothing pulled" in n for n in notes(app)), notes(app)
