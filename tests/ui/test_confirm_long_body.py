"""A question with more lines than 80×24 holds (quitting while 30 boxes pull) keeps its
buttons and key line on screen: its lines scroll (↑↓, PgUp/PgDn) and the key line says
so; Enter still answers the safe choice."""

from __future__ import annotations

from pathlib import Path

from support.pilot import make_app, screen_text, wait_for

from rgt_tui.screens.quit_confirm import QuitConfirmScreen, busy_line


async def test_quit_with_thirty_pulls_keeps_its_buttons_at_80x24(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    answers: list[str | None] = []
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        # Thirty pulls the app knows of: the question follows the app's jobs, and lines
        # it did not know went at its next change of jobs (a loaded CI run read "Nothing
        # runs any more" before it could scroll).
        for i in range(30):
            app.jobs.learned(f"box{i:02}", running="pull")
        lines = [busy_line(f"box{i:02}", "pull", None) for i in range(30)]
        app.push_screen(QuitConfirmScreen(lines), answers.append)
        await wait_for(lambda: isinstance(app.screen, QuitConfirmScreen), pilot=pilot)
        # One read that holds all of it: a CI run under load read the buttons, then a
        # blank frame a moment later (the dialog laid out again).
        wanted = ("Keep running", "Quit while these run?", "box00: pull stops")
        text = await wait_for(
            lambda: all(w in (t := screen_text(app)) for w in wanted) and t,
            what="the question, its first line and its buttons",
            pilot=pilot,
        )
        assert "▶ Keep running ◀" in text and "Quit" in text
        assert "Enter: keep running" in text and "↑↓" in text, text
        assert "box29" not in text  # below: it scrolls into view
        await pilot.press("pagedown", "pagedown", "pagedown")
        await wait_for(lambda: "box29: pull stops" in screen_text(app), what="box29", pilot=pilot)
        assert "▶ Keep running ◀" in screen_text(app)
        await pilot.press("enter")
        await wait_for(lambda: answers == [None], what="the safe answer", pilot=pilot)
        assert app.is_running


async def test_the_quit_question_follows_the_jobs_while_it_is_open(tmp_path: Path) -> None:
    """A pull that ends while the question is open leaves its list: a user's hour read
    three finished pulls "stop" for minutes."""
    app = make_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        host = app.fleet.hosts[0].name
        app.jobs.learned(host, running="pull")
        await pilot.press("q")
        await wait_for(lambda: isinstance(app.screen, QuitConfirmScreen), pilot=pilot)
        await wait_for(lambda: f"{host}: pull stops" in screen_text(app), pilot=pilot)
        app.jobs.learned(host, running="")  # the pull ended
        await wait_for(
            lambda: "Nothing runs any more: quitting stops nothing." in screen_text(app),
            pilot=pilot,
        )
        assert f"{host}: pull stops" not in screen_text(app)
        assert isinstance(app.screen, QuitConfirmScreen)  # still the user's to answer
