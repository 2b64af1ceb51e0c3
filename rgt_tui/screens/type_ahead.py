"""Textual's side of the type-ahead (``controllers/type_ahead.py``): a key event, an
input's cursor.

Once an input has the cursor, Textual's own rule holds (``check_consume_key``: bindings
of printable keys are dropped while an Input has focus). A key that was already on its
way to the screen when the cursor moved reaches the App unhandled: ``take_key`` types
it into the focused input, where it was meant to go. The screens reach the App's
``TypeAhead`` through the functions here (``TypeAhead.of``).
"""

from __future__ import annotations

import re
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
    keeper = TypeAhead.of(app)
    if event.key == "backspace" and keeper is not None and keeper.erase():
        return True
    if event.key == "enter" and keeper is not None and keeper.enter():
        return True
    if not event.is_printable or event.character is None:
        return False
    if keeper is not None and keeper.keep(event.character):
        return True
    focused = app.focused
    if isinstance(focused, InOrderInput):
        focused.take_stray(event.character)
        return True
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


def typed_into(node: DOMNode, box: Input, submit: bool = False) -> None:
    """``box`` has the cursor: the keys kept for it go in; an Enter typed after them
    submits it when ``submit`` (the filter), else it is dropped: a confirmation that
    destroys waits for an Enter pressed with the box in sight."""
    keeper = TypeAhead.of(node.app)
    if keeper is not None:
        keys, entered, dropped = keeper.arrived()
        if keys:
            box.insert_text_at_cursor(keys)
        refused = isinstance(box, InOrderInput) and not box.takes_enter()
        if entered and submit and refused:
            # Its Enter did nothing (a filter no host matches): the keys after it are
            # still typing, not commands to drop with "was not run" (review h584 #4).
            box.app.bell()
            box.insert_text_at_cursor(dropped)
            return
        if entered and submit:
            box.call_later(box.action_submit)
        if dropped:
            say_dropped(node, dropped)


def drop_typed(node: DOMNode, when: str) -> None:
    """``node``, a dialog with no box for them, is up (or the key that would open one
    did nothing): the keys kept since that key are dropped, never run as the grid's
    commands, and said, ``typed {when}`` (h615: a burst of ``Lp`` pulled behind the
    launch plan)."""
    keeper = TypeAhead.of(node.app)
    if keeper is None:
        return
    keys, entered, dropped = keeper.arrived()
    typed = keys + ("⏎" if entered else "") + dropped
    if typed:
        node.app.notify(
            f"{typed!r}, typed {when}, was not run: press it again",
            severity="warning",
        )


def say_dropped(node: DOMNode, dropped: str) -> None:
    """Keys typed right after an Enter that closed a box were dropped: never run as
    commands, but said (a key that did nothing and said nothing read as a broken key,
    hour s24c #4)."""
    node.app.notify(
        f"{dropped!r}, typed right after Enter, was not run: press it again",
        severity="warning",
    )


# Editing keys an input runs through its bindings, which Textual checks only once the key
# has bubbled up to the App: by then the printable keys typed after it in the same burst
# were already inserted (a user's hour: "⌫2" in the start box left it empty). Run at once.
_EDITS = {
    "backspace": "delete_left",
    "delete": "delete_right",
    "left": "cursor_left",
    "right": "cursor_right",
    "home": "home",
    "end": "end",
}


async def _edit_now(target: Input, event: events.Key) -> bool:
    """Run ``event``'s editing action on ``target`` now; True when it was one."""
    action = _EDITS.get(event.key)
    if action is None:
        return False
    await target.run_action(action)
    event.stop()
    event.prevent_default()  # and not again by the binding
    return True


class InOrderInput(Input):
    """An input that edits in the order keys were typed, a burst included (``_EDITS``)."""

    async def on_key(self, event: events.Key) -> None:
        if self.screen.focused is self:
            await _edit_now(self, event)

    def take_stray(self, character: str) -> None:
        """``character`` was on its way to the screen when this box took the cursor
        (``take_key``): typed here, where it was meant to go."""
        self.insert_text_at_cursor(character)

    def takes_enter(self) -> bool:
        """Whether an Enter would be taken as typed now (the filter's refuses a text that
        shows no host): one refused leaves the keys after it to this box."""
        return True


class CommandInput(InOrderInput):
    """A pasted command's box: lines a backslash continues are one command, as a shell
    reads them (h555 #1: an Input keeps a paste's first line only, `ssh -p 41071 \\`)."""

    def on_paste(self, event: events.Paste) -> None:
        # Terminals send a paste's line breaks as CR (review h556 #1), some as LF or CRLF.
        text = re.sub(r"\\(?:\r\n|\r|\n)[ \t]*", " ", event.text)
        line = text.splitlines()[0] if text else ""
        if line:
            if self.selection.is_empty:
                self.insert_text_at_cursor(line)
            else:
                self.replace(line, *self.selection)
        event.prevent_default()  # not again, cut, by Input's own paste
        event.stop()


class HandOnInput(Input):
    """An input whose Enter moves the cursor on (to ``next_id``, on its screen) as the key
    is read, then submits, and whose Tab moves it there too; each key that reaches it
    after that goes to the input that has the cursor. Keys typed in one burst (a name,
    Enter or Tab, a host) are all queued for this input before the Enter binding or the
    Tab's focus move runs (Textual checks bindings once the key has bubbled up), so the
    host landed here too (users' hours: ``box1_long_epochbox1``, and ``box2_dbox3`` by
    Tab)."""

    def __init__(self, *args: Any, next_id: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.next_id = next_id

    async def on_key(self, event: events.Key) -> None:
        focused = self.screen.focused
        if event.key in ("enter", "tab") and focused is self:
            event.stop()  # done here, not again by the binding once it bubbles
            event.prevent_default()
            self.screen.set_focus(self.screen.query_one(f"#{self.next_id}", Input))
            if event.key == "enter":
                await self.action_submit()
            return
        if not isinstance(focused, Input) or await _edit_now(focused, event):
            return
        if focused is self or not event.is_printable:
            return
        if event.character is not None:
            focused.insert_text_at_cursor(event.character)
        event.stop()
        event.prevent_default()  # not typed here too (Input's own key handler)
