"""Textual's side of the type-ahead (``controllers/type_ahead.py``): a key event, an
input's cursor.

Once an input has the cursor, Textual's own rule holds (``check_consume_key``: bindings
of printable keys are dropped while an Input has focus). A key that was already on its
way to the screen when the cursor moved reaches the App unhandled: ``take_key`` types
it into the focused input, where it was meant to go. The screens reach the App's
``TypeAhead`` through the functions here (``TypeAhead.of``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual import events
from textual.widgets import Input

from rgt_tui.controllers.type_ahead import TypeAhead

if TYPE_CHECKING:
    from textual.app import App
    from textual.dom import DOMNode


def take_key(app: App[Any], event: events.Key) -> bool:
    """A key reached ``app`` unhandled: keep it for the box, or type it into the focused
    input it was meant for. True when it was taken."""
    if not event.is_printable or event.character is None:
        return False
    keeper = TypeAhead.of(app)
    if keeper is not None and keeper.keep(event.character):
        return True
    focused = app.focused
    if isinstance(focused, Input):
        focused.insert_text_at_cursor(event.character)
        return True
    return False


def typing_ahead(node: DOMNode) -> bool:
    """Whether keys are being kept for a confirmation box (the screens refuse actions)."""
    keeper = TypeAhead.of(node.app)
    return keeper is not None and keeper.active


def expect_typing(node: DOMNode) -> None:
    """``t`` was pressed on ``node``'s screen: keep what is typed next for the box."""
    keeper = TypeAhead.of(node.app)
    if keeper is not None:
        keeper.expect()


def typed_into(node: DOMNode, box: Input) -> None:
    """``box`` has the cursor: the keys kept for it go in."""
    keeper = TypeAhead.of(node.app)
    if keeper is not None:
        keys = keeper.arrived()
        if keys:
            box.insert_text_at_cursor(keys)
