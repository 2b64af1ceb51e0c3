"""Pilot tests of the Teardown tab after its check, as things happen since: the app's
records watch's own look at another window's pull or teardown, the check it starts by
itself, and a pull or verify of this window. Over real loopback boxes (a real asyncssh
server over a folder per box; the journal in a tmp ``XDG_STATE_HOME``).

What they pin down: a check the watch starts never erases what the user was told (a
void confirmation, a refused name), and its first look never reads this TUI's own pull
as another process's; a check older than a pull says so until checked again.
"""

from __future__ import annotations

from pathlib import Path

from support.pilot import SIZE, screen_text, wait_for
from support.teardown_ui import (
    checklist,
    confirmed_by_hand,
    pull_and_verify,
    results_on_box,
    teardown_app,
    type_name,
)
from textual.widgets import Input

from rgt_tui.app import RgtApp
from rgt_tui.screens.fleet import FleetScreen
from rgt_tui.services.fleet.file import load_fleet


async def pull_elsewhere(loopback_fleet, fleet) -> None:  # type: ignore[no-untyped-def]
    """The box writes a file since the last pull; another window pulls it, unverified."""
    from rgt_tui.services.pull import pull_host
    from rgt_tui.transport import open_transport

    root = loopback_fleet.box("box1").root
    (next(root.rglob("metrics.json")).parent / "step_900.bin").write_bytes(b"w" * 4096)
    host = fleet.host("box1")
    async with open_transport(host) as t:
        await pull_host(host, fleet.results_dir, t)


async def voided_by_a_pull_elsewhere(app, pilot, loopback_fleet, fleet) -> None:  # type: ignore[no-untyped-def]
    """Confirmed by hand; then a pull in another window finds a file the box wrote since,
    and the check after it voids the confirmation: the tab says so."""
    await confirmed_by_hand(app, pilot)
    app.jobs.request("box1", "gate")  # the box answers, nothing changed: still open
    await wait_for(lambda: not app.jobs.state("box1").running, pilot=pilot)
    assert app.jobs.state("box1").awaiting_manual
    await loopback_fleet.box("box1").stop()  # destroyed by hand, say: it cannot answer
    app.jobs.request("box1", "gate")
    await wait_for(lambda: app.jobs.state("box1").gate_at is not None, pilot=pilot)
    await wait_for(lambda: not app.jobs.state("box1").running, pilot=pilot)
    assert app.jobs.state("box1").awaiting_manual, app.jobs.state("box1").refusal
    await loopback_fleet.box("box1").start()

    await pull_elsewhere(loopback_fleet, fleet)
    # The records watch's own look, now: it starts the check. Left to its timer, its
    # check could come later and hold the host when the test asks for a verify (h561 #1).
    await app.jobs.take_outside_changes()
    await wait_for(lambda: not app.jobs.state("box1").awaiting_manual, pilot=pilot)
    await wait_for(lambda: "do not destroy the box now" in screen_text(app), pilot=pilot)


