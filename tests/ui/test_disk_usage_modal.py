"""The usage key: the disk audit in a modal over a loopback box on a tmpfs, and a delete
confirmed by typing the model's short name."""

from __future__ import annotations

from pathlib import Path

from support.disk_box import audit_text, disk_app
from support.disk_box import tmpfs as tmpfs  # noqa: F401  (the fixture)
from support.pilot import SIZE, text_of, wait_for
from textual.widgets import Static

from rgt_tui.screens.disk_usage import DiskUsageScreen


async def test_u_shows_the_audit_and_a_typed_short_name_deletes_the_model(
    make_loopback_fleet, tmp_path: Path, tmpfs: Path
) -> None:  # type: ignore[no-untyped-def]
    fleet = await make_loopback_fleet(1)
    app, paths = disk_app(fleet, tmp_path, tmpfs)
    async with app.run_test(size=SIZE) as pilot:
        app.open_host("box1")
        await pilot.pause()
        await pilot.press("u")

        def body() -> str:
            return audit_text(app)

        shown = await wait_for(lambda: "org/a" in body() and body(), what="the audit", pilot=pilot)
        assert str(paths["hog"]) in shown and "inodes" in shown
        # The host screen's keys behind the dialog, not the command line's words (hours).
        assert "nothing pulled yet — press Esc, then p (pull) and v (verify)" in shown, shown
        # The audit takes the box's height above the status, input and key line: capped
        # at DialogBody's 45vh, it left the lower half of the box blank (a user's hour).
        box, scroll = app.screen.query_one("#disk-box"), app.screen.query_one("#disk-scroll")
        assert scroll.region.height >= box.region.height - 10, (scroll.region, box.region)
        # A typo runs nothing; the short name shown is the confirmation.
        await pilot.press(*"org/b", "enter")
        status = app.screen.query_one("#disk-status", Static)
        assert "not listed" in text_of(status)
        await pilot.press("ctrl+a", "ctrl+k")  # clear the input
        await pilot.press(*"org/a", "enter")
        await wait_for(lambda: not paths["model"].exists(), what="the model deleted", pilot=pilot)
        await wait_for(lambda: "deleted" in text_of(status), what="the status", pilot=pilot)
        assert paths["big"].exists()
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, DiskUsageScreen), pilot=pilot)


async def test_u_on_the_fleet_grid_opens_the_selected_hosts_audit(
    make_loopback_fleet, tmp_path: Path, tmpfs: Path
) -> None:  # type: ignore[no-untyped-def]
    """`u` on the grid did nothing, and a path typed next went into the name filter
    (hour s20c #13): it opens the selected host's audit, as in its detail."""
    fleet = await make_loopback_fleet(1)
    app, _ = disk_app(fleet, tmp_path, tmpfs)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("u")
        await wait_for(
            lambda: isinstance(app.screen, DiskUsageScreen) and "org/a" in audit_text(app),
            what="the selected host's audit over the grid",
            pilot=pilot,
        )
        assert app.screen.host.name == "box1"


async def test_escape_while_a_delete_runs_waits_for_it(
    make_loopback_fleet, tmp_path: Path, tmpfs: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """The delete runs as the dialog's worker: Escape while it ran closed the dialog and
    cut the delete short (the move dialog's twin, hour s21a #13)."""
    import asyncio

    from rgt_tui.controllers.disk import DiskControl

    release, real = asyncio.Event(), DiskControl.delete

    async def held(self, audit, typed):  # type: ignore[no-untyped-def]
        await release.wait()
        return await real(self, audit, typed)

    monkeypatch.setattr(DiskControl, "delete", held)  # held still, then the real delete
    fleet = await make_loopback_fleet(1)
    app, paths = disk_app(fleet, tmp_path, tmpfs)
    async with app.run_test(size=SIZE) as pilot:
        app.open_host("box1")
        await pilot.pause()
        await pilot.press("u")
        await wait_for(lambda: "org/a" in audit_text(app), what="the audit", pilot=pilot)
        screen = app.screen
        await pilot.press(*"org/a", "enter")
        await pilot.press("escape")
        status = screen.query_one("#disk-status", Static)
        await wait_for(lambda: "cannot be cut short" in text_of(status), pilot=pilot)
        assert app.screen is screen
        # A second delete asked meanwhile starts nothing: it cancelled the first (s21b #2).
        await pilot.press(*"org/a", "enter")
        await wait_for(lambda: "a delete runs" in text_of(status), pilot=pilot)
        release.set()
        await wait_for(lambda: not paths["model"].exists(), what="the model deleted", pilot=pilot)
        await wait_for(lambda: "deleted" in text_of(status), what="the status", pilot=pilot)
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, DiskUsageScreen), pilot=pilot)


