"""The Logs tab keeps 5,000 lines, and each at most ``tabs.logs.MAX_LINE_BYTES`` (issue 26):
a box's 4 MiB line reaches the tab cut, with how much was dropped, so what the tab holds
is bounded in bytes as well as lines. A real loopback box, the real App (Pilot)."""

from __future__ import annotations

import time
from pathlib import Path

from support.pilot import SIZE, make_app, open_logs_tab, wait_for
from textual.widgets import RichLog

from rgt_tui.domain.logscan import cut_note
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.screens.tabs.logs import MAX_LINE_BYTES, MAX_LINES, LogsTab

LONG = 4 << 20


async def test_a_4_mib_line_reaches_the_logs_tab_cut(make_queue_fleet, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(1)
    qf.qdir().mkdir(parents=True, exist_ok=True)
    log = qf.qdir() / "queue.log"
    log.write_bytes(b"before\n")
    app = make_app(tmp_path, fleet=qf.fleet, start_monitors=True, clock=time.time)
    async with app.run_test(size=SIZE) as pilot:
        tab = await open_logs_tab(app, pilot)
        assert isinstance(tab, LogsTab)
        # Written while the tab follows: a log opened at its tail starts past a line this
        # long (ux-g 3), so the line reaches the tab as it is written.
        await wait_for(lambda: "before" in tab.lines, what="the first line", pilot=pilot)
        with log.open("ab") as f:
            f.write(b"x" * LONG + b"\nafter\n")
        await wait_for(lambda: "after" in tab.lines, what="the line after", pilot=pilot)
        cut = "x" * MAX_LINE_BYTES + cut_note(LONG - MAX_LINE_BYTES, MAX_LINE_BYTES)
        assert tab.lines == ["before", cut, "after"]
        # The view wraps long lines (issue 27): the cut line's rows hold all of it.
        rows = [strip.text for strip in tab.query_one(RichLog).lines]
        assert "".join(rows).count("x") == MAX_LINE_BYTES
        # The most the tab can hold: MAX_LINES lines of at most this many bytes each.
        assert MAX_LINES * len(cut.encode()) < 25 << 20


def queue_log_app(qf, tmp_path: Path):  # type: ignore[no-untyped-def]
    """box1's queue log holding "line 0", and the app on its fleet, monitors running."""
    qf.qdir().mkdir(parents=True, exist_ok=True)
    log = qf.qdir() / "queue.log"
    log.write_text("line 0\n")
    return log, make_app(tmp_path, fleet=qf.fleet, start_monitors=True, clock=time.time)


async def test_lines_a_busy_log_pushes_out_of_the_view_are_counted_with_the_command(  # type: ignore[no-untyped-def]
    make_queue_fleet, tmp_path: Path
) -> None:
    # A user's hour: following a log past 5,000 lines, Home showed "line 01024" at the
    # top with nothing to say the earlier ones were let go, nor how to read them.
    from support.pilot import text_of
    from textual.widgets import Static

    qf = await make_queue_fleet(1)
    log, app = queue_log_app(qf, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        tab = await open_logs_tab(app, pilot)
        assert isinstance(tab, LogsTab)
        await wait_for(lambda: "line 0" in tab.lines, what="the first line", pilot=pilot)
        status = tab.query_one("#logs-status", Static)
        assert "let go" not in text_of(status)
        with log.open("a") as f:
            f.write("".join(f"line {i}\n" for i in range(1, MAX_LINES + 300)))
        last = f"line {MAX_LINES + 299}"
        await wait_for(lambda: last in tab.lines, what="the last line", pilot=pilot)
        assert tab.out_of_view == 300 and tab.lines[0] == "line 300"
        said = text_of(status)
        assert "300 earlier lines let go (the tab keeps 5,000): rgt-tui logs box1" in said, said


async def test_a_log_reopened_says_what_the_recall_left_out(  # type: ignore[no-untyped-def]
    make_queue_fleet, tmp_path: Path
) -> None:
    # A user's hour: a busy log, Esc, f again: its last 500 lines (the recall), and
    # nothing said of the lines before them.
    from rgt_tui.screens.tabs.logs_recall import RECALL_LINES

    qf = await make_queue_fleet(1)
    log, app = queue_log_app(qf, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        tab = await open_logs_tab(app, pilot)
        await wait_for(lambda: "line 0" in tab.lines, what="the first line", pilot=pilot)
        with log.open("a") as f:
            f.write("".join(f"line {i}\n" for i in range(1, 1000)))
        await wait_for(lambda: "line 999" in tab.lines, what="the last line", pilot=pilot)
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, HostDetailScreen), pilot=pilot)
        tab = await open_logs_tab(app, pilot)
        await wait_for(lambda: "line 999" in tab.lines, what="the recalled lines", pilot=pilot)
        assert tab.lines[0] == f"line {1000 - RECALL_LINES}"
        rows = " ".join(strip.text for strip in tab.query_one(RichLog).lines[:4])
        assert "500 earlier lines not shown (the tab recalls the last 500 it drew)" in rows, rows
        assert "rgt-tui logs box1 ──" in rows
        assert tab.out_of_view == 500
