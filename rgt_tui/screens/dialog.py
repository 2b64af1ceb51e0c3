"""What every dialog shares: buttons that show their focus in text, and a line that says
in words what Enter (and each other key) does right now.

A focused button's colour is lost in a plain-text capture (``tmux capture-pane -p``, a
screen reader) and is faint in some themes, so the focused button also wears a marker
in its text: ``▶ Cancel ◀``. The hint line follows the focus: a user who reads the
fingerprint and presses Enter knows beforehand that Enter cancels.

A dialog that re-makes its plan in a worker (``ReplanScreen``: launch, retry) holds
Enter while it does: the plan on screen is the old one, and its focused button (Cancel
of a refused plan) is not what the user chose after pressing Acknowledge.
"""

from __future__ import annotations

from typing import TypeVar

from textual import events
from textual.content import Content
from textual.dom import NoScreen
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, Input, Static

MARK_LEFT, MARK_RIGHT = "▶ ", " ◀"
REPLANNING = "re-planning…"
ResultType = TypeVar("ResultType")


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
        # A Button's label is no layout reactive: without this its width stays the old
        # caption's, and a longer one is cut ("▶ Move (box1").
        self.refresh(layout=True)

    def action_press(self) -> None:
        """Enter: nothing while the dialog re-plans (a click still presses: it is aimed)."""
        if _replanning(self):
            return
        super().action_press()

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
        return focused.does if not (focused.disabled or _replanning(focused)) else None
    if focused is not None and focused.id and inputs:
        return inputs.get(focused.id)
    return None


class ReplanScreen(ModalScreen[ResultType]):
    """A dialog whose plan is made (and re-made) in a worker: launch, retry.

    ``begin_replan`` when a new plan is asked for (an Acknowledge, another start index,
    a revoked acknowledgement): until ``end_replan``, Enter on a button does nothing, no
    button keeps the focus (so none shows ``▶ ◀`` as Enter's target: Textual would
    otherwise hand a disabled button's focus to the next one, Cancel) and ``hint_lead``
    says "re-planning…". ``end_replan`` focuses the button the new plan calls for (its
    confirm button when nothing failed, else Cancel), unless the user is typing.
    """

    replanning = False

    def begin_replan(self) -> None:
        """A new plan is being made: hold Enter, take the focus off the buttons."""
        self.replanning = True
        if isinstance(self.focused, Button):
            self.set_focus(None)

    def end_replan(self, target: Widget | None) -> None:
        """The new plan is shown: focus ``target`` (None: leave the focus) unless an
        Input has it (the user is typing there)."""
        self.replanning = False
        if target is not None and not isinstance(self.focused, Input):
            self.set_focus(target)

    def hint_lead(self) -> str:
        """The hint line's lead: "re-planning…" while a plan is being made, else ""."""
        return REPLANNING if self.replanning else ""


def _replanning(widget: Widget) -> bool:
    """Whether ``widget``'s dialog is re-making its plan (Enter is held)."""
    try:
        screen = widget.screen
    except NoScreen:  # not mounted (yet, or any more): no dialog to hold Enter for
        return False
    return isinstance(screen, ReplanScreen) and screen.replanning
