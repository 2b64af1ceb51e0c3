"""ux-a #15: on the add screen, Tab into a launch-key field leaves its default
unselected with the cursor at its end, so the first key typed edits the default instead
of wiping it. The real add screen, driven by the Pilot at 80x24.
"""

from __future__ import annotations

from pathlib import Path

from support.pilot import wait_for
from textual.app import App
from textual.widgets import Input

from rgt_tui.screens.add_host import AddHostScreen
from rgt_tui.services.fleet.add_keys import DEFAULT_RUN


class AddApp(App[None]):
    """Just the add screen."""

    def __init__(self, fleet_file: Path) -> None:
        super().__init__()
        self.fleet_file = fleet_file

    def on_mount(self) -> None:
        self.push_screen(AddHostScreen(self.fleet_file))


async def test_tab_into_a_prefilled_field_and_type_appends_to_its_default(tmp_path, home):
    app = AddApp(tmp_path / "hosts.toml")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, AddHostScreen)
        run = screen.query_one("#add-run", Input)
        await wait_for(lambda: run.value == DEFAULT_RUN, what="the run default", pilot=pilot)
        for _ in range(12):  # Tab from the SSH command field, as the user did
            if run.has_focus:
                break
            await pilot.press("tab")
        assert run.has_focus, app.focused
        assert run.selection.is_empty and run.cursor_position == len(DEFAULT_RUN)
        await pilot.press("Z")
        assert run.value == DEFAULT_RUN + "Z"
