"""Pilot tests of pulls, verification and the guided teardown, against real loopback boxes.

Each box is a real asyncssh server over a folder: the files put under its durable dir are
pulled over SFTP, hashed, loaded (a real torch checkpoint), and the teardown command is a
real shell command. The journal lives in a tmp ``XDG_STATE_HOME``.

Kept whole: the pull, verify, checklist and quit cases share the one app fixture and its
job-state helpers, and read as the one journey a user takes to a teardown.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from support.pilot import (
    SIZE,
    click,
    make_app,
    palette_titles,
    publish_jobs,
    screen_text,
    shown_notifications,
    wait_for,
)
from support.replay import ReplayMonitor
from support.samples import (
    FLEET_TOML,
    FROZEN,
    agent_sample,
    gpu,
    healthy_update,
    make_update,
    write_fleet,
)
from support.teardown_ui import checklist, job_done, pull_and_verify, teardown_app, type_name
from textual.widgets import Input

from rgt_tui.app import RgtApp
from rgt_tui.content.host_text import Part, border_subtitle
from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.messages import HostUpdated
from rgt_tui.paths import journal_dir
from rgt_tui.screens.fleet import FleetScreen
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.screens.job_keys import JobsChanged
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.journal import HostJournal, Journal, TeardownRecord
from rgt_tui.services.pull import FileProgress, PullProgress

CONDITIONS = ("manifest", "rescan", "pulled", "loaded", "roster", "idle", "confirmed")


async def test_pull_verify_checklist_and_typed_teardown(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    marker = tmp_path / "marker"
    app = teardown_app(loopback_fleet, tmp_path, f"echo destroyed > {marker}")
    results = app.fleet.results_dir / "box1"
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pull_and_verify(app, pilot)
        text = screen_text(app)
        # The ended pull's outcome (its progress bars are the running pull's only).
        assert "2 pulled (0 resumed), 0 already here, 0 failed" in text, text
        assert "2 verified" in text and "roster: no queue file" in text
        # The files are on the local disk, byte for byte, and the checkpoint loads.
        assert json.loads((results / "metrics.json").read_text())["loss"] == 0.25
        loaded = torch.load(results / "ckpt.pt", weights_only=True)
        assert torch.equal(loaded["w"], torch.arange(6.0).reshape(2, 3))

        text = await checklist(app, pilot)
        for key in CONDITIONS:
            assert f" {key} " in text, key
        assert "2/2 hash-verified" in text and "2/2 loaded" in text
        assert (
            "a fresh re-scan matches it │ found: the box lists the same files, sizes and mtimes as the manifest"
            in text
        )
        assert "no cell running, or each accepted │ found: the queue is idle" in text
        assert "no cell running: no cell running" not in text
        assert "matches: re-scan matches" not in text and not re.search(r"taken at \d{9}", text)
        assert "0/0 cells have results" in text
        assert re.search(r"taken at \d{4}-\d\d-\d\d \d\d:\d\d", text)  # the manifest's time
        assert "manual (provider console or API)" in text and "IRREVERSIBLE" in text
        assert "bills 24/7 until destroyed" in text  # danger clocks / what keeps billing
        assert "ready: type 'box1'" in text

        # A wrong name does nothing: no command, no journal entry, no teardown.
        await type_name(app, pilot, "box2")
        assert "'box2' is not 'box1': nothing was torn down" in screen_text(app)
        assert not marker.exists() and app.jobs.state("box1").torn_down_at is None

        await type_name(app, pilot, "box1")
        await wait_for(lambda: app.jobs.state("box1").torn_down_at is not None, pilot=pilot)
        assert marker.read_text() == "destroyed\n"
        assert "teardown command exited 0: recorded as torn down" in screen_text(app)
        # Nothing is left to type: the name box says so (it read "type the host's name
        # to tear it down" again: a user's hour).
        box = app.screen.query_one("#confirm-name", Input)
        await wait_for(
            lambda: box.placeholder == "recorded as torn down: nothing to type", pilot=pilot
        )
        # Nor in the cell box: "cell name (t, then Tab)" offered an acknowledgement (h304 #7).
        cell = app.screen.query_one("#ack-cell", Input)
        assert cell.placeholder == "torn down: nothing to accept"

        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, FleetScreen)
        pane = app.fleet_screen.panes["box1"]
        assert pane.has_class("-torn-down") and "torn down" in str(pane.border_subtitle)
        assert not app.fleet_screen.panes["box2"].has_class("-torn-down")
    journal = json.loads(app.jobs.journal().path("box1").read_text())
    assert [t["ok"] for t in journal["teardowns"]] == [True]
    # A new session reads the journal: the box is still shown torn down.
    again = RgtApp(
        load_fleet(loopback_fleet.hosts_file), start_monitors=False, config_dir=tmp_path / "c"
    )
    async with again.run_test(size=SIZE) as pilot:
        pane = again.fleet_screen.panes["box1"]
        await wait_for(lambda: pane.has_class("-torn-down"), pilot=pilot)
    assert not loopback_fleet.errors


async def test_failed_command_and_late_write_keep_the_box(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    app = teardown_app(loopback_fleet, tmp_path, "echo failing on purpose; exit 3")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pull_and_verify(app, pilot)
        await checklist(app, pilot)
        await type_name(app, pilot, "box1")
        state = app.jobs.state("box1")
        assert state.teardown is not None and state.teardown.exit_status == 3
        text = screen_text(app)
        assert "failing on purpose" in text
        assert "FAILED (exit 3): NOT recorded as torn down" in text
        assert state.torn_down_at is None

        # A file written on the box after the pull locks the gate again.
        (loopback_fleet.box("box1").root / "results" / "late.json").write_text("{}")
        text = await checklist(app, pilot)
        assert "✖ rescan" in text and "locked" in text
        assert not app.jobs.state("box1").gate.ready_but_confirmation
        await type_name(app, pilot, "box1")
        assert "locked: teardown refused for box1" in screen_text(app)
        assert "nothing was torn down" in screen_text(app)
        assert app.jobs.state("box1").torn_down_at is None

        await pilot.press("escape")
        await pilot.pause()
        assert not app.fleet_screen.panes["box1"].has_class("-torn-down")
    journal = json.loads(app.jobs.journal().path("box1").read_text())
    assert [t["ok"] for t in journal["teardowns"]] == [False]


async def test_pull_error_is_shown_with_its_fix(tmp_path: Path, loopback_fleet) -> None:  # type: ignore[no-untyped-def]
    app = teardown_app(loopback_fleet, tmp_path, "true")
    await loopback_fleet.box("box1").stop()  # the box is gone: the pull says so
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("p")
        await wait_for(lambda: app.jobs.state("box1").pull_error is not None, 60, pilot=pilot)
        # The error line and its fix can land in different frames: wait for both.
        await wait_for(lambda: "pull failed" in screen_text(app), pilot=pilot)
        await wait_for(lambda: "fix:" in screen_text(app), pilot=pilot)
        assert app.jobs.state("box1").pull_result is None


async def test_header_cost_danger_clocks_and_cost_stop(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        app.post_message(HostUpdated(healthy_update()))
        await wait_for(lambda: "a100-train" in app.latest, pilot=pilot)
        await pilot.pause()
        # vastai's danger clocks: one line in the header, over no pane (issue 27).
        notes = app.fleet_screen.notices.shown()
        assert any("stop still bills disk" in text for _, text in notes)
        assert "⏱ a100-train: danger clocks" in screen_text(app).splitlines()[1]
        assert not shown_notifications(app)  # no toast
        # Once per session: a second connected sample does not repeat it.
        app.post_message(HostUpdated(healthy_update(seq=2, t=FROZEN + 1)))
        await pilot.pause()
        assert app.fleet_screen.notices.shown() == notes
        text = screen_text(app)
        # a100-train: $1.89/h since 10:00 (2 h) = $3.78; spot-4090 $0.34/h since 08:30.
        assert "$4.97 so far" in text and "$4.72/h" in text
        pane = app.fleet_screen.panes["a100-train"]
        # The records watch's first look reads every journal once (none records a
        # teardown): taken now, it cannot land after the stand-in below and undo it (it
        # did on a loaded CI machine).
        await app.jobs.take_outside_changes()
        # Torn down now (as the journal tells the jobs): the cost stopped then, 2 h in.
        publish_jobs(app, "a100-train", torn_down_at=FROZEN)
        await wait_for(lambda: pane.has_class("-torn-down"), pilot=pilot)
        assert pane.cost_so_far(FROZEN + 7200) == pytest.approx(3.78)
        await wait_for(lambda: "$2.83/h" in screen_text(app), pilot=pilot)
        names = await palette_titles(app)
        for title in ("Pull results", "Verify results", "Teardown checklist"):
            assert f"{title}: spot-4090" in names


async def test_missing_cell_is_acknowledged_by_name(tmp_path: Path, make_queue_fleet) -> None:  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(1)
    qf.write_queue(f"{qf.cell_script('alpha', 'echo hi')} t\n")
    (qf.root() / "results" / "metrics.json").write_text('{"loss": 1.0}')
    app = RgtApp(load_fleet(qf.loopback.hosts_file), start_monitors=False, config_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("p")
        await job_done(app, pilot, "box1", "pull_result")
        await pilot.press("v")
        await job_done(app, pilot, "box1", "verify_report")
        await wait_for(lambda: "NOT VERIFIED" in screen_text(app), pilot=pilot)
        assert "missing cell alpha" in screen_text(app)
        text = await checklist(app, pilot)
        assert "✖ roster" in text and "unacknowledged: alpha" in text
        box = app.screen.query_one("#ack-cell", Input)
        box.focus()
        await pilot.press(*"alpha")
        await click(pilot, "#ack-missing")
        await pilot.pause()
        await wait_for(lambda: "(acknowledged)" in screen_text(app), 60, pilot=pilot)
        assert "✓ roster" in screen_text(app)
        # Said, not only counted (hour s25b #1: a press that changed no line read as none).
        told = [str(n.message) for n in shown_notifications(app)]
        assert any("alpha accepted as missing for this box" in m for m in told), told


async def test_pulls_tab_draws_a_bar_per_file_in_flight(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        app.open_host("a100-train", tab="pulls")
        await pilot.pause()
        progress = PullProgress(
            "a100-train", "pulling", files_total=3, files_done=1, bytes_total=300 << 20,
            bytes_done=150 << 20, rate=10 << 20, eta_s=15.0,
            active=(FileProgress("run1/ckpt.pt", 200 << 20, 50 << 20, 5 << 20, 30.0, "pulling"),),
        )  # fmt: skip
        publish_jobs(app, "a100-train", running="pull", progress=progress)
        await wait_for(lambda: "run1/ckpt.pt" in screen_text(app), pilot=pilot)
        text = screen_text(app)
        assert "1/3 files" in text and " 50%" in text and "eta 15s" in text
        assert " 25%" in text and "eta 30s" in text and "/s" in text


async def test_danger_clocks_once_per_profile_not_per_host(tmp_path: Path) -> None:
    """Thirty identical boxes must not bury the screen in thirty identical toasts."""
    fleet = write_fleet(
        tmp_path,
        '[[hosts]]\nname = "v1"\nssh = "root@10.0.0.1"\nprofile = "vastai"\n'
        '[[hosts]]\nname = "v2"\nssh = "root@10.0.0.2"\nprofile = "vastai"\n'
        '[[hosts]]\nname = "r1"\nssh = "root@10.0.0.3"\nprofile = "runpod"\n',
    )
    app = make_app(tmp_path, fleet=fleet)
    async with app.run_test(size=SIZE) as pilot:
        for name in ("v1", "v2", "r1"):
            app.post_message(HostUpdated(make_update(name, agent_sample(name, seq=1, t=FROZEN))))
        await wait_for(lambda: {"v1", "v2", "r1"} <= set(app.latest), pilot=pilot)
        await pilot.pause()
        titles = sorted(title for title, _ in app.fleet_screen.notices.shown())
        assert titles == ["r1: danger clocks", "vastai (2 hosts): danger clocks"]


async def test_idle_paid_minutes_count_only_idle_gpus_with_no_cell_running(tmp_path: Path) -> None:
    app = make_app(tmp_path)

    def sample(minute: int, util: float) -> HostUpdated:
        data = agent_sample("a100-train", t=FROZEN + 60 * minute, seq=minute + 1)
        data["gpus"] = [gpu(0, util, 210, 1.0, 40), gpu(1, util, 210, 1.0, 40)]
        return HostUpdated(make_update("a100-train", data))

    async with app.run_test(size=SIZE) as pilot:
        pane = app.fleet_screen.panes["a100-train"]
        for minute in range(0, 11):  # ten idle minutes on a billed box
            app.post_message(sample(minute, 1.0))
            await pilot.pause()
        assert pane.idle.idle_minutes == pytest.approx(10)
        pane.cell_running = True  # a cell runs: the GPUs being idle is not "idle paid"
        for minute in range(11, 14):
            app.post_message(sample(minute, 1.0))
            await pilot.pause()
        pane.cell_running = False
        app.post_message(sample(14, 90.0))  # busy again
        await pilot.pause()
        assert pane.idle.idle_minutes == pytest.approx(10)
        assert "idle paid 10m00s" in str(pane.border_subtitle)


async def test_a_narrow_panes_border_keeps_the_idle_spend_and_drops_the_profile(
    tmp_path: Path,
) -> None:
    """Two panes on 90 columns are 44 wide: the border cuts what does not fit at its
    end, where the idle spend is; the profile and the rate give way first."""
    app = make_app(tmp_path)

    def sample(minute: int) -> HostUpdated:
        data = agent_sample("a100-train", t=FROZEN + 60 * minute, seq=minute + 1)
        data["gpus"] = [gpu(0, 1.0, 210, 1.0, 40), gpu(1, 1.0, 210, 1.0, 40)]
        return HostUpdated(make_update("a100-train", data))

    async with app.run_test(size=(90, 40)) as pilot:
        pane = app.fleet_screen.panes["a100-train"]
        for minute in range(0, 3):
            app.post_message(sample(minute))
            await pilot.pause()
        await wait_for(lambda: "idle paid" in str(pane.border_subtitle), pilot=pilot)
        subtitle = str(pane.border_subtitle)
        assert pane.region.width < 45 and len(subtitle) <= pane.region.width - 4, subtitle
        assert subtitle.endswith("idle paid 2m00s") and "so far" in subtitle
        assert "vastai" not in subtitle
        await pilot.resize_terminal(240, 40)  # room for all of it again
        await wait_for(lambda: str(pane.border_subtitle).startswith("vastai · $"), pilot=pilot)
        assert str(pane.border_subtitle).endswith("idle paid 2m00s")


class GoneBox:
    """A host's transport when its box is gone: every connection attempt fails, counted."""

    def __init__(self, host: HostConfig, attempts: list[str]) -> None:
        self.host = host.name
        self.attempts = attempts
        self.connected = False

    async def connect(self) -> None:
        self.attempts.append(self.host)
        raise TransportError(self.host, "the box is gone")

    async def close(self) -> None:
        pass


