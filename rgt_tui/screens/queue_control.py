"""The Queue tab's control keys: ``S`` stop after the current cell, ``X`` kill the running
cell, ``R`` retry a cell — and their dialogs.

Shifted keys on purpose, as ``L`` (launch) and ``P`` (preflight): each stops or starts
paid work, so a stray lower-case press (``s`` opens a shell, ``x`` kills a VRAM holder
on the GPU tab, ``r`` reconnects) never reaches them. k9s kills with ctrl+k and
lazydocker stops with ``s``; here ``s`` was already the shell (k9s's), so stop is ``S``,
kill ``X`` (the ``x`` of the GPU tab's kill, shifted) and retry ``R``.

Every action that stops a running process asks first in the one ``ConfirmScreen``
(``control_question``), which names the host and the cell; Cancel has the focus, so
Enter alone never kills. ``R``
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
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from rgt_tui.content.box_text import shown
from rgt_tui.screens.dialog import MARK_LEFT, DialogScreen, KeyHint

# On the host's detail screen, enabled (and so in the footer) on the Queue tab only.
QUEUE_CONTROL_BINDINGS = [
    Binding(
        "S",
        "queue_control('stop')",
        "Stop after",  # short: S X R whole in an 80-column footer; the tab's line says more
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
        "Retry",
        key_display="R",
        tooltip="Queue tab: re-run a failed or killed cell, old outputs kept",
    ),
]
# S and X with nothing running: hidden from the footer (it offers them only while a cell
# runs), yet a press is answered — "nothing to stop", "no cell is running" — instead of
# silence (a user's hour pressed S, saw nothing happen, and pressed it again). Textual
# tries a key's next binding when the first is not allowed now.
QUEUE_CONTROL_IDLE_BINDINGS = [
    Binding("S", "nothing_running('stop')", show=False),
    Binding("X", "nothing_running('kill')", show=False),
    Binding("R", "nothing_running('retry')", show=False),
]
# S X R on the host's other tabs (Logs, where a user watches the cell): hidden from their
# footers, yet they act — the dialog says what it finds — instead of silence (hour s34
# TUI #9: X in the Logs tab did nothing, while the palette offered Kill).
QUEUE_CONTROL_ELSEWHERE_BINDINGS = [
    Binding("S", "queue_control_elsewhere('stop')", show=False),
    Binding("X", "queue_control_elsewhere('kill')", show=False),
    Binding("R", "queue_control_elsewhere('retry')", show=False),
]
CONTROL_ACTIONS = {
    "stop": ("Stop queue after cell", "Stop the host's queue after its current cell"),
    "kill": ("Kill running cell", "Kill the host's running queue cell now"),
    "retry": ("Retry cell", "Re-run a failed or killed cell under its name"),
}


def control_question(title: str, body: list[Content]) -> Content:
    """The text of a stop or kill question (asked in the one ConfirmScreen): the title,
    which names a cell, in bold warning colour, a blank line, then ``body``."""
    head = Content.styled(shown(title), "bold $warning")  # it names a cell
    return Content("\n").join([head, Content(""), *body])


class _Picks(OptionList):
    """An OptionList whose arrows stop at its ends: Down on the last failed cell went on
    to cell 0, a done one, and Enter then asked to retry that (a user's hour, s20b #15)."""

    def action_cursor_down(self) -> None:
        if self.highlighted is None or self.highlighted < self.option_count - 1:
            super().action_cursor_down()

    def action_cursor_up(self) -> None:
        if self.highlighted is None or self.highlighted > 0:
            super().action_cursor_up()


class CellPickScreen(DialogScreen[str | None]):
    """The cells an action can take, one per line: arrows move, Enter chooses.

    The highlight starts on ``first`` (retry: the first failed, killed or interrupted
    cell, not a done one above it) and the highlighted line wears ``▶`` in its text, as
    a focused dialog button does: a colour alone is lost in a plain-text capture."""

    DEFAULT_CSS = """
    /* A cell's line with its code ("code … · git … (uncommitted changes)") is ~120
       wide, 136 with the box's frame and the list's: at 90 every row wrapped in two
       on a 160-column terminal (a user's hour). */
    CellPickScreen > #qp-box { width: 136; }
    CellPickScreen OptionList { height: auto; max-height: 16; }
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel", tooltip="Close; nothing is done")]

    def __init__(
        self,
        title: str,
        cells: list[tuple[str, Content]],
        *,
        first: str | None = None,
        note: str = "",
    ) -> None:
        super().__init__()
        self.title_text = title
        self.note = note  # what is not listed, and why (a running cell: kill it first)
        self.cells = cells  # (name, the line shown)
        names = [name for name, _ in cells]
        self.first = names.index(first) if first in names else 0
        self._marked: int | None = None  # the line that wears the marker

    def compose(self) -> ComposeResult:
        with Vertical(id="qp-box", classes="dialog-box"):
            yield Static(Content.styled(shown(self.title_text), "bold $accent"))
            if self.note:
                yield Static(Content.styled(shown(self.note), "$foreground-muted"))
            first = self.first if self.cells else None
            options = _Picks(
                # No id: a box's records may hold one name twice, and OptionList refuses
                # two options with one id (R ended the app: a review's hostile box).
                *[Option(self._prompt(i, marked=i == first)) for i in range(len(self.cells))],
                id="qp-list",
            )  # fmt: skip
            # Set here, as OptionList sets its first option in its constructor: a value
            # set once it is mounted could be overtaken by that one's watcher.
            options.highlighted = first
            self._marked = first
            yield options
            yield KeyHint(id="qp-hint")

    def _prompt(self, index: int, *, marked: bool) -> Content:
        """Line ``index``, with the marker when it is the highlighted one (the same width
        either way, so the lines do not shift as the highlight moves)."""
        return Content(MARK_LEFT if marked else " " * len(MARK_LEFT)) + self.cells[index][1]

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()
        self.query_one("#qp-hint", KeyHint).show_keys(
            "choose this cell", ("↑↓", "move"), ("Esc", "cancel")
        )

    @on(OptionList.OptionHighlighted)
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self._mark(event.option_index)

    def _mark(self, index: int | None) -> None:
        """The marker on line ``index`` alone (None: on none)."""
        options = self.query_one(OptionList)
        if self._marked is not None and self._marked != index:
            options.replace_option_prompt_at_index(
                self._marked, self._prompt(self._marked, marked=False)
            )
        if index is not None:
            options.replace_option_prompt_at_index(index, self._prompt(index, marked=True))
        self._marked = index

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.cells[event.option_index][0])

    def action_cancel(self) -> None:
        self.dismiss(None)


def queue_control_commands(app: Any) -> list[tuple[str, str, Callable[[], Any]]]:
    """Command-palette entries: stop, kill and retry for every host with a queue; each
    opens the host's Queue tab and its dialog (the same as S, X, R there). None for a
    torn-down box, whose telemetry is stopped: "Kill running cell: box2" was offered for
    a box destroyed minutes before (a user's hour, session 29). Stop and kill only while
    a cell runs, as the Queue tab's footer offers S and X (or before the queue was first
    read): "Stop queue after cell" was offered for a host with nothing running (hour s30)."""
    runtime = getattr(app, "runtime", None)  # RgtApp's (none in a bare app)
    gone = runtime.stopped if runtime is not None else set()
    views = runtime.queues.views if runtime is not None else {}

    def offered(host: str, action: str) -> bool:
        view = views.get(host)
        return action == "retry" or view is None or view.current is not None

    return [
        (f"{title}: {host.name}", f"{text} (asks first; {key} on its Queue tab)",
         partial(open_control, app, host.name, action))
        for host in app.fleet.hosts
        if host.queue and host.name not in gone
        for (action, (title, text)), key in zip(CONTROL_ACTIONS.items(), ("S", "X", "R"), strict=True)
        if offered(host.name, action)
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
