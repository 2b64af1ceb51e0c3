"""The Pulls tab shows the last pull and verification whoever ran them (issue 43.10f): a
`rgt-tui pull` and `verify` run in another terminal reach an open TUI's tab through the
records watch, and a TUI started afterwards shows them from the records at once. A real
loopback box, `rgt-tui` in a subprocess as a person runs it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from support.cli import arun
from support.pilot import SIZE, text_of, wait_for
from support.teardown_ui import job_done, results_on_box
from textual.widgets import Static

from rgt_tui.app import RgtApp
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.screens.tabs.pulls import NO_PULL, NO_VERIFY, PullsTab
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.records_watch import WATCH_EVERY_S

REACHES_S = WATCH_EVERY_S * 5  # a few polls of the records, generous for a loaded machine


async def pulls_tab(app: RgtApp, pilot) -> PullsTab:  # type: ignore[no-untyped-def]
    app.open_host("box1")
    detail = await wait_for(
        lambda: isinstance(app.screen, HostDetailScreen) and app.screen, pilot=pilot
    )
    detail.action_show_tab("pulls")
    tab = detail.tabs["pulls"]
    assert isinstance(tab, PullsTab)
    return tab


def bodies(tab: PullsTab) -> tuple[str, str]:
    """The pull and verification bodies as shown ("" before the tab is composed)."""
    found = [*tab.query(".pull-body").results(Static), *tab.query(".verify-body").results(Static)]
    return (text_of(found[0]), text_of(found[1])) if len(found) == 2 else ("", "")


async def test_a_pull_and_verify_from_the_command_line_show_in_the_pulls_tab(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    hosts = loopback_fleet.hosts_file
    results_on_box(loopback_fleet.box("box1").root)
    env: dict[str, str | None] = {"RGT_HOSTS": str(hosts)}  # XDG_STATE_HOME: state_dir's
    app = RgtApp(load_fleet(hosts), start_monitors=False, config_dir=tmp_path / "config")
    async with app.run_test(size=SIZE) as pilot:
        tab = await pulls_tab(app, pilot)
        await wait_for(lambda: app.jobs.state("box1").recorded is not None, pilot=pilot)
        await wait_for(lambda: bodies(tab) == (NO_PULL, NO_VERIFY), pilot=pilot)

        pulled = await arun("pull", "box1", env=env)
        assert pulled.returncode == 0, pulled.stdout + pulled.stderr
        verified = await arun("verify", "box1", env=env)
        assert verified.returncode == 0, verified.stdout + verified.stderr
        pull, verify = await wait_for(
            lambda: "VERIFIED" in bodies(tab)[1] and bodies(tab),
            REACHES_S,
            "the command line's pull and verify in the Pulls tab",
            pilot=pilot,
        )
        assert "last pull (from its records)" in pull and "2 of 2 files" in pull, pull
        # Verified: the pull's line no longer asks for v (a user's hour read it under the
        # verify's verdict).
        assert "✓ pull complete" in pull and "next: v to verify" not in pull, pull
        assert "last verification (from its record)" in verify, verify
        assert "✓ VERIFIED" in verify and "older pull" not in verify

    # A TUI opened later reads them from the records, without any job of its own.
    again = RgtApp(load_fleet(hosts), start_monitors=False, config_dir=tmp_path / "config")
    async with again.run_test(size=SIZE) as pilot:
        tab = await pulls_tab(again, pilot)
        pull, verify = await wait_for(
            lambda: "VERIFIED" in bodies(tab)[1] and bodies(tab), REACHES_S, pilot=pilot
        )
        assert "2 of 2 files" in pull and "✓ VERIFIED" in verify


async def test_a_pull_s_outcome_is_said_once_on_the_tab(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    """Once a pull ends, the tab shows its outcome alone: the progress's last phase, plan
    line and failure said the same things a second time (a returning user's trial)."""
    results_on_box(loopback_fleet.box("box1").root)
    app = RgtApp(load_fleet(loopback_fleet.hosts_file), config_dir=tmp_path / "config")
    async with app.run_test(size=SIZE) as pilot:
        tab = await pulls_tab(app, pilot)
        await pilot.press("p")
        await job_done(app, pilot, "box1", "pull_result")
        pull = await wait_for(
            lambda: "pull complete" in bodies(tab)[0] and bodies(tab)[0], pilot=pilot
        )
        assert app.jobs.state("box1").progress is not None  # kept, yet not shown again
        assert "pulling" not in pull and "to move" not in pull, pull  # moved, by now
        assert "next: v to verify" in pull  # not verified yet

        await loopback_fleet.box("box1").stop()  # the box goes away: the next pull fails
        await pilot.press("p")
        await job_done(app, pilot, "box1", "pull_error")
        pull = await wait_for(
            lambda: "pull failed" in bodies(tab)[0] and bodies(tab)[0], pilot=pilot
        )
        (message, _fix) = app.jobs.state("box1").pull_error
        assert pull.count(message.splitlines()[0][:40]) == 1, pull


async def test_this_tuis_verify_of_an_older_pull_says_so_after_a_new_pull(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    """A user's hour (s17a #10): p, v, then a file changed on the box and p again; the
    tab went on showing that verify's verdict as if it were the new pull's."""
    root = loopback_fleet.box("box1").root
    results_on_box(root)
    app = RgtApp(load_fleet(loopback_fleet.hosts_file), config_dir=tmp_path / "config")
    async with app.run_test(size=SIZE) as pilot:
        tab = await pulls_tab(app, pilot)
        await pilot.press("p")
        await job_done(app, pilot, "box1", "pull_result")
        await pilot.press("v")
        await job_done(app, pilot, "box1", "verify_report")
        verify = await wait_for(
            lambda: "VERIFIED" in bodies(tab)[1] and bodies(tab)[1], pilot=pilot
        )
        assert "older pull" not in verify, verify

        (root / "results" / "metrics.json").write_text('{"loss": 0.125, "acc": 0.95}')
        first = app.jobs.state("box1").pull_result
        await pilot.press("p")
        state = app.jobs.state
        await wait_for(
            lambda: state("box1").pull_result not in (None, first) and not state("box1").running,
            60,
            "the second pull",
            pilot=pilot,
        )
        verify = await wait_for(
            lambda: "older pull" in bodies(tab)[1] and bodies(tab)[1],
            10,
            "the last verify said to be of an older pull",
            pilot=pilot,
        )
        assert verify.index("older pull") < verify.index("VERIFIED"), verify


def test_a_verification_of_an_older_pull_is_not_shown_as_this_pulls_verdict() -> None:
    """h491 #8: a green "✓ VERIFIED" stood under this pull's "NOT COMPLETE", below a line
    saying it was an older pull's. Under that line, it is muted."""
    from rgt_tui.content.recorded_view import OLDER_PULL, recorded_verify_lines
    from rgt_tui.services.recorded_results import RecordedVerify

    verify = RecordedVerify(100.0, True, (("verified", 2),), (), 0, (), current=False)
    lines = recorded_verify_lines(verify, 160.0)
    assert lines[0].plain == OLDER_PULL
    verdict = next(line for line in lines if "VERIFIED" in line.plain)
    assert "$success" not in str(verdict.spans) and "bold" not in str(verdict.spans), verdict.spans
    current = recorded_verify_lines(replace(verify, current=True), 160.0)
    assert OLDER_PULL not in [c.plain for c in current]
    assert "$success" in str(next(c for c in current if "VERIFIED" in c.plain).spans)


def test_a_recorded_verification_names_each_missing_cell_once() -> None:
    """A user's hour: the recorded view listed 'missing cell box2_lr3e-4' and then
    'cell box2_lr3e-4 missing: …' for the same cells."""
    from rgt_tui.content.recorded_view import recorded_verify_lines
    from rgt_tui.services.recorded_results import RecordedVerify

    verify = RecordedVerify(
        at=100.0,
        ok=False,
        counts=(("verified", 2),),
        problems=("cell a missing: no output directory", "cell b missing: none loaded"),
        n_problems=2,
        missing=("a", "b", "c"),  # c: past the problems shown
        current=True,
    )
    text = "\n".join(line.plain for line in recorded_verify_lines(verify, 160.0))
    assert text.count("cell a") == 1 and text.count("cell b") == 1, text
    assert "missing cell c" in text, text


async def test_a_check_that_found_the_box_written_since_says_so_under_the_pull(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    """h471 #7: the gate's check found a file the box wrote after the pull, yet the Pulls
    tab kept "✓ pull complete" alone, read as the all clear. It says the box wrote since,
    naming the file, until the next pull."""
    root = loopback_fleet.box("box1").root
    results_on_box(root)
    app = RgtApp(
        load_fleet(loopback_fleet.hosts_file), start_monitors=False, config_dir=tmp_path / "c"
    )
    async with app.run_test(size=SIZE) as pilot:
        tab = await pulls_tab(app, pilot)
        await pilot.press("p")
        await job_done(app, pilot, "box1", "pull_result")
        app.jobs.request("box1", "gate")  # the box unchanged: nothing to say
        await wait_for(lambda: app.jobs.state("box1").gate_at is not None, pilot=pilot)
        await wait_for(lambda: not app.jobs.state("box1").running, pilot=pilot)
        assert "pull complete" in bodies(tab)[0] and "changed since" not in bodies(tab)[0]

        (root / "results" / "step_900.bin").write_bytes(b"w" * 4096)
        app.jobs.request("box1", "gate")
        pull = await wait_for(
            lambda: "changed since" in bodies(tab)[0] and bodies(tab)[0], pilot=pilot
        )
        assert "step_900.bin" in pull and "p pulls it as it is now" in pull, pull
        await wait_for(lambda: not app.jobs.state("box1").running, pilot=pilot)

        await pilot.press("v")  # a verify pulls nothing: the line stays (review h482 #9)
        await job_done(app, pilot, "box1", "verify_report")
        assert "step_900.bin" in bodies(tab)[0], bodies(tab)[0]

        await pilot.press("p")  # pulled again: the line goes
        await wait_for(
            lambda: "step_900.bin" not in bodies(tab)[0] and "pull complete" in bodies(tab)[0],
            pilot=pilot,
        )