async def test_a_torn_down_box_is_not_polled_until_r(tmp_path: Path, state_dir: Path) -> None:
    torn = TeardownRecord(FROZEN - 60, "true", 0, "", True)
    Journal(journal_dir(tmp_path / "hosts.toml")).save(HostJournal("a100-train", teardowns=[torn]))
    with_queue = FLEET_TOML.replace(
        "cost_per_hour = 1.89\n", 'cost_per_hour = 1.89\nqueue = "q.txt"\nrun = "echo"\n', 1
    )
    # Every box is gone: each attempt to reach one (the queue poller's, say) is counted.
    attempts: list[str] = []

    def queue_reads() -> int:
        return attempts.count("a100-train")

    fleet = write_fleet(tmp_path, with_queue)
    connections = FleetConnections(fleet.hosts, factory=lambda host: GoneBox(host, attempts))
    monitors = {h: ReplayMonitor() for h in ("h100-eval", "spot-4090")}
    monitors["a100-train"] = ReplayMonitor(updates=[healthy_update()])
    app = make_app(tmp_path, monitors, fleet=fleet, connections=connections)
    app.runtime.queues.poll_s = 0.5
    async with app.run_test(size=SIZE) as pilot:
        pane = app.fleet_screen.panes["a100-train"]
        await wait_for(lambda: pane.has_class("-torn-down"), pilot=pilot)
        stopped = app.runtime.monitor_tasks["a100-train"]
        await wait_for(lambda: stopped.done(), pilot=pilot)
        assert not app.runtime.monitor_tasks["h100-eval"].done()
        assert any("telemetry stopped" in str(n.message) for n in shown_notifications(app))
        # Its last sample (connected, with a cost) no longer counts as a host up, and its
        # queue is no longer polled (each poll would wait on a box that is gone).
        await wait_for(lambda: " 0 up" in screen_text(app), pilot=pilot)
        polls = queue_reads()
        await pilot.pause(1.5)
        assert queue_reads() == polls
        # r gives it one attempt. A sample that cannot tell which box answers (no box
        # id) leaves it torn down, and its telemetry stops again: no reconnect loop.
        monitor = monitors["a100-train"]
        monitor.updates = [healthy_update(seq=2, t=FROZEN + 1)]
        app.reconnect("a100-train")
        once = app.runtime.monitor_tasks["a100-train"]
        assert once is not stopped
        await wait_for(lambda: once.done(), pilot=pilot)
        assert pane.has_class("-torn-down") and queue_reads() == polls
        # A new box under the name (an id the journal has not seen): r finds it live,
        # polled again, and later job news leaves that alone.
        new_box = agent_sample("a100-train", seq=3, t=FROZEN + 2, box_id="n3wb0xn3wb0xn3wb0x")
        monitor.updates = [make_update("a100-train", new_box)]
        app.reconnect("a100-train")
        again = app.runtime.monitor_tasks["a100-train"]
        await wait_for(lambda: not pane.has_class("-torn-down"), pilot=pilot)
        assert again is not once and not again.done()
        assert app.jobs.state("a100-train").torn_down_at is None
        await wait_for(lambda: " 1 up" in screen_text(app), pilot=pilot)
        await wait_for(lambda: queue_reads() > polls, pilot=pilot)
        app.post_message(JobsChanged(app.jobs.state("a100-train")))
        await pilot.pause(0.2)
        assert not again.done()


