"""NoticesScreen: the session's notices, newest first (the ``n`` key).

What was told while the user looked elsewhere since this TUI started — a periodic pull's
news, which is never a toast, a box that stopped answering and its return, and every toast
that came and went — with when, which host, the title and the whole text. The list is
``controllers.notices.NoticeList`` (Textual-free); this screen only shows it, and again
whenever a notice is added while it is open.
"""

from __future__ import annotations

import time

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content

from rgt_tui.controllers.notices import Notice, NoticeList
from rgt_tui.screens.dialog import DialogScreen
from rgt_tui.widgets.hanging import Hanging

LOOK_S = 1.0  # how often an open list looks for notices added meanwhile
SEVERITY_STYLE = {"warning": "bold $warning", "error": "bold $error"}


def notice_lines(notice: Notice) -> list[Content]:
    """``14:02:07  box1  box1: periodic pull failed`` then the text, indented. Both are
    plain text made printable when listed: never markup."""
    when = time.strftime("%H:%M:%S", time.localtime(notice.at))
    head = Content.assemble(
        (f"{when}  ", "$foreground-muted"),
        (f"{notice.host}  " if not notice.title.startswith(notice.host) else "", "bold"),
        (notice.title or "(no title)", SEVERITY_STYLE.get(notice.severity, "bold")),
    )
    body = [Content("    " + line) for line in notice.text.split("\n")]
    return [head, *body, Content("")]


def list_text(notices: NoticeList) -> Content:
    """The whole list as one block of text; a line saying so when it is empty."""
    items = notices.items()
    lines = [
        Content.styled(f"Notices ({len(items)}, newest first)", "bold $accent"),
        # Kept in memory only: a user back after a restart must not read it as all.
        Content.styled(
            "Since this TUI started: a restart begins a new list (only what watch did "
            "unattended in the last day is listed again).",
            "$foreground-muted",
        ),
        Content(""),
    ]
    if not items:
        lines.append(Content.styled("Nothing was told yet.", "$foreground-muted"))
    for notice in items:
        lines += notice_lines(notice)
    lines.append(Content.styled("Esc, n, q or Enter closes this list.", "$foreground-muted"))
    return Content("\n").join(lines)


class NoticesScreen(DialogScreen[None]):
    """A modal list of the session's notices; any close key dismisses it."""

    BINDINGS = [Binding("escape,n,q,enter", "close", "Close", show=False)]
    DEFAULT_CSS = """
    NoticesScreen { background: $background 60%; }
    NoticesScreen > #notices-box { width: 100; }
    """

    def __init__(self, notices: NoticeList) -> None:
        super().__init__()
        self.notices = notices
        self._shown = -1  # ``notices.added`` when last drawn

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="notices-box", classes="dialog-box"):
            # Hanging: a long line of a notice's text wraps under its indent, not to the
            # edge where it read as the next notice (hour s30).
            yield Hanging(id="notices-body")

    def on_mount(self) -> None:
        self._redraw()
        self.set_interval(LOOK_S, self._redraw)

    def _redraw(self) -> None:
        if self.notices.added == self._shown:
            return
        self._shown = self.notices.added
        self.query_one("#notices-body", Hanging).update(list_text(self.notices))

    def action_close(self) -> None:
        self.dismiss()
