"""R's cell picker opens on the first cell that did not finish (a failed, killed or
interrupted one), not on a done cell above it, and the highlighted line is marked in its
text (``▶``), not by colour alone: a plain-text capture shows which cell Enter picks."""

from __future__ import annotations

from pathlib import Path

from support.pilot import SIZE, make_app, screen_text, wait_for
from textual.widgets import OptionList

from rgt_tui.domain.code_identity import CodeIdentity
from rgt_tui.domain.queue_state import DONE, FAILED, KILLED, RUNNING, CellView, QueueView
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.screens.queue_control import CellPickScreen


def marked(app: object) -> list[str]:
    """The screen's lines that wear the picker's marker."""
    return [line for line in screen_text(app).splitlines() if "▶ " in line]  # type: ignore[arg-type]


async def test_the_retry_picker_starts_on_the_failed_cell_and_marks_it_in_text(
    tmp_path: Path,
) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        host = app.fleet.hosts[0].name
        cells = (
            CellView(0, "base", DONE, exit_code=0, started_at=10, ended_at=20),
            CellView(1, "long", DONE, exit_code=0, started_at=20, ended_at=40),
            CellView(2, "flaky", FAILED, exit_code=1, started_at=40, ended_at=45),
            CellView(3, "slow1", KILLED, exit_code=143, started_at=45, ended_at=50),
        )
        app.runtime.queues.views[host] = QueueView(host, "finished", cells, None, "boot", 100, None)
        app.open_host(host, "queue")
        screen = await wait_for(
            lambda: app.screen if isinstance(app.screen, HostDetailScreen) else None, pilot=pilot
        )
        screen.action_queue_control("retry")
        picker = await wait_for(
            lambda: app.screen if isinstance(app.screen, CellPickScreen) else None, pilot=pilot
        )
        options = await wait_for(lambda: next(iter(picker.query(OptionList)), None), pilot=pilot)
        await wait_for(lambda: options.highlighted is not None, pilot=pilot)
        assert options.highlighted == 2  # flaky, the first that did not finish
        await wait_for(lambda: len(marked(app)) == 1, pilot=pilot)
        (line,) = marked(app)
        assert "flaky" in line and "failed (exit 1)" in line, line
        await pilot.press("down")  # the marker follows the highlight, on one line only
        await wait_for(lambda: any("slow1" in m for m in marked(app)), pilot=pilot)
        assert len(marked(app)) == 1, marked(app)
        await pilot.press("enter")
        await wait_for(lambda: not isinstance(app.screen, CellPickScreen), pilot=pilot)
        assert app.screen.cell.name == "slow1"  # type: ignore[attr-defined]
        await pilot.press("escape")


async def test_the_picker_stops_at_its_last_cell_and_names_the_running_one(
    tmp_path: Path,
) -> None:
    """Down on the last line went on to cell 0 (a done one), and the running cell was
    nowhere: the user hunted for it (hour s20b #15)."""
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        host = app.fleet.hosts[0].name
        cells = (
            CellView(0, "base", DONE, exit_code=0, started_at=10, ended_at=20),
            CellView(1, "slow_b", KILLED, exit_code=143, started_at=20, ended_at=40),
            CellView(2, "slow_d", RUNNING, started_at=40),
        )
        app.runtime.queues.views[host] = QueueView(host, "running", cells, None, "boot", 100, None)
        app.open_host(host, "queue")
        screen = await wait_for(
            lambda: app.screen if isinstance(app.screen, HostDetailScreen) else None, pilot=pilot
        )
        screen.action_queue_control("retry")
        picker = await wait_for(
            lambda: app.screen if isinstance(app.screen, CellPickScreen) else None, pilot=pilot
        )
        options = await wait_for(lambda: next(iter(picker.query(OptionList)), None), pilot=pilot)
        await wait_for(lambda: options.highlighted == 1, pilot=pilot)
        # Drawn after the list is mounted: on a loaded machine the screen read empty here.
        running = "Running, so not listed: cell 2 (slow_d) — to retry it, kill it first (X)."
        await wait_for(lambda: running in screen_text(app), pilot=pilot)
        await pilot.press("down")  # the last line: it stays there
        await pilot.press("up", "up")  # the first: it stays there too
        await pilot.press("down", "down")
        await wait_for(lambda: any("slow_b" in m for m in marked(app)), pilot=pilot)
        assert options.highlighted == 1
        await pilot.press("escape")