@pytest.mark.parametrize("again", ["q", "ctrl+c"])
async def test_quitting_mid_pull_asks_first_and_escape_keeps_it_running(
    tmp_path: Path, again: str
) -> None:
    from rgt_tui.screens.quit_confirm import QuitConfirmScreen

    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        progress = PullProgress(
            "a100-train", "pulling", files_total=3, files_done=1, bytes_total=300 << 20,
            bytes_done=150 << 20, rate=10 << 20, eta_s=15.0, active=(),
        )  # fmt: skip
        publish_jobs(app, "a100-train", running="pull", progress=progress)
        publish_jobs(app, "h100-eval", running="teardown")
        publish_jobs(app, "spot-4090", running="verify")  # nothing to lose: not listed
        await pilot.press("q")
        await wait_for(lambda: isinstance(app.screen, QuitConfirmScreen), pilot=pilot)
        text = screen_text(app)
        assert "a100-train: pull (150M of 300M here) stops" in text and "p resumes it" in text
        assert "h100-eval: teardown is cut off" in text and "Teardown tab" in text
        assert "spot-4090" not in text
        await pilot.press("escape")  # the default: stay
        await pilot.pause()
        assert app.return_code is None and isinstance(app.screen, FleetScreen)
        await pilot.press("q")
        await wait_for(lambda: isinstance(app.screen, QuitConfirmScreen), pilot=pilot)
        await pilot.press(again)  # asked again: quit anyway
        await pilot.pause()
        assert app.return_code == 0


