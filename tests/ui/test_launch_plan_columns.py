"""The launch plan's table uses the dialog's width: its rows read "0  box3  reco  3 (the
new" at 120 and 200 columns, each column as wide as its header, while the dialog beside
them was empty (a DataTable cannot measure a Content cell). Names are whole where they
fit, and a cell is cut with an ellipsis only when the row cannot fit; at 80x24 too."""

from __future__ import annotations

from pathlib import Path

from support.pilot import make_app, screen_text, wait_for
from textual.widgets import DataTable

from rgt_tui.screens.launch_confirm import LaunchConfirmScreen
from rgt_tui.widgets.plan_table import fit_widths

DEFAULT_EPOCHS = "(the host's default: the line gives none)"


async def _shown(pilot, app, settled: str) -> tuple[LaunchConfirmScreen, list[str]]:  # type: ignore[no-untyped-def]
    """The launch dialog's plan once ``settled`` is on the screen (the table is laid out
    again as scrollbars come and go: its first drawing may be for another width)."""
    await pilot.press("L")
    modal = await wait_for(
        lambda: isinstance(m := app.screen, LaunchConfirmScreen) and m.plan is not None and m,
        what="the launch plan",
        pilot=pilot,
    )
    await wait_for(lambda: settled in screen_text(app), what=repr(settled), pilot=pilot)
    return modal, screen_text(app).splitlines()


async def test_the_plans_rows_show_whole_names_at_120_columns(
    make_queue_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(1, workload=True)
    app = make_app(tmp_path, fleet=qf.fleet)
    async with app.run_test(size=(120, 40)) as pilot:
        _, lines = await _shown(pilot, app, "box1_lr1e-3  reconstruction")
        row = next((line for line in lines if "box1_lr1e-3" in line), None)
        assert row is not None, "\n".join(lines)
        for whole in ("box1_lr1e-3", "reconstruction", f"20 {DEFAULT_EPOCHS}", "new"):
            assert whole in row, row
        assert "…" not in row, row


async def test_at_80_columns_the_rows_fit_and_only_a_long_cell_is_cut(
    make_queue_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(1, workload=True)
    app = make_app(tmp_path, fleet=qf.fleet)
    async with app.run_test(size=(80, 24)) as pilot:
        modal, lines = await _shown(pilot, app, "box1_lr1e-3  reconstruction  20 (the host")
        table = modal.query_one(DataTable)
        # The whole row in view, once the layout settles (a scrollbar coming or going
        # lays the table out again).
        await wait_for(lambda: not table.show_horizontal_scrollbar, 10, pilot=pilot)
        lines = screen_text(app).splitlines()
        rows = {
            name: next(line for line in lines if name in line)
            for name in ("_lr3e-4", "_lr1e-3", "_wide")
        }
        assert "box1_lr1e-3  reconstruction  20 (the host's default" in rows["_lr1e-3"]
        assert "…" in rows["_lr1e-3"] and DEFAULT_EPOCHS not in rows["_lr1e-3"]  # cut, said
        assert "box1_lr3e-4  reconstruction  3 (the line)" in rows["_lr3e-4"]
        assert all("  new " in row for row in rows.values()), rows  # the status, whole


def test_the_names_stay_whole_while_the_other_columns_can_make_room() -> None:
    least = [1, 4, 4, 6, 6]
    # Room for all: as they are.
    assert fit_widths([1, 11, 14, 41, 3], 80, least) == [1, 11, 14, 41, 3]
    # Short of room: the widest of task/epochs/status narrows first; the name stays whole.
    assert fit_widths([1, 11, 14, 41, 6], 60, least) == [1, 11, 14, 28, 6]
    assert fit_widths([1, 30, 14, 41, 6], 50, least) == [1, 30, 6, 7, 6]
    # A name too long to be whole anyway: all narrow alike (the widest first), and a
    # task or epochs that is short stays whole.
    assert fit_widths([2, 99, 14, 12, 6], 92, least) == [2, 58, 14, 12, 6]
    assert fit_widths([1, 30, 14, 41, 6], 45, least) == [1, 13, 12, 13, 6]
    # Every one at its least: that is the most they give.
    assert fit_widths([1, 30, 14, 41, 6], 10, least) == [1, 4, 4, 6, 6]
    # A hostile box's huge name costs no more than the room.
    assert fit_widths([1, 10_000_000, 4, 6, 6], 70, least) == [1, 53, 4, 6, 6]
