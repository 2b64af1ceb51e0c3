"""ux-b #13: what ``watch`` did on its own — a move of a preempted cell, a stop — reaches
the open TUI's notices list (key n), once, from the told log ``watch`` keeps; what it
only said (a preemption: the TUI names its own) is not listed from there."""

from __future__ import annotations

import time
from pathlib import Path

from support.pilot import make_app, screen_text, wait_for
from support.samples import agent_sample, make_update

from rgt_tui.controllers.notices import notices_of
from rgt_tui.messages import HostUpdated
from rgt_tui.paths import journal_dir
from rgt_tui.services.watch.events import WatchEvent
from rgt_tui.services.watch.told_log import ToldLog, told_log_path

HOST = "a100-train"


async def test_watchs_moves_and_stops_are_listed_in_the_notices(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    log = ToldLog(told_log_path(journal_dir(app.fleet.path)))
    named = WatchEvent("preempted", HOST, "preempted:a:1", f"{HOST}: preempted", "at ~21:46")
    moved = WatchEvent(
        "preempt_action", HOST, "move:preempted:a:1:eta:moved", f"{HOST}: moved",
        "moved eta to box2: it resumes from checkpoint.pt from 21:46", "info",
    )  # fmt: skip
    log.told(named, time.time())
    log.told(moved, time.time())  # watch moved it before the TUI was opened
    async with app.run_test(size=(100, 50)) as pilot:
        app.post_message(HostUpdated(make_update(HOST, agent_sample(HOST))))
        await wait_for(lambda: len(notices_of(app)) > 0, pilot=pilot)
        (first,) = notices_of(app).items()
        assert first.title == f"{HOST}: moved (by watch)" and "moved eta to box2" in first.text
        stopped = WatchEvent(
            "stopped", HOST, f"stopped:{HOST}:1", f"{HOST} stopped: queue done, results pulled "
            "and verified, GPUs idle", "Stopped a100-train with its stop command", "info",
        )  # fmt: skip
        log.told(stopped, time.time())  # and stops it while the TUI is open
        app.spot.actions._looked = float("-inf")  # not the 2 s the next look waits
        app.post_message(HostUpdated(make_update(HOST, agent_sample(HOST, seq=2))))
        await wait_for(lambda: len(notices_of(app)) > 1, pilot=pilot)
        titles = [n.title for n in notices_of(app).items()]
        assert titles == [stopped.title + " (by watch)", f"{HOST}: moved (by watch)"]


async def test_a_stop_that_stopped_nothing_is_listed_and_each_at_its_own_time(
    tmp_path: Path,
) -> None:
    """An overnight hour (s39 watch #4): the TUI listed "box3 stopped … (by watch)" and
    left out the critical "STILL ANSWERS 5m01s after watch's stop" that undid it; and each
    overnight action was listed at the time the TUI read it (all at the opening's hour).
    Both are listed, the critical one as an error, each at the time watch told it, in
    the order they happened."""
    app = make_app(tmp_path)
    log = ToldLog(told_log_path(journal_dir(app.fleet.path)))
    night = time.time() - 6 * 3600
    stopped = WatchEvent(
        "stopped", HOST, f"stopped:{HOST}:1", f"{HOST} stopped: queue done, results pulled "
        "and verified, GPUs idle", "Stopped it with its stop command", "info",
    )  # fmt: skip
    answers = WatchEvent(
        "still_answers", HOST, f"still_answers:{HOST}:1",
        f"{HOST}: STILL ANSWERS 5m01s after watch's stop", "it may still be billing", "critical",
    )  # fmt: skip
    log.told(stopped, night)
    log.told(answers, night + 301)
    odd = WatchEvent(
        "stopped", "box9", "stopped:box9:1", "box9 stopped: queue done", "when: not a number"
    )
    log.told(odd, float("nan"))  # a time that is no finite number: left out
    far = WatchEvent("stopped", "box8", "stopped:box8:1", "box8 stopped: queue done", "far")
    log.told(far, 1e20)  # finite, and no clock shows it: left out (it crashed n)
    async with app.run_test(size=(100, 50)) as pilot:
        app.post_message(HostUpdated(make_update(HOST, agent_sample(HOST))))
        await wait_for(lambda: len(notices_of(app)) > 1, pilot=pilot)
        newest, older = notices_of(app).items()[:2]
        assert newest.title == answers.title + " (by watch)" and newest.severity == "error"
        assert older.title == stopped.title + " (by watch)"
        assert (older.at, newest.at) == (night, night + 301)
        assert not any(n.host in ("box9", "box8") for n in notices_of(app).items())
        await pilot.press("n")  # the list opens (a 1e20 time made it raise OverflowError)
        await wait_for(lambda: "STILL ANSWERS" in screen_text(app), pilot=pilot)
