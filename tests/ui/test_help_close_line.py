"""The help says how to close it where it opens, at 80x24: the footer under it still
shows the screen's keys below (a user's hour read L and y there while the help was
open), and the help's own last line is pages away."""

from __future__ import annotations

from pathlib import Path

from support.pilot import make_app, screen_text, wait_for

from rgt_tui.screens.help import HelpScreen


async def test_the_help_says_how_to_close_it_on_its_first_screen(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await wait_for(lambda: isinstance(app.screen, HelpScreen), pilot=pilot)
        await pilot.pause()
        text = screen_text(app)
        assert "Esc (or Enter, q, ?) closes" in text, text
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, HelpScreen), pilot=pilot)