async def test_the_demos_quit_question_says_what_goes_with_it(tmp_path: Path) -> None:
    """The demo deletes its boxes and what was pulled from them when it quits: its quit
    question promised "what arrived is kept, and p resumes it" (a user's hour)."""
    from rgt_tui.screens.quit_confirm import QuitConfirmScreen

    removes = "the demo ends: its boxes, their runs and everything pulled into /x are deleted"
    app = make_app(tmp_path, quit_removes=removes)
    async with app.run_test(size=SIZE) as pilot:
        publish_jobs(app, "a100-train", running="pull")
        await pilot.press("q")
        await wait_for(lambda: isinstance(app.screen, QuitConfirmScreen), pilot=pilot)
        text = " ".join(screen_text(app).split())
        assert "a100-train: pull stops" in text and removes in text, text
        assert "kept" not in text and "resumes" not in text, text
        publish_jobs(app, "a100-train", running="")  # the pull ended meanwhile
        await wait_for(lambda: "Quit the demo?" in screen_text(app), pilot=pilot)
        text = " ".join(screen_text(app).split())
        assert "a100-train" not in text and removes in text, text


async def test_the_demo_asks_before_it_quits_even_with_nothing_running(tmp_path: Path) -> None:
    """Quitting the demo deletes its boxes with their running queues, what was pulled
    from them and the files a user edited in its folder: q with no job in flight asked
    nothing (users' hours lost each); q at the question quits, Escape stays."""
    from rgt_tui.screens.quit_confirm import QuitConfirmScreen

    removes = "the demo ends: its boxes, their runs and everything pulled into /x are deleted"
    app = make_app(tmp_path, quit_removes=removes)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("q")
        await wait_for(lambda: isinstance(app.screen, QuitConfirmScreen), pilot=pilot)
        text = " ".join(screen_text(app).split())
        assert "Quit the demo?" in text and removes in text, text
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, QuitConfirmScreen), pilot=pilot)
        assert app.return_code is None
        await pilot.press("q")
        await wait_for(lambda: isinstance(app.screen, QuitConfirmScreen), pilot=pilot)
        await pilot.press("q")
        await wait_for(lambda: app.return_code == 0, pilot=pilot)