async def test_a_cell_waiting_for_its_retry_is_offered_first(tmp_path: Path) -> None:
    """A queue stopped while a retry waited: the tab named the waiting cell, and R listed
    only the done one, marked, so Enter led to "retry a done cell" (hour s21b #3)."""
    from rgt_tui.domain.queue_state import RETRY

    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        host = app.fleet.hosts[0].name
        cells = (
            CellView(0, "box3_a", RETRY, exit_code=143, started_at=10, ended_at=20),
            CellView(1, "box3_b", DONE, exit_code=0, started_at=20, ended_at=40),
        )
        app.runtime.queues.views[host] = QueueView(host, "stopped", cells, None, "boot", 100, None)
        app.open_host(host, "queue")
        screen = await wait_for(
            lambda: app.screen if isinstance(app.screen, HostDetailScreen) else None, pilot=pilot
        )
        screen.action_queue_control("retry")
        picker = await wait_for(
            lambda: app.screen if isinstance(app.screen, CellPickScreen) else None, pilot=pilot
        )
        options = await wait_for(lambda: next(iter(picker.query(OptionList)), None), pilot=pilot)
        await wait_for(lambda: options.option_count == 2 and options.highlighted == 0, pilot=pilot)
        await wait_for(lambda: any("box3_a" in m for m in marked(app)), pilot=pilot)
        await pilot.press("escape")


async def test_a_cell_with_its_code_fits_one_row_of_the_picker(tmp_path: Path) -> None:
    """At 160 columns each cell is one row, its code named in full: the picker's box
    was 90 wide and a cell that had run wrapped onto a second row (a user's hour)."""
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        host = app.fleet.hosts[0].name
        code = CodeIdentity("1a2b3c4d5e6f" + "0" * 52, "89abcdef", dirty=True)
        cells = (
            CellView(0, "baseline_lr3e-4", DONE, 0, 10, 20, attempts=1, code=code),
            CellView(1, "no_aug_lr1e-3", FAILED, 1, 20, 45, attempts=1, code=code),
        )
        app.runtime.queues.views[host] = QueueView(host, "finished", cells, None, "boot", 100, None)
        app.open_host(host, "queue")
        screen = await wait_for(
            lambda: app.screen if isinstance(app.screen, HostDetailScreen) else None, pilot=pilot
        )
        screen.action_queue_control("retry")
        await wait_for(lambda: len(marked(app)) == 1, pilot=pilot)
        rows = [line for line in screen_text(app).splitlines() if "code 1a2b3c4d5e6f" in line]
        assert len(rows) == 2, screen_text(app)
        assert all("git 89abcde (uncommitted changes)" in row for row in rows), rows
        await pilot.press("escape")


async def test_the_picker_opens_on_a_box_that_names_two_cells_alike(tmp_path: Path) -> None:
    """A review (s38): a box's records held 'dup' twice (launch and append refuse that, a
    hand edit on the box does not); R's picker gave both lines one id and Textual's
    OptionList ended the app with DuplicateID. Both are listed; Enter picks by line."""
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        host = app.fleet.hosts[0].name
        cells = (
            CellView(0, "dup", FAILED, exit_code=1, started_at=10, ended_at=20),
            CellView(1, "dup", FAILED, exit_code=2, started_at=20, ended_at=40),
        )
        app.runtime.queues.views[host] = QueueView(host, "finished", cells, None, "boot", 100, None)
        app.open_host(host, "queue")
        screen = await wait_for(
            lambda: app.screen if isinstance(app.screen, HostDetailScreen) else None, pilot=pilot
        )
        screen.action_queue_control("retry")
        picker = await wait_for(
            lambda: app.screen if isinstance(app.screen, CellPickScreen) else None, pilot=pilot
        )
        options = await wait_for(lambda: next(iter(picker.query(OptionList)), None), pilot=pilot)
        assert options.option_count == 2
        await pilot.press("down", "enter")
        await wait_for(lambda: not isinstance(app.screen, CellPickScreen), pilot=pilot)
        assert app.is_running and app.screen.cell.name == "dup"  # type: ignore[attr-defined]
        await pilot.press("escape")
