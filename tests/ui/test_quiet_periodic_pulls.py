"""Quiet when nothing is wrong (issue 43.3): the open TUI's periodic pulls start only for
hosts with pull folders that have produced results; a failing one is one line in its pane
and one entry in the notices list (``n``), never a toast, and never the same twice in a row.

Real loopback boxes and the App's own scheduler; what ran is read from the scheduler
(``held_back``, ``last``, ``due``), never guessed from a sleep.
"""

from __future__ import annotations

import re
from pathlib import Path

from support.pilot import SIZE, make_app, screen_text, shown_notifications
from support.replay import ReplayMonitor
from support.samples import agent_sample, make_update
from support.waiting import wait_for

from rgt_tui.controllers.notices import notices_of
from rgt_tui.domain.queue_state import DONE, PENDING, CellView, QueueView
from rgt_tui.screens.notices import NoticesScreen
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.watch.drivers.periodic_pull import NO_RESULTS


def edit_host(hosts_file: Path, name: str, edit) -> None:  # type: ignore[no-untyped-def]
    """Rewrite the ``[[hosts]]`` block of ``name`` in the fleet file with ``edit``."""
    head, *blocks = hosts_file.read_text().split("[[hosts]]")
    out = [head]
    for block in blocks:
        out.append(edit(block) if f'name = "{name}"' in block else block)
    hosts_file.write_text("[[hosts]]".join(out))


def as_vastai(block: str) -> str:
    return block.replace('profile = "generic-ssh"', 'profile = "vastai"')


def no_pull_folders(block: str) -> str:
    """workdir ~ and no durable_dir or pull: a pull would take the whole home."""
    block = re.sub(r"(?m)^durable_dir = .*\n", "", block)
    return re.sub(r"(?m)^workdir = .*$", 'workdir = "~"', as_vastai(block))


def monitors(*hosts: str) -> dict[str, ReplayMonitor]:
    """Each host connected with one sample, so its pane is drawn."""
    return {h: ReplayMonitor(updates=[make_update(h, agent_sample(h))]) for h in hosts}


def view(host: str, *statuses: str) -> QueueView:
    cells = tuple(CellView(i, f"c{i}", s) for i, s in enumerate(statuses))
    return QueueView(host, "running", cells, None, "boot", 1000, None)


async def test_a_spot_box_without_pull_folders_or_results_is_never_pulled_nor_toasted(
    make_loopback_fleet, tmp_path
):
    loopback = await make_loopback_fleet(2)
    edit_host(loopback.hosts_file, "box1", no_pull_folders)
    edit_host(loopback.hosts_file, "box2", as_vastai)  # pull folders, nothing produced yet
    fleet = load_fleet(loopback.hosts_file)
    app = make_app(tmp_path, monitors("box1", "box2"), fleet=fleet)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(
            lambda: app.jobs.scheduler and len(app.jobs.scheduler.held_back) == 2,
            30,
            "the periodic pulls to look at both hosts",
            pilot=pilot,
        )
        scheduler = app.jobs.scheduler
        assert "names no pull folders" in scheduler.held_back["box1"]
        assert scheduler.held_back["box2"] == NO_RESULTS
        # Nothing was tried, nothing was told.
        assert scheduler.last == {} and scheduler.due == {}
        assert shown_notifications(app) == [] and len(notices_of(app)) == 0
        assert "periodic pull" not in screen_text(app)

        # A queue view still showing nothing ended holds box2 back...
        app.runtime.queue_viewed("box2", view("box2", "running", PENDING))
        scheduler.wake()
        await pilot.pause()
        assert scheduler.start_due() == [] and "box2" in scheduler.held_back
        # ... and one whose cell finished starts its pull (and only box2's).
        (loopback.box("box2").root / "results" / "c0").mkdir(parents=True)
        (loopback.box("box2").root / "results" / "c0" / "out.json").write_text("{}")
        app.runtime.queue_viewed("box2", view("box2", DONE, PENDING))
        scheduler.wake()
        await wait_for(
            lambda: "pulled" in scheduler.last.get("box2", ""), 60, "box2's pull", pilot=pilot
        )
        assert "box2" not in scheduler.held_back and "box1" in scheduler.held_back
        assert "box1" not in scheduler.last
        # Its news is listed (n), not toasted: the user did not just ask for it.
        assert shown_notifications(app) == []
        assert [n.host for n in notices_of(app).items()] == ["box2"]


def failing_pull(root: Path):  # type: ignore[no-untyped-def]
    """Pull a folder that is not on the box yet, every 30 min (the host asks itself)."""

    def edit(block: str) -> str:
        return block + f'pull = ["{root}"]\npull_every = "30m"\n'

    return edit


async def test_a_failing_periodic_pull_is_one_pane_line_and_one_entry_per_failure(
    make_loopback_fleet, tmp_path
):
    loopback = await make_loopback_fleet(1)
    missing = loopback.box("box1").root / "runs"
    edit_host(loopback.hosts_file, "box1", failing_pull(missing))
    app = make_app(tmp_path, monitors("box1"), fleet=load_fleet(loopback.hosts_file))
    async with app.run_test(size=SIZE) as pilot:

        def pane_lines() -> list[str]:
            return [
                line for line in screen_text(app).splitlines() if "periodic pull failed" in line
            ]

        pane = app.fleet_screen.panes["box1"]
        await wait_for(lambda: pane.pull_failure, 60, "the first failure", pilot=pilot)
        # Seen at once: the pane grows by the line, not at its next sample (h561 #2: the
        # old height cut it off for up to 30 s).
        await pilot.pause()
        await pilot.pause()
        assert pane_lines(), screen_text(app)
        scheduler = app.jobs.scheduler
        first = notices_of(app).items()
        assert len(first) == 1 and first[0].title == "box1: periodic pull failed"
        assert str(missing) in first[0].text and "fix:" in first[0].text

        async def again() -> None:
            scheduler.due["box1"] = 0.0  # due now, rather than in 5 minutes
            scheduler.wake()
            await wait_for(
                lambda: scheduler.due.get("box1", 0.0) > 0.0, 60, "another try", pilot=pilot
            )
            await pilot.pause()

        # The same failure again: nothing new anywhere.
        await again()
        assert len(notices_of(app)) == 1 and len(pane_lines()) == 1
        # Another failure (the folder is there, empty): a second entry, still one line.
        missing.mkdir()
        await again()
        await wait_for(lambda: len(notices_of(app)) == 2, 10, "the second entry", pilot=pilot)
        newest = notices_of(app).items()[0]
        assert "nothing was pulled" in newest.text
        await wait_for(
            lambda: any("nothing was pulled" in line for line in pane_lines()),
            10,
            "the pane's line to say the new failure",
            pilot=pilot,
        )
        assert len(pane_lines()) == 1 and "p to retry" in pane_lines()[0]
        assert shown_notifications(app) == []  # never a toast

        # n opens the list: both failures, newest first, each once.
        await pilot.press("n")
        await wait_for(lambda: isinstance(app.screen, NoticesScreen), 10, "the list", pilot=pilot)
        text = screen_text(app)
        assert text.count("box1: periodic pull failed") == 2
        assert text.index("nothing was pulled: the box") < text.index("pull root")
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, NoticesScreen), 10, "closed", pilot=pilot)

        # A file arrives: the next pull succeeds and the pane's line goes.
        (missing / "c0.json").write_text("{}")
        await again()
        await wait_for(lambda: not pane_lines(), 30, "the line to go", pilot=pilot)
