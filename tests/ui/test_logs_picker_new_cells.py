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
