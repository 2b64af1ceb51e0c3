"""A toast that comes while a dialog is open never covers the dialog's buttons or its key
line: what the user is deciding on stays in sight (a GEN1 toast once hid the launch
dialog's buttons at 80×24). Over a dialog, toasts keep to the screen's top third, the
newest in sight."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.text import Text
from support.pilot import make_app, screen_text, wait_for

from rgt_tui.screens.dialog import CANCEL, ConfirmScreen, DialogButton, KeyHint


@pytest.mark.parametrize("lines", [12, 1])  # a dialog of the screen's height, and a small one
async def test_toasts_leave_a_dialogs_buttons_and_keys_in_sight(tmp_path: Path, lines: int) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await pilot.pause()
        app.clear_notifications()
        body = Text("\n".join(f"line {i} of what this dialog asks" for i in range(lines)))
        app.push_screen(ConfirmScreen(body, [("go", "Go on", "go on", "error")], safe=CANCEL))
        await wait_for(lambda: isinstance(app.screen, ConfirmScreen), pilot=pilot)
        screen = app.screen
        # Settled: the body fitted to its room, so the key line offers no scrolling.
        settled = "Enter: cancel · Tab: next button · Esc: cancel"
        await wait_for(lambda: settled in screen_text(app), what="the dialog", pilot=pilot)
        rows = {w.region.y for w in (*screen.query(DialogButton), *screen.query(KeyHint))}
        before = screen_text(app).splitlines()
        for i in range(3):  # the newest long: it wraps to many lines at this width
            app.notify(
                f"box{i}: recorded as torn down but it answers" * (1 + 5 * (i == 2)),
                title=f"notice{i}",
            )
        await wait_for(lambda: "notice2" in screen_text(app), what="the newest toast", pilot=pilot)
        after = screen_text(app).splitlines()
        # The rows of the buttons and of the key line read as they did before the toasts.
        assert [after[y] for y in sorted(rows)] == [before[y] for y in sorted(rows)], "\n".join(
            after
        )
