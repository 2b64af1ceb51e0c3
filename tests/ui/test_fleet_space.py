"""The screen uses the space it has (issue 27): panes fill a big terminal and give their
spare rows to history; notices take one header line, over no pane; log lines wrap at
80×24; a pane's cached rows are the rows Textual's own rendering gives."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from support.pilot import make_app, post_three, screen_text, shown_notifications, wait_for
from support.samples import HOSTS, agent_sample, gpu, healthy_update, make_update, many_hosts_fleet
from textual.visual import Visual
from textual.widgets import RichLog

from rgt_tui.domain.history import HostHistory
from rgt_tui.messages import HostUpdated
from rgt_tui.screens.fleet import BATCH_FROM
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.screens.tabs.logs import LogsTab
from rgt_tui.widgets.pane_grid import rows_fill
from rgt_tui.widgets.spark import spark_block, spark_rows


def test_rows_fill_only_when_every_row_fits() -> None:
    assert rows_fill(3, 3, 16, 45)  # one row of three
    assert rows_fill(12, 4, 16, 57)  # three rows of four at 200×60
    assert not rows_fill(12, 2, 16, 37)  # six rows at 120×40: scroll
    assert not rows_fill(1, 1, 0, 40)  # not drawn yet: nothing known


def test_a_sparkline_draws_a_run_of_one_style_as_one_span() -> None:
    (row,) = spark_rows([0.2] * 30 + [0.95] * 10, 40)
    assert len(row.spans) == 2 and row.cell_length == 40
    (row,) = spark_rows([0.2, 0.95, 0.5], 10, style="$primary")
    assert len(row.spans) == 1


def test_a_tall_chart_of_a_low_value_shows_its_name_above_blank_rows() -> None:
    """Memory at 5 % over 8 rows is 7 rows of blanks: its name on the top row says whose
    they are, and nothing in a chart's gutter reads as a value of the chart above it (an
    idle GPU's name with "100%" under it read "gpu 100%", a user's hour s42)."""
    history = HostHistory()
    for t in range(30):
        history.memory.append(0.05)
        history.gpu_util.append(0.0)
        history.times.append(float(t))
    lines = [line.plain for line in spark_block(history, 40, 8)]
    assert len(lines) == 8
    gutters = [line[:4] for line in lines]
    assert gutters == ["gpu ", *["    "] * 3, "mem ", *["    "] * 3], gutters
    assert all(line[4:].strip() == "" for line in lines[4:-1])  # memory's chart: blanks
    assert lines[-1][4:].strip()  # its values on the bottom row
    assert not any("%" in line for line in lines)


async def test_few_panes_fill_a_big_terminal_with_history(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await post_three(pilot)
        await pilot.pause()
        lines = screen_text(app).splitlines()
        # The panes' bottom borders sit right above the footer: no blank two thirds.
        assert lines[-2].lstrip().startswith(("╚", "╰")), lines[-2]
        pane = app.fleet_screen.panes["a100-train"]
        assert pane.region.bottom == 48 - 1  # down to the footer
        assert pane.natural_height < pane.outer_size.height
        text = screen_text(app)
        assert "gpu " in text and "mem " in text  # charts, each on its own rows now
        # Smaller again: the rows no longer fit, so the grid scrolls and panes shrink.
        await pilot.resize_terminal(160, 14)
        await wait_for(lambda: not app.fleet_screen._grid.filling, pilot=pilot)
        await wait_for(lambda: pane.outer_size.height == pane.natural_height, pilot=pilot)


async def test_many_panes_stay_compact_and_scroll(tmp_path: Path) -> None:
    app = make_app(tmp_path, fleet=many_hosts_fleet(tmp_path, 12))
    async with app.run_test(size=(120, 40)) as pilot:
        for i in range(12):
            name = f"box{i}"
            app.post_message(HostUpdated(make_update(name, agent_sample(name))))
        await wait_for(lambda: len(app.latest) == 12, pilot=pilot)
        await pilot.pause()
        grid = app.fleet_screen._grid
        assert grid.columns == 2 and not grid.filling and grid.max_scroll_y > 0
        pane = app.fleet_screen.panes["box0"]
        assert pane.outer_size.height == pane.natural_height


async def test_danger_clocks_take_one_header_line_and_cover_no_pane(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        for update in (healthy_update(),):
            app.post_message(HostUpdated(update))
        await wait_for(lambda: app.fleet_screen.notices.shown(), pilot=pilot)
        await pilot.pause()
        lines = screen_text(app).splitlines()
        assert lines[1].startswith(" ⏱ a100-train: danger clocks: ") and lines[1].rstrip().endswith(
            "…"
        )
        assert not shown_notifications(app)  # no toast over the grid
        # Every pane row is the pane's: its right border is whole down the grid.
        pane = app.fleet_screen.panes[HOSTS[0]]
        right = pane.region.right - 1
        for y in range(pane.region.y, min(pane.region.bottom, 23)):
            assert lines[y][right] in "║│╮╯╗╝", (y, lines[y])


async def test_pane_rows_are_what_textual_renders_from_the_whole_text(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=(140, 34)) as pilot:
        await post_three(pilot)
        for name in HOSTS:
            pane = app.fleet_screen.panes[name]
            width, height = pane.size
            whole = Visual.to_strips(pane, pane.render(), width, height, pane.visual_style)
            rows = [pane.render_line(y) for y in range(len(whole))]
            assert [r.text for r in rows] == [w.text for w in whole]
            assert [list(r) for r in rows] == [list(w) for w in whole], name


async def test_log_lines_wrap_at_80x24(make_queue_fleet, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(1)
    qf.qdir().mkdir(parents=True, exist_ok=True)
    long = "step 1200 " + "loss=0.1234 " * 12 + "END-OF-LINE"
    path = "resumed from /tmp/rgt-demo-" + "d" * 90 + "/checkpoint.pt at step 700"  # one word
    (qf.qdir() / "queue.log").write_text(f"{long}\n{path}\n")
    app = make_app(tmp_path, fleet=qf.fleet, start_monitors=True, clock=time.time)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f")
        detail: Any = await wait_for(
            lambda: isinstance(app.screen, HostDetailScreen) and app.screen, pilot=pilot
        )
        tab = detail.tabs["logs"]
        assert isinstance(tab, LogsTab)
        await wait_for(lambda: path in tab.lines, what="the long lines", pilot=pilot)
        await wait_for(lambda: "END-OF-LINE" in screen_text(app), pilot=pilot)
        # No line drawn wider than the view: RichLog renders at least 78 cells wide by
        # default, and the view cut what passed its ~76 (a user's hour read
        # ".../checkpoint." for ".../checkpoint.pt at step 700").
        view = tab.query_one(RichLog)
        room = view.scrollable_content_region.width
        assert room < 78 and max(strip.cell_length for strip in view.lines) <= room


async def test_a_big_fleets_panes_draw_on_the_screens_tick(tmp_path: Path) -> None:
    """Past BATCH_FROM hosts a sample waits for the once-a-second tick: one screen
    update a second for the fleet, not one per sample; a few hosts draw at once."""
    app = make_app(tmp_path, fleet=many_hosts_fleet(tmp_path, BATCH_FROM + 1))
    async with app.run_test(size=(120, 40)) as pilot:
        app.post_message(HostUpdated(make_update("box0", agent_sample("box0"))))
        await wait_for(lambda: "box0" in app.latest, pilot=pilot)
        pane = app.fleet_screen.panes["box0"]
        await pilot.pause()
        drawn = pane.draws
        busy = agent_sample(
            "box0", seq=2, gpus=[gpu(0, 12, 1305, 61.5, 66), gpu(1, 13, 1290, 60.2, 68)]
        )
        # What the screen does with a sample (called here so that no tick comes between).
        assert pane.batched and not pane.show(make_update("box0", busy))
        assert pane.stale and pane.draws == drawn and "util  12%" not in screen_text(app)
        await wait_for(lambda: "util  12%" in screen_text(app), pilot=pilot)  # the tick
        assert pane.draws > drawn and not pane.stale
    (tmp_path / "few").mkdir()
    few = make_app(tmp_path / "few")
    async with few.run_test(size=(120, 40)) as pilot:
        await post_three(pilot)
        assert not few.fleet_screen.panes[HOSTS[0]].batched


async def test_panes_keep_their_height_when_the_terminal_narrows(tmp_path: Path) -> None:
    """Textual measures a pane at a new width before the pane redraws for it: counted
    by wrapping the lines cut for the old width it would be taller than the redraw, and
    keep blank rows under its text (25 rows for 17)."""
    app = make_app(tmp_path, fleet=many_hosts_fleet(tmp_path, 12))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        panes = app.fleet_screen.panes
        for i in range(12):
            app.post_message(HostUpdated(make_update(f"box{i}", agent_sample(f"box{i}"))))
        await wait_for(lambda: all(p.draws >= 1 for p in panes.values()), pilot=pilot)
        first = panes["box0"]
        x, width = first.region.x, first.region.width

        def fitted() -> bool:
            shown = [p for p in panes.values() if p.can_draw() and p.region.height]
            return bool(shown) and all(p.region.height == p.natural_height for p in shown)

        await wait_for(fitted, pilot=pilot)
        # A toast going would lay the screen out again and hide the bug: none here.
        app.clear_notifications()
        await wait_for(fitted, pilot=pilot)
        await pilot.resize_terminal(112, 40)  # narrower, as many columns
        await wait_for(lambda: first.region.width < width, pilot=pilot)
        assert first.region.x == x  # the same columns
        await wait_for(
            fitted,
            pilot=pilot,
            show=lambda: str(
                [
                    (p.host.name, p.region.height, p.natural_height)
                    for p in panes.values()
                    if p.can_draw()
                ]
            ),
        )
