"""A dialog's row of buttons fits 80 columns: the retry dialog's four (Acknowledge code,
Revoke launch acks, Retry, Cancel) ran past the screen's edge and cut Cancel, the
focused default (hour s19b #10)."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical

from rgt_tui.screens.dialog import DialogButton, DialogScreen


class FourButtons(DialogScreen[None]):
    DEFAULT_CSS = "FourButtons > #box { width: 100; }"  # the retry dialog's width

    def compose(self) -> ComposeResult:
        with Vertical(id="box", classes="dialog-box"), Horizontal(classes="dialog-buttons"):
            yield DialogButton("Acknowledge code", does="", id="ack")
            yield DialogButton("Revoke launch acks", does="", id="revoke")
            yield DialogButton("Retry", does="", id="go")
            yield DialogButton("Cancel", does="cancel", id="cancel")


async def test_four_buttons_fit_an_80_column_screen() -> None:
    app = App()
    async with app.run_test(size=(80, 24)) as pilot:
        app.push_screen(FourButtons())
        await pilot.pause()
        for ident in ("ack", "revoke", "go", "cancel"):
            button = app.screen.query_one(f"#{ident}", DialogButton)
            region = button.region
            assert region.width > 0 and region.right <= 80, (ident, region)
            assert button.caption in str(button.label), ident
