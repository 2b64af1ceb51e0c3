"""``wait_for(..., pilot=)`` returns only once the screen on top is shown: CI read a
QuitConfirmScreen as empty right after ``isinstance(app.screen, ...)`` held, because the
key that pushed it was handled between two polls and the screen had not yet composed."""

from __future__ import annotations

from support.pilot import screen_text
from support.waiting import wait_for
from textual.app import App, ComposeResult
from textual.screen import Screen
from textual.widgets import Static


class _Question(Screen[None]):
    def compose(self) -> ComposeResult:
        yield Static("the question's body")


async def test_wait_for_a_pushed_screen_lasts_until_it_is_shown() -> None:
    app = App[None]()
    async with app.run_test() as pilot:
        app.push_screen(_Question())
        # On the stack at once, composed later: the predicate holds before anything shows.
        await wait_for(lambda: isinstance(app.screen, _Question), pilot=pilot)
        assert "the question's body" in screen_text(app)


async def test_wait_for_returns_once_the_app_has_quit() -> None:
    """An App that quit shows nothing more: waiting for its end must not wait for a
    screen."""
    app = App[None]()
    async with app.run_test() as pilot:
        app.push_screen(_Question())
        app.exit(return_code=3)
        assert await wait_for(lambda: app.return_code == 3, 5, pilot=pilot)
