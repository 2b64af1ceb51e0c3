"""The fleet screen's host-name filter (``/``): an input whose Enter hands the keys back
to the grid at once, and drops with a toast what was typed after it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual import events
from textual.binding import Binding
from textual.message import Message

from rgt_tui.screens.type_ahead import InOrderInput, say_dropped


class FilterInput(InOrderInput):
    """The host-name filter; Escape clears it and hands the keys back to the grid.
    Enter on a text that shows no host does nothing but ring: the keys stay the box's.

    Enter keeps it, and the keys are the grid's from that moment: Textual runs an input's
    Enter binding once the key has bubbled up to the App, and the screen moved the cursor
    a message later still, so a key typed a few milliseconds after Enter (tmux send-keys,
    a fast typist) was already queued for the box and became filter text (hour s25b #4:
    ``/box3``, Enter, ``y`` filtered on ``box3y``). Enter is read here, as the key comes:
    the cursor leaves at once, and a key that still reaches the box after it is dropped
    with a toast, as one typed after Enter in a burst is (``typed_into``)."""

    BINDINGS = [Binding("escape", "clear", "Clear filter", tooltip="Clear the filter")]

    class Done(Message):
        """The user finished with the filter (Enter keeps it, Escape clears it)."""

    def __init__(
        self, *args: Any, matches: Callable[[str], bool] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        # Whether a filter text shows any host: Enter on one that shows none stays in the
        # box (h581 #6: the keys went back to the grid behind "no host name contains …",
        # and the q of a user correcting a typo quit the app).
        self.matches = matches
        self.kept = False  # Enter kept the text: what still reaches the box is dropped
        self._dropped = ""

    def reopen(self) -> None:
        """``/`` again: a new filter, typed into."""
        self.value = ""
        self.kept = False
        self._dropped = ""

    async def on_key(self, event: events.Key) -> None:
        if event.key == "enter" and self.screen.focused is self and not self.kept:
            event.stop()  # done here, not again by the binding once it bubbles
            event.prevent_default()
            if not self._shows_any():
                return
            self.screen.set_focus(None)  # the keys read from now on are the grid's
            await self.action_submit()
            return
        if self.kept and event.is_printable and event.character is not None:
            event.stop()
            event.prevent_default()  # not typed by Input's own key handler
            self.take_stray(event.character)
            return
        await super().on_key(event)

    def take_stray(self, character: str) -> None:
        if not self.kept:
            super().take_stray(character)
            return
        if not self._dropped:  # one toast for the keys of one burst
            self.call_later(self._say_dropped)
        self._dropped += character

    def _say_dropped(self) -> None:
        dropped, self._dropped = self._dropped, ""
        if dropped:
            say_dropped(self, dropped)

    def takes_enter(self) -> bool:
        return self.matches is None or self.matches(self.value)

    def _shows_any(self) -> bool:
        """Whether the text shows a host; a bell when it does not (the box keeps the keys)."""
        if self.takes_enter():
            return True
        self.app.bell()
        return False

    async def action_submit(self) -> None:
        if not self._shows_any():  # an Enter typed right after / among its keys
            return
        self.kept = True
        await super().action_submit()

    def action_clear(self) -> None:
        self.value = ""
        self.post_message(self.Done())

    def on_input_submitted(self) -> None:
        self.post_message(self.Done())
