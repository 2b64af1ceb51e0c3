"""The key map of issue 30: hjkl move as in vim (l is right, not launch), L launches, s
asks for a shell; every new key is in the help screen, the palette and the footer."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from support.pilot import (
    make_app,
    palette_titles,
    screen_text,
    shown_notifications,
    wait_for,
)
from support.replay import ReplayMonitor
from support.samples import three_updates

from rgt_tui.screens.help import HelpBody, HelpScreen
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.screens.launch_confirm import LaunchConfirmScreen
from rgt_tui.widgets.key_footer import KeyFooter

pytestmark = pytest.mark.usefixtures("utc")


def _footer(app) -> str:  # type: ignore[no-untyped-def]
    """The footer's row, as shown."""
    return screen_text(app).splitlines()[app.screen.query_one(KeyFooter).region.y]


async def test_hjkl_move_the_selection_on_the_grid_as_the_arrows_do(tmp_path: Path) -> None:
    monitors = {u.host: ReplayMonitor(updates=[u]) for u in three_updates()}
    app = make_app(tmp_path, monitors)
    async with app.run_test(size=(200, 40)) as pilot:  # three panes side by side
        await wait_for(lambda: len(app.latest) == 3, pilot=pilot)
        grid = app.fleet_screen
        first = grid.selected.host.name
        await pilot.press("l")
        await pilot.pause()
        assert grid.selected.host.name != first
        assert not isinstance(app.screen, LaunchConfirmScreen)  # l no longer launches
        second = grid.selected.host.name
        await pilot.press("right", "h")
        await pilot.pause()
        assert grid.selected.host.name == second
        await pilot.press("h")
        await pilot.pause()
        assert grid.selected.host.name == first


async def test_h_and_l_step_through_the_detail_tabs_and_j_k_scroll(tmp_path: Path) -> None:
    monitors = {u.host: ReplayMonitor(updates=[u]) for u in three_updates()}
    app = make_app(tmp_path, monitors)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(lambda: len(app.latest) == 3, pilot=pilot)
        await pilot.press("enter")
        screen = await wait_for(
            lambda: app.screen if isinstance(app.screen, HostDetailScreen) else None,
            pilot=pilot,
        )
        tabs = [cls.TAB_ID for cls in screen.tab_classes]
        await wait_for(lambda: screen.active_tab == tabs[0], pilot=pilot)
        await pilot.press("l")
        await wait_for(lambda: screen.active_tab == tabs[1], pilot=pilot)
        await pilot.press("h", "h")
        await wait_for(lambda: screen.active_tab == tabs[-1], pilot=pilot)  # wraps
        await pilot.press("l")
        await wait_for(lambda: screen.active_tab == tabs[0], pilot=pilot)
        tab = screen.tabs[tabs[0]]
        if tab.max_scroll_y:  # the overview is taller than 30 rows: j scrolls it
            await pilot.press("j")
            await wait_for(lambda: tab.scroll_y > 0, pilot=pilot)
            await pilot.press("k")
            await wait_for(lambda: tab.scroll_y == 0, pilot=pilot)


async def test_capital_l_opens_the_launch_plan_and_small_l_does_not(
    make_queue_fleet, tmp_path: Path
) -> None:
    qf = await make_queue_fleet(1, workload=True)
    app = make_app(tmp_path, fleet=qf.fleet, start_monitors=True, clock=time.time)
    async with app.run_test(size=(120, 34)) as pilot:
        await pilot.press("l")
        await pilot.pause()
        assert not isinstance(app.screen, LaunchConfirmScreen)
        await pilot.press("L")
        screen = await wait_for(
            lambda: app.screen if isinstance(app.screen, LaunchConfirmScreen) else None,
            what="the launch plan",
            pilot=pilot,
        )
        assert screen.host.name == "box1"
        await pilot.press("escape")


async def test_s_without_a_terminal_says_to_use_the_command_line(
    tmp_path: Path, home: Path
) -> None:
    # run_test's driver cannot suspend: the key explains instead of failing. The real
    # suspend is tests/e2e/test_shell_tmux.py's.
    monitors = {u.host: ReplayMonitor(updates=[u]) for u in three_updates()}
    app = make_app(tmp_path, monitors)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(lambda: len(app.latest) == 3, pilot=pilot)
        host = app.fleet_screen.selected.host.name
        await pilot.press("s")
        await wait_for(
            lambda: (
                any(f"rgt-tui shell {host}" in str(n.message) for n in shown_notifications(app))
                or any("no shell over your ssh" in str(n.message) for n in shown_notifications(app))
            ),
            what="the shell key's answer",
            pilot=pilot,
        )


