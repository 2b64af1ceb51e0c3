"""The usage modal at 80x24 (ux-d D12): the audit scrolls above, and the status, the
input and the key line stay on screen below it, before and after a refused delete (they
sat below the fold: typing went into an input no one could see). A loopback box on a
tmpfs (support/disk_box)."""

from __future__ import annotations

from pathlib import Path

from support.disk_box import audit_text, disk_app
from support.disk_box import tmpfs as tmpfs  # noqa: F401  (the fixture)
from support.pilot import text_of, wait_for
from textual.widget import Widget
from textual.widgets import Input, Static

from rgt_tui.screens.dialog import KeyHint
from rgt_tui.screens.disk_usage import DiskUsageScreen

SMALL = (80, 24)


def _on_screen(widget: Widget) -> bool:
    """Whether all of ``widget`` is drawn inside the dialog's box, itself on screen."""
    box = widget.screen.query_one("#disk-box")
    inside = box.region.shrink(box.styles.gutter)
    return (
        bool(widget.region.area)
        and inside.contains_region(widget.region)
        and widget.screen.region.contains_region(box.region)
    )


async def test_at_80x24_the_input_and_key_line_stay_on_screen_below_the_scrolling_audit(
    make_loopback_fleet, tmp_path: Path, tmpfs: Path
) -> None:  # type: ignore[no-untyped-def]
    fleet = await make_loopback_fleet(1)
    app, paths = disk_app(fleet, tmp_path, tmpfs)
    async with app.run_test(size=SMALL) as pilot:
        app.open_host("box1")
        await pilot.pause()
        await pilot.press("u")
        await wait_for(lambda: "org/a" in audit_text(app), what="the audit", pilot=pilot)
        screen = app.screen
        assert isinstance(screen, DiskUsageScreen)
        box = screen.query_one("#disk-input", Input)
        hint = screen.query_one("#disk-hint", KeyHint)

        def keys() -> str:
            return text_of(hint)

        await wait_for(lambda: "scroll" in keys(), what="the scroll keys named", pilot=pilot)
        assert _on_screen(box) and _on_screen(hint) and app.focused is box
        assert keys().startswith("Enter: delete what is typed"), keys()
        assert "Esc: close" in keys()
        assert screen.query_one("#disk-scroll").show_vertical_scrollbar

        # A refusal naming what it would lose: the input and key line stay in view.
        await pilot.press(*str(paths["cell"]), "enter")
        status = screen.query_one("#disk-status", Static)
        await wait_for(lambda: "would lose" in text_of(status), what="the refusal", pilot=pilot)
        await pilot.pause()
        assert _on_screen(box) and _on_screen(hint) and _on_screen(status)
        assert keys().startswith("Enter: delete what is typed"), keys()
        assert paths["cell"].exists()
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, DiskUsageScreen), pilot=pilot)
