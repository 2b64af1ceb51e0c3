"""HelpScreen: every key, read from the screens' own BINDINGS so it cannot go stale."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable
from typing import Any

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Static

from rgt_tui.screens.dialog import DialogScreen

MOUSE_HELP = [
    ("click", "Open a host pane's detail screen (it also selects it)"),
    ("wheel", "Scroll the fleet grid"),
    ("click tab", "Switch tabs on the detail screen"),
]


def describe(binding: Binding) -> str:
    """The longest description a binding has: its tooltip, else its footer label."""
    return binding.tooltip or binding.description or binding.action


# Actions that are one action to the user: q has its own (so a text box can take it as
# a letter while Ctrl+C still quits there); the help lists both keys on one row.
# S and X with nothing running, and S X R on the other tabs (queue_control's hidden
# stand-ins), are the same keys too.
SAME_ACTION = {
    "quit_key": "quit",
    "nothing_running('stop')": "queue_control('stop')",
    "nothing_running('kill')": "queue_control('kill')",
    "nothing_running('retry')": "queue_control('retry')",
    "queue_control_elsewhere('stop')": "queue_control('stop')",
    "queue_control_elsewhere('kill')": "queue_control('kill')",
    "queue_control_elsewhere('retry')": "queue_control('retry')",
    "pick_cell_elsewhere": "pick_cell",
    "kill_vram_holder_elsewhere": "kill_vram_holder",
    "no_ranks": "pick_rank",
}


def key_rows(bindings: Iterable[BindingType], key_display) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """(keys, description) per action, keys that share an action joined: ``← h``."""
    rows: dict[str, tuple[list[str], str]] = {}
    for binding in Binding.make_bindings(bindings):
        action = SAME_ACTION.get(binding.action, binding.action)
        keys, _ = rows.setdefault(action, ([], describe(binding)))
        shown = key_display(binding)
        if shown not in keys:
            keys.append(shown)
    return [(" ".join(keys), text) for keys, text in rows.values()]


KEY_COLUMN = 18  # "  " and the keys padded to 16: descriptions start here


def help_row(keys: str, text: str, width: int) -> list[Content]:
    """One key's lines: the keys, then the description wrapped to ``width`` cells with
    its continuation lines under the description (a hanging indent), not at column 0."""
    prefix = f"  {keys:<16}"
    if width <= KEY_COLUMN + 10:  # not laid out yet, or too narrow to indent
        return [Content.assemble((prefix, "$accent"), text)]
    wrapped = textwrap.wrap(
        text,
        width=width,
        initial_indent=" " * len(prefix),
        subsequent_indent=" " * KEY_COLUMN,
    ) or [" " * len(prefix)]
    first = Content.assemble((prefix, "$accent"), wrapped[0][len(prefix) :])
    return [first, *(Content(line) for line in wrapped[1:])]


class HelpBody(Static):
    """The help text, re-wrapped to its width whenever that changes."""

    def __init__(self, build: Callable[[int], Content], **kwargs: Any) -> None:
        self.build = build
        self.wrapped_at = 0
        super().__init__(build(0), **kwargs)

    def on_resize(self, event: events.Resize) -> None:
        if event.size.width != self.wrapped_at:
            self.wrapped_at = event.size.width
            self.update(self.build(event.size.width))


class HelpScreen(DialogScreen[None]):
    """A modal list of every key, grouped by where it works; any close key dismisses it."""

    BINDINGS = [Binding("enter,escape,q,question_mark", "close", "Close", show=False)]

    def __init__(self, sections: list[tuple[str, list[BindingType]]]) -> None:
        super().__init__()
        self.sections = sections

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box", classes="dialog-box"):
            yield HelpBody(self._body, id="help-body")

    def _body(self, width: int) -> Content:
        # How to leave, first: the footer under the help still shows the screen's keys
        # below it (a user's hour read L and y there, which do nothing while it is open).
        lines: list[Content] = [
            Content.assemble(
                ("rgt-tui keys", "bold $accent"),
                ("   Esc (or Enter, q, ?) closes · ↑↓ PgUp PgDn scroll", "$foreground-muted"),
            ),
            Content(""),
        ]
        for title, bindings in self.sections:
            lines.append(Content.styled(title, "bold"))
            for keys, text in key_rows(bindings, self.app.get_key_display):
                lines += help_row(keys, text, width)
            lines.append(Content(""))
        lines.append(Content.styled("Mouse", "bold"))
        for keys, text in MOUSE_HELP:
            lines += help_row(keys, text, width)
        lines += [
            Content(""),
            Content.styled("Enter, Esc, q or ? closes this help.", "$foreground-muted"),
        ]
        return Content("\n").join(lines)

    def action_close(self) -> None:
        self.dismiss()
