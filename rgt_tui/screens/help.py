"""HelpScreen: every key, read from the screens' own BINDINGS so it cannot go stale."""

from __future__ import annotations

from collections.abc import Iterable

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

MOUSE_HELP = [
    ("click", "Open a host pane's detail screen (it also selects it)"),
    ("wheel", "Scroll the fleet grid"),
    ("click tab", "Switch tabs on the detail screen"),
]


def describe(binding: Binding) -> str:
    """The longest description a binding has: its tooltip, else its footer label."""
    return binding.tooltip or binding.description or binding.action


def key_rows(bindings: Iterable[BindingType], key_display) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """(keys, description) per action, keys that share an action joined: ``← h``."""
    rows: dict[str, tuple[list[str], str]] = {}
    for binding in Binding.make_bindings(bindings):
        keys, _ = rows.setdefault(binding.action, ([], describe(binding)))
        keys.append(key_display(binding))
    return [(" ".join(keys), text) for keys, text in rows.values()]


class HelpScreen(ModalScreen[None]):
    """A modal list of every key, grouped by where it works; any close key dismisses it."""

    BINDINGS = [Binding("escape,q,question_mark", "close", "Close", show=False)]

    def __init__(self, sections: list[tuple[str, list[BindingType]]]) -> None:
        super().__init__()
        self.sections = sections

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(self._body(), id="help-body")

    def _body(self) -> Content:
        lines: list[Content] = [Content.styled("rgt-tui keys", "bold $accent"), Content("")]
        for title, bindings in self.sections:
            lines.append(Content.styled(title, "bold"))
            for keys, text in key_rows(bindings, self.app.get_key_display):
                lines.append(Content.assemble((f"  {keys:<16}", "$accent"), text))
            lines.append(Content(""))
        lines.append(Content.styled("Mouse", "bold"))
        for keys, text in MOUSE_HELP:
            lines.append(Content.assemble((f"  {keys:<16}", "$accent"), text))
        lines += [Content(""), Content.styled("Esc, q or ? closes this help.", "$foreground-muted")]
        return Content("\n").join(lines)

    def action_close(self) -> None:
        self.dismiss()
