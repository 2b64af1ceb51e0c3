"""The usage modal invites only what it will delete (issue 43.10d): a listed folder outside
the pull folders is marked NOT OFFERED with why, the last line names the offered entries,
and typing a listed but not offered path runs nothing (it used to be checked on the box
and refused). A loopback box on a tmpfs (support/disk_box)."""

from __future__ import annotations

from pathlib import Path

from support.disk_box import audit_text, disk_app
from support.disk_box import tmpfs as tmpfs  # noqa: F401  (the fixture)
from support.pilot import SIZE, text_of, wait_for
from textual.widgets import Input, Static

from rgt_tui.screens.disk_usage import DiskUsageScreen


async def test_only_offered_entries_are_invited_and_a_not_offered_one_runs_nothing(
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
        lines = shown.splitlines()
        hog = next(line for line in lines if str(paths["hog"]) in line and "inodes" in line)
        assert "NOT OFFERED: outside the pull folders" in hog, shown
        model = next(line for line in lines if "org/a" in line)
        assert "NOT OFFERED" not in model, shown
        offer = lines[-1]
        assert offer.startswith("offered for deletion"), shown
        assert "org/a" in offer and str(paths["hog"]) not in offer, offer
        box = app.screen.query_one("#disk-input", Input)
        assert "offered" in box.placeholder and app.focused is box
        hint = app.screen.query_one("#disk-hint")
        assert "Enter: delete what is typed" in text_of(hint), text_of(hint)

        # Listed, not offered: refused here with why, nothing sent to the box.
        await pilot.press(*str(paths["hog"]), "enter")
        status = text_of(app.screen.query_one("#disk-status", Static))
        assert "is not offered: outside the pull folders" in status, status
        assert "checking" not in status and paths["hog"].exists()
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, DiskUsageScreen), pilot=pilot)


async def test_a_folders_last_name_is_answered_with_the_full_path_to_type(
    make_loopback_fleet, tmp_path: Path, tmpfs: Path
) -> None:  # type: ignore[no-untyped-def]
    """A folder is listed by its full path and has no shorter name: typing its last name
    (``cellA``) is answered with that path, and no words offer a "short name" the screen
    does not show (they offered one, and only the full path worked)."""
    fleet = await make_loopback_fleet(1)
    app, paths = disk_app(fleet, tmp_path, tmpfs)
    async with app.run_test(size=SIZE) as pilot:
        app.open_host("box1")
        await pilot.pause()
        await pilot.press("u")
        cell = str(paths["cell"])
        shown = await wait_for(
            lambda: cell in audit_text(app) and audit_text(app), what="the audit", pilot=pilot
        )
        assert "short name" not in shown, shown
        assert shown.splitlines()[-1].startswith(
            "offered for deletion (type one as it is named here;"
        ), shown
        box = app.screen.query_one("#disk-input", Input)
        assert "short name" not in box.placeholder and "full path" in box.placeholder

        status = app.screen.query_one("#disk-status", Static)
        await pilot.press(*"cellA", "enter")
        said = text_of(status)
        assert f"cellA is not listed above: a folder is typed by its full path, {cell}" in said
        assert "checking" not in said and paths["cell"].exists()
        await pilot.press("ctrl+a", "ctrl+k")  # clear the input
        await pilot.press(*"org/b", "enter")  # no such entry, no such folder
        said = text_of(status)
        assert "is not listed above: type one of the entries the last line offers" in said
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, DiskUsageScreen), pilot=pilot)


async def test_with_nothing_offered_enter_is_not_said_to_delete(
    make_loopback_fleet, tmp_path: Path, tmpfs: Path
) -> None:  # type: ignore[no-untyped-def]
    """Hour s24b #13: every row NOT OFFERED (a cell running over them all), and the key
    line still read "Enter: delete what is typed"."""
    from dataclasses import replace

    from textual.content import Content

    fleet = await make_loopback_fleet(1)
    app, _ = disk_app(fleet, tmp_path, tmpfs)
    async with app.run_test(size=SIZE) as pilot:
        app.open_host("box1")
        await pilot.pause()
        await pilot.press("u")
        await wait_for(lambda: "org/a" in audit_text(app), what="the audit", pilot=pilot)
        screen = app.screen
        assert isinstance(screen, DiskUsageScreen) and screen.audit is not None
        every = tuple((f"c{k}", "is running", e.path) for k, e in enumerate(screen.audit.entries()))
        held = replace(screen.audit, running=every)  # a cell runs in each entry
        screen.post_message(DiskUsageScreen.Audited(held, Content("")))
        hint = screen.query_one("#disk-hint")
        await wait_for(lambda: "no entry is offered" in text_of(hint), pilot=pilot)
        assert "delete what is typed" not in text_of(hint)