async def test_p_q_in_one_burst_asks_about_the_pull_p_started(
    tmp_path: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    """``p q`` typed in one burst (both keys in one read of the terminal): q was decided
    before p's job request reached the App, saw no pull and quit without the question (a
    user's hour)."""
    from textual import events

    from rgt_tui.screens.quit_confirm import QuitConfirmScreen

    app = teardown_app(loopback_fleet, tmp_path, "true")
    # A pull that lasts (the box hashes 2 GiB first): the question must still list it
    # when the test reads it, on a loaded machine too.
    with open(loopback_fleet.box("box1").root / "results" / "big.bin", "wb") as f:  # noqa: ASYNC230
        f.truncate(2 << 30)  # sparse: no disk
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.post_message(events.Key("p", "p"))  # no pause between them: one burst
        app.post_message(events.Key("q", "q"))
        await wait_for(lambda: isinstance(app.screen, QuitConfirmScreen), pilot=pilot)
        assert app.return_code is None
        assert "box1: pull" in " ".join(screen_text(app).split())
        await pilot.press("escape")  # stay: the pull goes on
        await wait_for(lambda: not isinstance(app.screen, QuitConfirmScreen), pilot=pilot)
        assert app.return_code is None


async def test_quitting_with_only_a_verify_running_does_not_ask(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        publish_jobs(app, "a100-train", running="verify")  # nothing to lose: it can run again
        await pilot.press("q")
        await pilot.pause()
        assert app.return_code == 0


async def test_danger_clocks_are_short_and_never_for_this_machine(tmp_path: Path) -> None:
    """No rented-box clocks for ``local`` (nothing bills it); a rented box's note is short."""
    default = load_fleet(None)
    app = make_app(tmp_path, fleet=default)
    async with app.run_test(size=SIZE) as pilot:
        app.post_message(HostUpdated(make_update("local", agent_sample("local", t=FROZEN))))
        await wait_for(lambda: "local" in app.latest, pilot=pilot)
        await pilot.pause()
        assert not app.fleet_screen.notices.shown()
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        app.post_message(HostUpdated(healthy_update()))
        await wait_for(lambda: "a100-train" in app.latest, pilot=pilot)
        await pilot.pause()
        # One line in the header (cut to the width), gone after a while; never a toast.
        clocks = app.fleet_screen.notices.shown()
        assert clocks and app.fleet_screen.notices.seconds <= 30 and not shown_notifications(app)


def test_a_tight_border_shortens_the_spend_and_the_idle_time_before_dropping_them() -> None:
    """A user's hour saw "idle paid 1m42s" alone on a narrow pane, the spend gone: the
    spend and the idle time have short forms, used before either is dropped."""
    parts: list[Part] = [
        "generic-ssh",
        "$2.49/h",
        ("$0.28 since first seen", "$0.28"),
        ("idle paid 1m42s", "idle 1m42s"),
    ]
    assert border_subtitle(parts, 100).startswith("generic-ssh · $2.49/h · $0.28 since")
    assert border_subtitle(parts, 45) == "$0.28 since first seen · idle paid 1m42s"
    assert border_subtitle(parts, 20) == "$0.28 · idle 1m42s"
    assert border_subtitle(parts, 12) == "idle 1m42s"  # the idle time last of all
    assert border_subtitle(["generic-ssh", "$2.49/h", ("", ""), ("", "")], 15) == "$2.49/h"


async def test_a_refusal_after_escape_is_told(
    tmp_path: Path, state_dir: Path, loopback_fleet, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """Hour s23b #8: the name typed, Enter, then Escape at once: the re-scan refused the
    teardown (a file written since the pull) and nothing said so until the tab was
    opened again."""
    import asyncio

    from support.pilot import shown_notifications
    from textual.widgets import Input

    import rgt_tui.services.teardown as teardown

    # The re-scan is held until Escape has left the tab: on a quiet machine it finished
    # first, while the tab still showed the refusal, and the test waited for a toast
    # that is only for a tab walked away from.
    release, real = asyncio.Event(), teardown.confirm_and_tear_down

    async def held(*args, **kwargs):  # type: ignore[no-untyped-def]
        await release.wait()
        return await real(*args, **kwargs)

    monkeypatch.setattr(teardown, "confirm_and_tear_down", held)
    marker = tmp_path / "destroyed"
    app = teardown_app(loopback_fleet, tmp_path, f"echo gone > {marker}")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pull_and_verify(app, pilot)
        await checklist(app, pilot)
        (loopback_fleet.box("box1").root / "results" / "late.json").write_text("{}")
        app.screen.query_one("#confirm-name", Input).focus()
        await pilot.pause()
        await pilot.press(*"box1", "enter", "escape")
        await wait_for(lambda: not isinstance(app.screen, HostDetailScreen), pilot=pilot)
        release.set()
        await wait_for(lambda: not app.jobs.state("box1").running, 60, pilot=pilot)
        await wait_for(
            lambda: any(
                n.title == "box1: teardown refused" and "nothing was torn down" in str(n.message)
                for n in shown_notifications(app)
            ),
            30,
            pilot=pilot,
        )
    assert not marker.exists()
