"""The add dialog (``+``) in a user's 80x24 terminal: its title and key line stay on
screen while the fields scroll between them, the profile select is one line whatever
the profile, the paste box's and the name's placeholders are whole; a check's lines come into view with
its buttons. Enter in every field does what the key line says: the SSH command's checks,
each other field's moves on (the last one's to the buttons), and letters typed in a
field stay text. The real app, driven by the Pilot."""

from __future__ import annotations

from pathlib import Path

from support.pilot import make_app, screen_text, wait_for
from textual.widgets import Button, Input, Select

from rgt_tui.app import RgtApp
from rgt_tui.demo.loopback import LOOPBACK_HOST
from rgt_tui.profiles import load_profiles
from rgt_tui.screens.add_host import AddHostScreen
from rgt_tui.services.fleet.add_keys import LAUNCH_KEYS
from rgt_tui.services.fleet.file import load_fleet

SMALL = (80, 24)


async def open_add(app: RgtApp, pilot) -> AddHostScreen:  # type: ignore[no-untyped-def]
    await pilot.press("plus")
    screen = await wait_for(
        lambda: isinstance(app.screen, AddHostScreen) and app.screen, pilot=pilot
    )
    await pilot.pause()
    return screen


def hint(screen: AddHostScreen) -> str:
    """The key line's words, on one line (it may wrap at 80 columns)."""
    return " ".join(str(screen.query_one("#add-hint").render()).split())


def on_screen(app: RgtApp, words: str) -> bool:
    """Whether ``words`` are shown, where a wrapped line may split them."""
    return words in " ".join(screen_text(app).replace("│", " ").split())


def row_starts(app: RgtApp, words: str) -> bool:
    """Whether a row inside the dialog's box starts with ``words``."""
    return any(row.strip(" │").startswith(words) for row in screen_text(app).splitlines())


async def test_the_add_dialog_fits_80x24(tmp_path: Path, home: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        screen = await open_add(app, pilot)
        text = screen_text(app)
        assert "Add a box to " in text, text
        assert on_screen(app, "Enter: check the host key · Tab: next"), text
        assert on_screen(app, "Esc: cancel, nothing written"), text
        target = screen.query_one("#add-target", Input)
        assert target.placeholder in text, text  # a whole phrase, not cut at "… or"
        # The name's too (it read "from the hos").
        assert screen.query_one("#add-name", Input).placeholder in text, text
        # The profile select is one line, as tall as the name field beside it, for
        # every profile (a long title is cut, never wrapped).
        select: Select[str] = screen.query_one("#add-profile", Select)
        height = screen.query_one("#add-name", Input).outer_size.height
        for profile in load_profiles():
            select.value = profile
            await pilot.pause()
            assert select.outer_size.height == height, (profile, screen_text(app))
            assert select.query_one("#label").size.height == 1, profile
        # The last field is scrolled to, and the title and key line stay.
        screen.set_focus(screen.query_one("#add-pull", Input))
        await wait_for(lambda: row_starts(app, "pull "), what="the pull field", pilot=pilot)
        text = screen_text(app)
        assert "Add a box to " in text, text
        assert on_screen(app, "Enter: to the buttons"), text


async def test_enter_in_each_field_does_what_the_key_line_says(tmp_path: Path, home: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        screen = await open_add(app, pilot)
        name = screen.query_one("#add-name", Input)
        await pilot.press("tab")
        assert app.focused is name, app.focused
        await pilot.press(*"tq1-box")  # app keys elsewhere (t, q, 1): text here
        assert name.value == "tq1-box" and app.screen is screen
        assert hint(screen).startswith("Enter: next field · "), hint(screen)
        await pilot.press("enter")
        assert app.focused is screen.query_one("#add-profile", Select), app.focused
        assert hint(screen).startswith("Enter: choose the profile · "), hint(screen)
        # Enter opens the list, ↓ Enter chooses another profile: on to the cost, as
        # Enter does in the fields (it opened the list again and again).
        select = screen.query_one("#add-profile", Select)
        before = select.value
        await pilot.press("enter")
        await wait_for(lambda: select.expanded, what="the profile list", pilot=pilot)
        await pilot.press("down", "enter")
        cost = screen.query_one("#add-cost", Input)
        await wait_for(lambda: app.focused is cost, what="the cost field", pilot=pilot)
        assert select.value != before
        await pilot.press(*"1.29")
        assert hint(screen).startswith("Enter: next field · "), hint(screen)
        await pilot.press("enter")
        assert app.focused is screen.query_one(f"#add-{LAUNCH_KEYS[0]}", Input), app.focused
        assert cost.value == "1.29"

        for key in LAUNCH_KEYS[1:]:  # on through the launch keys, by Enter alone
            assert hint(screen).startswith("Enter: next field · "), hint(screen)
            await pilot.press("enter")
            assert app.focused is screen.query_one(f"#add-{key}", Input), (key, app.focused)
        assert hint(screen).startswith("Enter: to the buttons · "), hint(screen)
        await pilot.press("enter")
        check = screen.query_one("#add-check", Button)
        assert app.focused is check, app.focused
        assert hint(screen).startswith("Enter: check the host key · "), hint(screen)
        assert app.screen is screen and screen.check is None  # nothing checked or added


async def test_a_checks_lines_come_into_view_with_its_buttons_at_80x24(
    make_loopback_fleet, home: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    watched = await make_loopback_fleet(1)
    other = await make_loopback_fleet(1)
    box = other.boxes[0]
    app = make_app(tmp_path, fleet=load_fleet(watched.hosts_file))
    async with app.run_test(size=SMALL) as pilot:
        screen = await open_add(app, pilot)
        target = screen.query_one("#add-target", Input)
        target.value = f"ssh -p {box.port} -i {other.client_key} {other.username}@{LOOPBACK_HOST}"
        await pilot.press("enter")
        await wait_for(lambda: "▶ Cancel ◀" in screen_text(app), 30, pilot=pilot)
        await pilot.pause()
        text = screen_text(app)
        assert "Add a box to " in text, text
        assert "trust this key?" in text and "SHA256:" in text, text
        assert "Trust appends this line to the file:" in text, text
        assert on_screen(app, "Enter: cancel, nothing written · Tab: next"), text
