"""``rgt-tui watch``'s periodic pulls (issue 43.3): as in the TUI, only hosts with pull
folders, and only once the queue view its runtime polled shows results; no pull is tried,
nothing is told, before. The Watcher as the CLI builds it (its drivers on), on loopback
boxes; what the scheduler did is read from it, never guessed from a sleep."""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
from pathlib import Path

from support.pulls import box_results
from support.replay import ReplayMonitor
from support.samples import agent_sample, make_update
from support.waiting import wait_for

from rgt_tui.domain.queue_state import DONE, RUNNING, CellView, QueueView
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.watch.drivers.periodic_pull import NO_RESULTS
from rgt_tui.services.watch.events import WatchEvent
from rgt_tui.services.watch.sinks import Sink
from rgt_tui.services.watch.watcher import Watcher


def spot_fleet(hosts_file: Path) -> None:
    """box1 a vast.ai box whose pulls would take the whole home; box2 one with a
    results folder (both on the profile's 30 min cadence)."""
    text = hosts_file.read_text().replace('profile = "generic-ssh"', 'profile = "vastai"')
    head, box1, box2 = text.split("[[hosts]]")
    box1 = "\n".join(
        'workdir = "~"' if line.startswith("workdir") else line
        for line in box1.splitlines()
        if not line.startswith("durable_dir")
    )
    hosts_file.write_text("[[hosts]]".join([head, box1 + "\n", box2]))


async def test_watch_pulls_only_hosts_with_pull_folders_once_a_cell_ended(
    make_loopback_fleet, tmp_path
):
    loopback = await make_loopback_fleet(2)
    spot_fleet(loopback.hosts_file)
    fleet = dataclasses.replace(load_fleet(loopback.hosts_file), results_dir=tmp_path / "res")
    told: list = []

    class Told(Sink):
        def on_event(self, event: WatchEvent) -> None:
            told.append(event)

    monitors = {
        h: ReplayMonitor(updates=[make_update(h, agent_sample(h))]) for h in ("box1", "box2")
    }
    watcher = Watcher(fleet, sinks=[Told()], hosts=fleet.hosts, monitors=monitors)
    running = asyncio.ensure_future(watcher.run())
    try:
        scheduler = watcher.pull
        await wait_for(lambda: len(scheduler.held_back) == 2, 30, "a look at both hosts")
        assert "names no pull folders" in scheduler.held_back["box1"]
        assert scheduler.held_back["box2"] == NO_RESULTS
        assert scheduler.last == {} and not [e for e in told if e.kind.startswith("pull")]

        # A cell still running (for less than a cadence) is no result yet.
        cell = CellView(0, "alpha", RUNNING, started_at=990)
        watcher.runtime.queue_viewed(
            "box2", QueueView("box2", "running", (cell,), None, "b", 1000, None)
        )
        scheduler.wake()
        await asyncio.sleep(0)
        assert scheduler.start_due() == [] and "box2" in scheduler.held_back

        # The poll saw it end: box2 is pulled, box1 never.
        (box_results(loopback, "box2") / "alpha").mkdir(parents=True)
        (box_results(loopback, "box2") / "alpha" / "m.json").write_text("{}")
        done = dataclasses.replace(cell, status=DONE, ended_at=1100)
        watcher.runtime.queue_viewed(
            "box2", QueueView("box2", "finished", (done,), None, "b", 1200, None)
        )
        scheduler.wake()
        await wait_for(lambda: [e for e in told if e.kind == "pull"], 60, "box2's pull told")
        assert [e.host for e in told if e.kind.startswith("pull")] == ["box2"]
        assert "box1" in scheduler.held_back and "box1" not in scheduler.last
        assert told[-1].title == "box2: 1 new result file pulled", told[-1].title

        # The box rewrites it (a checkpoint each epoch; not an append, which is kept whole):
        # the next pull keeps the earlier copy, and says so with the room they take, as
        # `rgt-tui pull` does (hour s34 CLI #1: "2 new result files pulled" every 90 s
        # while .rgt/replaced/ filled unseen).
        # Told as the copies reach 1, 2, 4 … (s36 watch #3: every pull, 48 a day per box,
        # told the same verdict again); the third is on the status line only, with why.
        for n in (1, 2, 3, 4):
            (box_results(loopback, "box2") / "alpha" / "m.json").write_text(f'{{"epoch": {n}}}')
            assert await scheduler.pull_once(fleet.hosts[1]) is None
            kept = f".rgt/replaced/ holds {n} earlier cop{'y' if n == 1 else 'ies'} ("
            assert kept in scheduler.last["box2"]
            if n == 3:
                assert "not notified: only newer copies" in scheduler.last["box2"]
                assert "notified again at 4 earlier copies" in scheduler.last["box2"]
                continue
            count = 1 + min(n, 3)  # the events told so far (a told 3rd: a 5th here, a timeout)
            await wait_for(lambda c=count: len(told) == c, 30, "the pull's event delivered")
            event = told[-1]
            assert event.title == "box2: 1 changed result file pulled (earlier copy kept)", event
            assert kept in event.body and "never deleted by rgt-tui" in event.body, event.body

        # The user deletes the copies, as the notice asks: growth counts from what is
        # kept now (told again at 2, not once past the 4 told before: review s37).
        shutil.rmtree(fleet.results_dir / "box2" / ".rgt" / "replaced")
        for n in (5, 6):
            (box_results(loopback, "box2") / "alpha" / "m.json").write_text(f'{{"epoch": {n}}}')
            assert await scheduler.pull_once(fleet.hosts[1]) is None
        assert "notified again at" not in scheduler.last["box2"]
        await wait_for(lambda: len(told) == 5, 30, "the 2nd copy since the delete told")
        assert ".rgt/replaced/ holds 2 earlier copies (" in told[-1].body
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