async def test_the_new_keys_are_in_the_help_the_palette_and_the_80x24_footer(
    tmp_path: Path,
) -> None:
    monitors = {u.host: ReplayMonitor(updates=[u]) for u in three_updates()}
    app = make_app(tmp_path, monitors)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(lambda: len(app.latest) == 3, pilot=pilot)
        titles = await palette_titles(app)
        assert {f"Shell: {u.host}" for u in three_updates()} <= set(titles)
        await pilot.press("question_mark")
        await wait_for(lambda: isinstance(app.screen, HelpScreen), pilot=pilot)
        body = app.screen.query_one("#help-body", HelpBody)
        rows = [line.strip() for line in body.build(200).plain.splitlines()]
        fleet = rows[rows.index("Fleet") : rows.index("Host detail")]
        detail = rows[rows.index("Host detail") :]
        for section in (fleet, detail):
            assert any(r.startswith("s ") and "A shell on the box" in r for r in section)
            assert any(r.startswith("L ") and "Launch the host's queue" in r for r in section)
        assert any(r.startswith("→ l ") and "to the right" in r for r in fleet), fleet
        assert any(r.startswith("l ") and "tab to the right" in r for r in detail), detail
        # The footer ranks L (the launch key moved: shown where it fits) then s.
        await pilot.press("escape")
        await wait_for(lambda: " L Launch " in _footer(app), pilot=pilot)
    wider = make_app(tmp_path, {u.host: ReplayMonitor(updates=[u]) for u in three_updates()})
    async with wider.run_test(size=(120, 30)) as pilot:
        await wait_for(lambda: " s Shell " in _footer(wider), pilot=pilot)


async def test_a_dialog_opened_over_the_shell_screen_leaves_no_screen_that_drops_keys(
    tmp_path: Path, home: Path
) -> None:
    """Hour s45a #1: `qus` typed in one burst opened the shell's key-dropping screen at
    once and the dialogs of the keys before it a moment later, over it; once the shell
    ended, closing them uncovered "opening a shell on box1…", which dropped every key,
    Esc included. Here the disk usage dialog's request is queued before `s`, as then."""
    from rgt_tui.screens.disk_usage import DiskUsageRequested
    from rgt_tui.screens.shell_keys import ShellOpening, request_shell

    monitors = {u.host: ReplayMonitor(updates=[u]) for u in three_updates()}
    app = make_app(tmp_path, monitors)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(lambda: len(app.latest) == 3, pilot=pilot)
        host = app.fleet_screen.selected.host.name
        app.post_message(DiskUsageRequested(host))  # `u`: its dialog comes a moment later
        request_shell(app.screen, host)  # `s`: its screen at once
        await wait_for(
            lambda: (
                any(f"rgt-tui shell {host}" in str(n.message) for n in shown_notifications(app))
                or any("no shell over your ssh" in str(n.message) for n in shown_notifications(app))
            ),
            what="the shell's end",
            pilot=pilot,
        )
        covered = [type(s).__name__ for s in app.screen_stack]
        assert covered[-2:] == ["ShellOpening", "DiskUsageScreen"], covered
        await pilot.press("escape")  # the usage dialog closes: nothing drops keys now
        await wait_for(
            lambda: not any(isinstance(s, ShellOpening) for s in app.screen_stack),
            what="the shell's screen gone",
            pilot=pilot,
        )
        assert app.screen is app.fleet_screen


async def test_keys_typed_right_after_q_wait_for_the_quit_question(
    tmp_path: Path, home: Path
) -> None:
    """Hour s45c #1: `qus` in one burst opened the disk usage dialog and the shell (on a
    box that bills) before the quit question came, which was then left under them. Keys
    typed after q, before its question is up, do nothing."""
    from textual import events

    from rgt_tui.screens.quit_confirm import QuitConfirmScreen

    monitors = {u.host: ReplayMonitor(updates=[u]) for u in three_updates()}
    app = make_app(tmp_path, monitors, quit_removes="the demo's boxes")
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(lambda: len(app.latest) == 3, pilot=pilot)
        for key in "qus":  # queued together, as a burst from the terminal arrives
            app.post_message(events.Key(key, key))
        await wait_for(lambda: isinstance(app.screen, QuitConfirmScreen), pilot=pilot)
        await pilot.pause()
        names = [type(s).__name__ for s in app.screen_stack]
        assert names == ["FleetScreen", "QuitConfirmScreen"], names
        await pilot.press("escape")  # stay: every key works again
        await pilot.pause()
        await pilot.press("question_mark")
        await wait_for(lambda: isinstance(app.screen, HelpScreen), pilot=pilot)
