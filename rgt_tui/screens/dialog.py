"""What every dialog shares: buttons that show their focus in text, and a line that says
in words what Enter (and each other key) does right now.

A focused button's colour is lost in a plain-text capture (``tmux capture-pane -p``, a
screen reader) and is faint in some themes, so the focused button also wears a marker
in its text: ``▶ Cancel ◀``. The hint line follows the focus: a user who reads the
fingerprint and presses Enter knows beforehand that Enter cancels.
"""

from __future__ import annotations

from textual import events
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Button, Static

MARK_LEFT, MARK_RIGHT = "▶ ", " ◀"


class DialogButton(Button):
    """A Button whose text shows its focus (``▶ Cancel ◀``); ``does`` says, in a few
    words, what Enter on it does ("cancel", "trust this key")."""

    def __init__(self, caption: str, *, does: str, **kwargs: object) -> None:
        self.caption = caption
        self.does = does
        super().__init__(self._text(focused=False), **kwargs)  # type: ignore[arg-type]

    def _text(self, *, focused: bool) -> Content:
        # The same width either way, so the row of buttons does not shift as focus moves.
        # Content, not a str: a caption can name a box's cell or check, and a Button reads
        # a str label as markup.
        text = f"{MARK_LEFT}{self.caption}{MARK_RIGHT}" if focused else f"  {self.caption}  "
        return Content(text)

    def set_caption(self, caption: str, *, does: str | None = None) -> None:
        """Change the text (and what Enter on it does), keeping the focus marker."""
        self.caption = caption
        if does is not None:
            self.does = does
        self.label = self._text(focused=self.has_focus)

    def on_focus(self, event: events.Focus) -> None:
        self.label = self._text(focused=True)

    def on_blur(self, event: events.Blur) -> None:
        self.label = self._text(focused=False)


class KeyHint(Static):
    """One line: ``Enter: cancel · t: trust · Esc: cancel`` for the dialog as it is now."""

    DEFAULT_CSS = """
    KeyHint { height: auto; color: $foreground-muted; margin: 1 0 0 0; }
    """

    def show_keys(self, enter: str | None, *others: tuple[str, str], lead: str = "") -> None:
        """Say ``lead``, what Enter does (None: nothing), then each ``(key, what)``."""
        keys = ([("Enter", enter)] if enter else []) + list(others)
        parts = [Content.assemble((key, "bold $accent"), f": {what}") for key, what in keys]
        self.update(Content(" · ").join([*([Content(lead)] if lead else []), *parts]))


def enter_does(focused: Widget | None, inputs: dict[str, str] | None = None) -> str | None:
    """What Enter does with ``focused``: a DialogButton's ``does``, an Input's entry in
    ``inputs`` (by id), else nothing."""
    if isinstance(focused, DialogButton):
        return focused.does if not focused.disabled else None
    if focused is not None and focused.id and inputs:
        return inputs.get(focused.id)
    return None