async def test_enter_before_the_audit_arrives_is_said_and_deletes_nothing(
    make_loopback_fleet, tmp_path: Path, tmpfs: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """s38 disk hour #8: a path typed and Enter pressed before the audit came was dropped
    without a word, the path left typed, a delete one Enter away. The status says so.
    The box's `du` is held here (the boxes run with the test's PATH) until the test lets
    it go, as a slow disk would."""
    from support.machine import stalled_tool

    stall = stalled_tool("du", tmp_path, monkeypatch)
    fleet = await make_loopback_fleet(1)
    app, paths = disk_app(fleet, tmp_path, tmpfs)
    stall.touch()
    async with app.run_test(size=SIZE) as pilot:
        app.open_host("box1")
        await pilot.pause()
        await pilot.press("u")
        screen = await wait_for(
            lambda: app.screen if isinstance(app.screen, DiskUsageScreen) else None, pilot=pilot
        )
        await pilot.press(*"org/a", "enter")
        status = screen.query_one("#disk-status", Static)
        await wait_for(lambda: "still being read" in text_of(status), pilot=pilot)
        assert screen.audit is None and paths["model"].exists()
        stall.unlink()
        await wait_for(lambda: "org/a" in audit_text(app), what="the audit", pilot=pilot)
        await pilot.press("enter")  # the path is still typed: now it is checked and deleted
        await wait_for(lambda: not paths["model"].exists(), what="the model deleted", pilot=pilot)


async def test_an_audit_that_failed_leaves_no_auditing_and_no_delete_on_enter(
    make_loopback_fleet, tmp_path: Path, tmpfs: Path
) -> None:  # type: ignore[no-untyped-def]
    """h471 #3: with the box gone, the body and the input still read "auditing…" under
    the error, the key line still offered "Enter: delete what is typed", and Enter did
    nothing without a word. A real loopback box, stopped."""
    from textual.widgets import Input

    fleet = await make_loopback_fleet(1)
    app, _ = disk_app(fleet, tmp_path, tmpfs)
    async with app.run_test(size=SIZE) as pilot:
        await fleet.box("box1").stop()
        app.open_host("box1")
        await pilot.pause()
        await pilot.press("u")
        screen = await wait_for(
            lambda: app.screen if isinstance(app.screen, DiskUsageScreen) else None, pilot=pilot
        )
        status = screen.query_one("#disk-status", Static)
        await wait_for(lambda: not screen.auditing and text_of(status), 60, pilot=pilot)
        body = text_of(screen.query_one("#disk-body", Static))
        assert "auditing" not in body and "was not read" in body, body
        typed = screen.query_one("#disk-input", Input)
        assert "auditing" not in typed.placeholder and "u tries again" in typed.placeholder
        hint = text_of(screen.query_one("#disk-hint"))
        assert "delete what is typed" not in hint and "was not read" in hint, hint
        await pilot.press(*"results", "enter")
        await wait_for(lambda: "nothing is deleted" in text_of(status), pilot=pilot)


async def test_a_failed_audits_reason_is_right_under_its_line_not_at_the_boxs_foot(
    make_loopback_fleet, tmp_path: Path, tmpfs: Path
) -> None:  # type: ignore[no-untyped-def]
    """A keyboard audit: on a box that does not answer, "the box's disk was not read
    (below: why)" stood at the top of a box 90% of the screen high, then ~40 blank rows,
    then the reason at the foot. The box is as tall as what it says. A real loopback
    box, stopped."""
    fleet = await make_loopback_fleet(1)
    app, _ = disk_app(fleet, tmp_path, tmpfs)
    async with app.run_test(size=SIZE) as pilot:
        await fleet.box("box1").stop()
        await pilot.press("u")
        screen = await wait_for(
            lambda: app.screen if isinstance(app.screen, DiskUsageScreen) else None, pilot=pilot
        )
        status = screen.query_one("#disk-status", Static)
        await wait_for(lambda: not screen.auditing and text_of(status), 60, pilot=pilot)
        await pilot.pause()
        body = screen.query_one("#disk-body", Static)
        assert "was not read" in text_of(body)
        # The reason on the row below its line (the body's one row; nothing between).
        assert body.region.height and status.region.y - body.region.y <= 2, (
            body.region,
            status.region,
        )
        box = screen.query_one("#disk-box")
        assert box.region.height < SIZE[1] // 2, box.region


async def test_while_auditing_the_key_line_offers_no_delete(
    make_loopback_fleet, tmp_path: Path, tmpfs: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """A keyboard audit: while "auditing…" the key line already said "Enter: delete what
    is typed", and Enter then deletes nothing (it says the disk is still being read).
    It offers the delete once the audit has come. `du` held as a slow disk would."""
    from support.machine import stalled_tool

    stall = stalled_tool("du", tmp_path, monkeypatch)
    fleet = await make_loopback_fleet(1)
    app, _ = disk_app(fleet, tmp_path, tmpfs)
    stall.touch()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("u")
        screen = await wait_for(
            lambda: app.screen if isinstance(app.screen, DiskUsageScreen) else None, pilot=pilot
        )
        hint = screen.query_one("#disk-hint", Static)
        await wait_for(lambda: "Esc: close" in text_of(hint), pilot=pilot)
        assert screen.auditing and "delete" not in text_of(hint), text_of(hint)
        assert "being read" in text_of(hint), text_of(hint)
        stall.unlink()
        await wait_for(lambda: "org/a" in audit_text(app), what="the audit", pilot=pilot)
        await wait_for(lambda: text_of(hint).startswith("Enter: delete what is typed"), pilot=pilot)
