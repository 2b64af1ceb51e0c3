"""The Logs tab's cell picker (``c``) offers cells the queue gained while the detail
screen is open: appended cells ran and only a reopen listed them (s37 dev-loop #6)."""

from __future__ import annotations

from pathlib import Path

from support.pilot import SIZE, make_app, open_logs_tab, screen_text, wait_for
from textual.widgets import Select

from rgt_tui.domain.queue_state import DONE, PENDING, CellView, QueueView


def view(host: str, names: list[str]) -> QueueView:
    cells = tuple(
        CellView(i, n, DONE if i == 0 else PENDING, exit_code=0 if i == 0 else None)
        for i, n in enumerate(names)
    )
    return QueueView(host, "running", cells, None, "boot", 1000, None)


async def test_cells_appended_while_the_logs_tab_is_open_are_offered(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        host = app.fleet.hosts[0].name
        app.runtime.queue_viewed(host, view(host, ["a"]))
        tab = await open_logs_tab(app, pilot)
        picker = tab.query_one("#logs-source", Select)

        async def offered(name: str) -> None:
            """``c`` opens the picker, and it lists ``cell <name>``; Escape closes it."""
            await pilot.press("c")
            await wait_for(lambda: picker.expanded, what="the picker open", pilot=pilot)
            await wait_for(lambda: f"cell {name}" in screen_text(app), what=name, pilot=pilot)
            await pilot.press("escape")
            await wait_for(lambda: not picker.expanded, what="the picker closed", pilot=pilot)

        await offered("a")
        app.runtime.queue_viewed(host, view(host, ["a", "b", "c"]))  # appended, polled
        await offered("c")


async def test_a_log_silent_past_a_minute_says_so_in_its_status(tmp_path: Path) -> None:
    """s38 disk hour #7: a cell that printed nothing for minutes read as dead in the Logs
    tab (status "following", no age), while the pane had its U43 alert. Past a minute
    without a line the status says how long, after the follower's words; the next line
    takes it away. The tab's clock is the test's: no wait on the wall clock."""
    from rgt_tui.domain.logscan import LogChunk, LogLine, LogPosition
    from rgt_tui.screens.tabs.logs import QUEUE_SOURCE, LogsTab

    now = [1000.0]
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        tab = await open_logs_tab(app, pilot)
        tab.clock = lambda: now[0]
        await wait_for(lambda: tab.following, pilot=pilot)
        line = LogChunk((LogLine("epoch 1"),), LogPosition())
        tab.post_message(LogsTab.Chunk(QUEUE_SOURCE, line))
        silent = "no new line for"
        await wait_for(lambda: "epoch 1" in screen_text(app), pilot=pilot)
        now[0] += 59
        await pilot.pause(1.2)  # the tab looks each second: a minute is not yet past
        assert silent not in screen_text(app)
        now[0] += 61
        await wait_for(lambda: silent in screen_text(app), what="the silence said", pilot=pilot)
        flat = " ".join(screen_text(app).split())
        assert "no new line for 2m00s" in flat and "U43 alert" in flat, flat
        line = LogChunk((LogLine("epoch 2"),), LogPosition())
        tab.post_message(LogsTab.Chunk(QUEUE_SOURCE, line))
        await wait_for(lambda: silent not in screen_text(app), what="a new line", pilot=pilot)


async def test_lines_drawn_before_a_resize_wrap_to_the_new_width(tmp_path: Path) -> None:
    """s38 disk hour #6: at 160 columns, then 80, the lines drawn before lost their tails
    ("runner" without "pid 24175, script"); a traceback's last words could go the same way.
    The kept lines are drawn again at the new width."""
    from rgt_tui.domain.logscan import LogChunk, LogLine, LogPosition
    from rgt_tui.screens.tabs.logs import QUEUE_SOURCE, LogsTab

    app = make_app(tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        tab = await open_logs_tab(app, pilot)
        await wait_for(lambda: tab.following, pilot=pilot)
        # One word of 140 characters: one row at 160 columns, cut at 80 unless drawn again.
        long = "FileNotFoundError:" + "/runs/cell/ckpt" * 8 + "x" * 2 + "/TAILWORD.pt"
        tab.post_message(LogsTab.Chunk(QUEUE_SOURCE, LogChunk((LogLine(long),), LogPosition())))
        await wait_for(lambda: "TAILWORD" in screen_text(app), pilot=pilot)
        await pilot.resize_terminal(80, 24)

        def rows_joined() -> str:
            """The rows the line fills on screen now, joined: the line itself when none
            lost its tail beyond the view's edge."""
            rows = screen_text(app).splitlines()
            first = next((i for i, r in enumerate(rows) if "FileNotFoundError" in r), None)
            last = next((i for i, r in enumerate(rows) if "TAILWORD" in r), None)
            if first is None or last is None:
                return ""
            return "".join(r.strip() for r in rows[first : last + 1])

        await wait_for(lambda: rows_joined() == long, what="the line, whole, wrapped", pilot=pilot)
        assert app.is_running
