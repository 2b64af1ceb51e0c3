"""ux-e #8: at 80x24 the move dialog's plan scrolls (↑↓, PgUp/PgDn, wherever the focus
is), so its buttons and key line stay on screen; and its refusal names the dialog's From
scratch button, not the command line's --from-scratch. Two loopback boxes, the real app."""

from __future__ import annotations

from pathlib import Path

from support.pilot import make_app, screen_text, wait_for
from support.queues import SCRIPT_RUN
from support.resume_cell import run_until_held
from test_queue_move_resume_dialog import kill_ck, notes_say, open_move
from textual.widgets import Button

from rgt_tui.screens.dialog import DialogBody
from rgt_tui.services.queue.resume import FROM_SCRATCH

SMALL = (80, 24)


async def test_the_move_dialog_fits_80x24_and_says_its_own_button(
    make_queue_fleet, tmp_path: Path
) -> None:
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    await run_until_held(qf)  # never pulled: nothing of ck is verified here
    await kill_ck(qf)
    qf.set_preflight_ack((), "box2")  # box2's failed checks make the plan long

    app = make_app(tmp_path, fleet=qf.fleet)
    async with app.run_test(size=SMALL) as pilot:
        screen = await open_move(app, pilot)
        refused = await notes_say(pilot, screen, "REFUSED")
        assert "press From scratch to run it again from the start" in refused, refused
        assert "--from-scratch" not in refused, refused
        # The refusal first, then what a move would do, as a condition: at 24 rows the
        # refusal sat under the plan, which read as though it happened (a user's hour).
        await pilot.pause()
        text = screen_text(app)
        assert "REFUSED: ck has no verified" in text and "ck [killed]: if moved, line 1" in text
        assert text.index("REFUSED") < text.index("if moved"), text
        # Textual orders Tab by where widgets are laid out: the button just shown is
        # placed (right of Plan) by the next refresh.
        scratch, plan_button = screen.query_one("#move-scratch"), screen.query_one("#move-plan")
        await wait_for(lambda: scratch.region.x > plan_button.region.x, pilot=pilot)
        await pilot.press("shift+tab")  # from Cancel (a refused plan's focus) to From scratch
        assert app.focused is screen.query_one("#move-scratch")
        await pilot.press("enter")
        await notes_say(pilot, screen, FROM_SCRATCH)
        await notes_say(pilot, screen, "preflight on box2")
        await pilot.pause()
        text = screen_text(app)
        # The focused button and the key line are on screen, under the plan.
        focused = app.focused
        assert isinstance(focused, Button) and f"▶ {focused.caption}" in text, text
        assert "Enter: " in text and "Esc: cancel" in text, text  # the line may wrap
        body = screen.query_one(DialogBody)
        assert body.show_vertical_scrollbar, "the plan should be longer than 80x24 shows"
        assert "↑↓ PgUp PgDn:" in text, text
        top = body.scroll_y
        await pilot.press("pagedown")
        await wait_for(lambda: body.scroll_y > top, what="the plan to scroll", pilot=pilot)
        assert app.focused is focused  # scrolling keeps the focus where it was


def test_a_refusal_of_several_lines_shows_them_as_lines_and_box_text_escaped() -> None:
    """The box's copy against the file is a refusal over several lines: it showed as one
    line with a literal \\n in the dialog. A control character of the box's stays escaped."""
    from rgt_tui.screens.queue_move_dialog import _lines

    refusal = (
        "REFUSED: q.txt no longer matches the copy on box1's box; put the sent lines back "
        "first:\n  line 1 on the box: 'cfg\x1b[2J.json'"
    )
    text = _lines(["ck [pending]: if moved, line 1 moves", refusal]).plain
    assert text.splitlines()[1:] == [
        "REFUSED: q.txt no longer matches the copy on box1's box; put the sent lines back first:",
        "  line 1 on the box: 'cfg\\x1b[2J.json'",
    ]
