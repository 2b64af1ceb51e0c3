"""The Queue tab's control keys: ``S`` stop after the current cell, ``X`` kill the running
cell, ``R`` retry a cell — and their dialogs.

Shifted keys on purpose, as ``L`` (launch) and ``P`` (preflight): each stops or starts
paid work, so a stray lower-case press (``s`` opens a shell, ``x`` kills a VRAM holder
on the GPU tab, ``r`` reconnects) never reaches them. k9s kills with ctrl+k and
lazydocker stops with ``s``; here ``s`` was already the shell (k9s's), so stop is ``S``,
kill ``X`` (the ``x`` of the GPU tab's kill, shifted) and retry ``R``.

Every action that stops a running process asks first in ``ControlConfirmScreen``, which
names the host and the cell; Cancel has the focus, so Enter alone never kills. ``R``
first lists the cells that can be retried (``CellPickScreen``: arrows and Enter), then
asks.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, OptionList, Static
from textual.widgets.option_list import Option

from rgt_tui.content.box_text import shown
from rgt_tui.screens.dialog import DialogButton, KeyHint, enter_does

# On the host's detail screen, enabled (and so in the footer) on the Queue tab only.
QUEUE_CONTROL_BINDINGS = [
    Binding(
        "S",
        "queue_control('stop')",
        "Stop after cell",
        key_display="S",
        tooltip="Queue tab: stop the queue after its current cell (asks first)",
    ),
    Binding(
        "X",
        "queue_control('kill')",
        "Kill cell",
        key_display="X",
        tooltip="Queue tab: kill the running cell now (asks first)",
    ),
    Binding(
        "R",
        "queue_control('retry')",
        "Retry cell",
        key_display="R",
        tooltip="Queue tab: re-run a failed or killed cell, old outputs kept",
    ),
]
CONTROL_ACTIONS = {
    "stop": ("Stop queue after cell", "Stop the host's queue after its current cell"),
    "kill": ("Kill running cell", "Kill the host's running queue cell now"),
    "retry": ("Retry cell", "Re-run a failed or killed cell under its name"),
}

Choice = tuple[str, str, str, str]  # (id, caption, what Enter on it does, button variant)


class ControlConfirmScreen(ModalScreen[str | None]):
    """A question naming the cell, one button per choice and Cancel (focused first);
    dismisses with the chosen id, or None."""

    DEFAULT_CSS = """
    ControlConfirmScreen { align: center middle; }
    ControlConfirmScreen > #qc-box {
        width: 90; max-width: 96%; height: auto; max-height: 90%;
        border: round $warning; background: $surface; padding: 0 1;
    }
    ControlConfirmScreen #qc-buttons { height: auto; align-horizontal: right; }
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel", tooltip="Close; nothing is done")]

    def __init__(self, title: str, body: list[Content], choices: list[Choice]) -> None:
        super().__init__()
        self.title_text = title
        self.body = body
        self.choices = choices

    def compose(self) -> ComposeResult:
        with Vertical(id="qc-box"):
            title = Content.styled(shown(self.title_text), "bold $warning")  # it names a cell
            lines = [title, Content(""), *self.body]
            yield Static(Content("\n").join(lines), id="qc-body")
            with Horizontal(id="qc-buttons"):
                for ident, caption, does, variant in self.choices:
                    yield DialogButton(caption, does=does, id=f"qc-{ident}", variant=variant)  # type: ignore[arg-type]
                yield DialogButton("Cancel", does="cancel", id="qc-cancel", variant="primary")
            yield KeyHint(id="qc-hint")

    def on_mount(self) -> None:
        self.set_focus(self.query_one("#qc-cancel", Button))
        self._hint()

    def on_descendant_focus(self) -> None:
        self._hint()

    def _hint(self) -> None:
        self.query_one("#qc-hint", KeyHint).show_keys(
            enter_does(self.focused), ("Tab", "next button"), ("Esc", "cancel")
        )

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        ident = (event.button.id or "").removeprefix("qc-")
        self.dismiss(None if ident == "cancel" else ident)

    def action_cancel(self) -> None:
        self.dismiss(None)


class CellPickScreen(ModalScreen[str | None]):
    """The cells an action can take, one per line: arrows move, Enter chooses."""

    DEFAULT_CSS = """
    CellPickScreen { align: center middle; }
    CellPickScreen > #qp-box {
        width: 90; max-width: 96%; height: auto; max-height: 90%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    CellPickScreen OptionList { height: auto; max-height: 16; }
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel", tooltip="Close; nothing is done")]

    def __init__(self, title: str, cells: list[tuple[str, Content]]) -> None:
        super().__init__()
        self.title_text = title
        self.cells = cells  # (name, the line shown)

    def compose(self) -> ComposeResult:
        with Vertical(id="qp-box"):
            yield Static(Content.styled(shown(self.title_text), "bold $accent"))
            yield OptionList(*[Option(line, id=name) for name, line in self.cells], id="qp-list")
            yield KeyHint(id="qp-hint")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()
        self.query_one("#qp-hint", KeyHint).show_keys(
            "choose this cell", ("↑↓", "move"), ("Esc", "cancel")
        )

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


def queue_control_commands(app: Any) -> list[tuple[str, str, Callable[[], Any]]]:
    """Command-palette entries: stop, kill and retry for every host with a queue; each
    opens the host's Queue tab and its dialog (the same as S, X, R there)."""
    return [
        (f"{title}: {host.name}", f"{text} (asks first; {key} on its Queue tab)",
         partial(open_control, app, host.name, action))
        for host in app.fleet.hosts
        if host.queue
        for (action, (title, text)), key in zip(CONTROL_ACTIONS.items(), ("S", "X", "R"), strict=True)
    ]  # fmt: skip


def open_control(app: Any, host: str, action: str) -> None:
    """Open ``host``'s Queue tab, then its ``action`` dialog once the screen is up."""
    app.open_host(host, "queue")

    def ask() -> None:
        # The detail screen by what it does (it imports this module: no import back).
        screen = app.screen
        shown = getattr(getattr(screen, "host", None), "name", None)
        if shown == host and hasattr(screen, "action_queue_control"):
            screen.action_queue_control(action)

    app.call_after_refresh(ask)