async def test_the_watchs_own_check_clears_a_locked_refusal_it_settles(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    """Review h574 #1: the name typed while the box had written a file since the pull
    was refused as "locked: …"; another window then pulled and verified it, and the
    watch's check found the checklist ready, yet "locked" stayed beneath it."""
    from rgt_tui.services.verify.run import verify_host
    from rgt_tui.transport import open_transport

    results_on_box(loopback_fleet.box("box1").root)
    fleet = load_fleet(loopback_fleet.hosts_file)
    app = RgtApp(fleet, start_monitors=False, config_dir=tmp_path / "c")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pull_and_verify(app, pilot)
        await checklist(app, pilot)
        root = loopback_fleet.box("box1").root
        (next(root.rglob("metrics.json")).parent / "step_900.bin").write_bytes(b"w" * 4096)
        await type_name(app, pilot, "box1")
        await wait_for(lambda: "locked:" in screen_text(app), pilot=pilot)
        await pull_elsewhere(loopback_fleet, fleet)
        async with open_transport(fleet.host("box1")) as t:
            await verify_host(fleet.host("box1"), fleet.results_dir, transport=t)
        await app.jobs.take_outside_changes()
        await wait_for(lambda: app.jobs.state("box1").gate.ready_but_confirmation, pilot=pilot)
        await wait_for(lambda: "locked:" not in screen_text(app), pilot=pilot)


async def test_a_check_that_voids_the_confirmation_takes_the_tab_back_to_it(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    """s44 spot hour #2: after the typed name, a pull in another window found a file the
    box wrote since; the TUI re-checked (locked), yet its Confirm box still said "type the
    host's name again once you destroyed the box" under "Do this by hand now … destroy".
    The tab goes back to the confirmation and says why. A check whose box does not answer
    (it may be destroyed by now) leaves the record open."""
    root = loopback_fleet.box("box1").root
    results_on_box(root)
    fleet = load_fleet(loopback_fleet.hosts_file)
    app = RgtApp(fleet, start_monitors=False, config_dir=tmp_path / "c")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await voided_by_a_pull_elsewhere(app, pilot, loopback_fleet, fleet)
        said = " ".join(screen_text(app).split())
        assert "no longer holds: since then, a check at" in said, said
        assert "Do this by hand now" not in said
        box = app.screen.query_one("#confirm-name", Input)
        assert box.placeholder != "type the host's name again once you destroyed the box"
        # The records watch checks again by itself after a pull elsewhere (and so may
        # Ctrl+R): the gate still locked, the word that the confirmation is gone stays
        # (CI s55 lost it when the watch's check came after the one above).
        app.jobs.request("box1", "gate")
        await wait_for(lambda: not app.jobs.state("box1").running, pilot=pilot)
        assert "do not destroy the box now" in screen_text(app), screen_text(app)
        app.jobs.request("box1", "verify")  # the checklist holds again: the word goes
        await wait_for(lambda: not app.jobs.state("box1").running, 60, pilot=pilot)
        app.jobs.request("box1", "gate")
        await wait_for(lambda: app.jobs.state("box1").gate.ready_but_confirmation, pilot=pilot)
        await wait_for(lambda: "do not destroy the box now" not in screen_text(app), pilot=pilot)


async def test_the_word_that_a_confirmation_is_void_goes_once_the_box_is_recorded_gone(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    """Review h564 #4: torn down from another window (`rgt-tui teardown`), the tab said
    "recorded as torn down" beside "do not destroy the box now … confirm again"."""
    import time

    from rgt_tui.services.journal import TeardownRecord

    results_on_box(loopback_fleet.box("box1").root)
    fleet = load_fleet(loopback_fleet.hosts_file)
    app = RgtApp(fleet, start_monitors=False, config_dir=tmp_path / "c")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await voided_by_a_pull_elsewhere(app, pilot, loopback_fleet, fleet)
        box = app.jobs.state("box1").box
        record = TeardownRecord(time.time(), "true", 0, "", True, box.box_id if box else None)
        app.jobs.journal().add_teardown("box1", record)  # another process tore it down
        await app.jobs.take_outside_changes()
        await wait_for(lambda: app.jobs.state("box1").torn_down_at is not None, pilot=pilot)
        await wait_for(lambda: "do not destroy the box now" not in screen_text(app), pilot=pilot)


async def test_a_manual_teardown_is_refused_when_another_box_was_seen_meanwhile(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    from rgt_tui.domain.box_identity import BoxIdentity

    results_on_box(loopback_fleet.box("box1").root)
    app = RgtApp(
        load_fleet(loopback_fleet.hosts_file), start_monitors=False, config_dir=tmp_path / "c"
    )
    journal = app.jobs.journal()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pull_and_verify(app, pilot)
        await checklist(app, pilot)
        await type_name(app, pilot, "box1")
        assert app.jobs.state("box1").awaiting_manual
        confirmed = app.jobs.state("box1").teardown.report.box
        # Meanwhile a command line (or another rgt-tui) sees a re-created box there.
        journal.observe_box("box1", BoxIdentity("b" * 32, None), 1e10)
        # The open TUI takes that in (its records watch) before the user types again:
        # the order a loaded machine produced, made certain here.
        await app.jobs.take_outside_changes()
        await pilot.pause()
        box = app.screen.query_one("#confirm-name", Input)
        box.focus()
        await pilot.pause()
        await pilot.press(*"box1", "enter")
        await wait_for(lambda: "another box is recorded" in screen_text(app), 30, pilot=pilot)
        assert confirmed.short() in app.jobs.state("box1").refusal
        assert app.jobs.state("box1").torn_down_at is None
    jh = journal.load("box1")
    assert jh.teardowns == [] and all(h.teardowns == [] for h in jh.history)


async def test_the_records_watchs_first_look_leaves_the_pull_this_tui_just_showed(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    """The records watch's first look at a host, falling while this TUI's own pull ends
    (its result shown, its records not yet taken as the baseline), read the pull's own
    records as another process's and cleared the result: the user saw the shorter
    "from its records" view, and a test waiting for the result waited 60 s (a CI run)."""
    results_on_box(loopback_fleet.box("box1").root)
    fleet = load_fleet(loopback_fleet.hosts_file)
    first = RgtApp(fleet, start_monitors=False, config_dir=tmp_path / "c")
    async with first.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("p")
        await wait_for(lambda: first.jobs.state("box1").pull_result is not None, 60, pilot=pilot)
        await wait_for(lambda: not first.jobs.state("box1").running, 60, pilot=pilot)
        result = first.jobs.state("box1").pull_result
    assert result is not None and result.ok
    # A second TUI whose records watch has not looked at box1 yet, its pull in that window.
    app = RgtApp(
        load_fleet(loopback_fleet.hosts_file), start_monitors=False, config_dir=tmp_path / "d"
    )
    async with app.run_test(size=SIZE) as pilot:
        jobs = app.jobs
        assert jobs.state("box1").recorded is None  # not yet looked at
        jobs.learned("box1", running="pull", pull_result=result)
        await jobs.take_outside_changes()
        assert jobs.state("box1").pull_result is result
        # Another process's pull afterwards is still taken: its records replace this one.
        jobs.learned("box1", running="")
        await pilot.press("p")
        await wait_for(lambda: jobs.state("box1").pull_result is not result, 60, pilot=pilot)
        await wait_for(lambda: jobs.state("box1").pull_result is not None, 60, pilot=pilot)
        await wait_for(lambda: not jobs.state("box1").running, 60, pilot=pilot)
        ours = jobs.state("box1").pull_result
        await jobs.take_outside_changes()  # nothing changed since its end: it stays
        assert jobs.state("box1").pull_result is ours


async def test_the_watchs_own_check_keeps_the_words_of_a_refused_name(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    """h561 #3: "'bx1' is not 'box1': nothing was torn down" vanished a second after it
    was said when a pull in another window ended: the records watch's own check cleared
    it as a job the user started would. The user's next key clears it; the watch's not."""
    results_on_box(loopback_fleet.box("box1").root)
    fleet = load_fleet(loopback_fleet.hosts_file)
    app = RgtApp(fleet, start_monitors=False, config_dir=tmp_path / "c")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pull_and_verify(app, pilot)
        await checklist(app, pilot)
        await type_name(app, pilot, "bx1")
        await wait_for(lambda: "'bx1' is not 'box1'" in screen_text(app), pilot=pilot)
        before = app.jobs.state("box1").gate
        await pull_elsewhere(loopback_fleet, fleet)
        await app.jobs.take_outside_changes()  # its check starts: the gate is on show
        await wait_for(
            lambda: (
                app.jobs.state("box1").gate is not before and not app.jobs.state("box1").running
            ),
            60,
            pilot=pilot,
        )
        assert "'bx1' is not 'box1'" in screen_text(app), screen_text(app)
        await checklist(app, pilot)  # Ctrl+R, the user's own: the old words go
        assert "'bx1' is not 'box1'" not in screen_text(app)


async def test_a_check_older_than_a_pull_and_verify_says_so_until_checked_again(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    """Checked, then pulled and verified: back on the Teardown tab the old check read as
    current ("while cellA runs", a user's hour). It says what happened since, until the
    next check; re-checking there by itself would re-hash the whole local copy."""
    app = teardown_app(loopback_fleet, tmp_path, "true")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await checklist(app, pilot)  # the first check: nothing pulled yet
        # In keys, as the lines' fixes are: not the command line's "run rgt-tui pull box1".
        await wait_for(
            lambda: "nothing pulled yet: pull it, then verify" in screen_text(app), pilot=pilot
        )
        text = screen_text(app)
        assert "older than what happened since" not in text and "rgt-tui pull" not in text
        await pilot.press("escape")
        await wait_for(lambda: isinstance(app.screen, FleetScreen), pilot=pilot)
        await pull_and_verify(app, pilot)
        assert app.jobs.state("box1").gate_outdated.startswith("a verify ended at ")
        await pilot.press("6")
        await wait_for(
            lambda: "older than what happened since: a verify ended at" in screen_text(app),
            pilot=pilot,
        )
        assert "Ctrl+R re-checks" in screen_text(app)
        await checklist(app, pilot)
        assert app.jobs.state("box1").gate_outdated is None
        assert "older than what happened since" not in screen_text(app)
