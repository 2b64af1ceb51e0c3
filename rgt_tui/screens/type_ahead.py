"""Keys typed right after ``t`` reach the confirmation box, never a single-key action.

``t`` opens the host's Teardown tab and puts the cursor in its confirmation box, but the
detail screen takes a few frames to open, and keys typed meanwhile find no box with the
cursor: the grid's single-key bindings (``d`` diagnose, ``p`` pull, ``2`` …) would run
instead. From ``t`` until the box has the cursor, ``TypeAhead`` keeps every printable
key (and the screens refuse every action); then it types them into the box, in order.

Once an input has the cursor, Textual's own rule holds (``check_consume_key``: bindings
of printable keys are dropped while an Input has focus). A key that was already on its
way to the screen when the cursor moved reaches the App unhandled: ``take`` types it
into the focused input, where it was meant to go.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar
from weakref import WeakKeyDictionary

from textual import events
from textual.widgets import Input

if TYPE_CHECKING:
    from textual.app import App
    from textual.dom import DOMNode
    from textual.timer import Timer

# A screen that never opens does not swallow keys for longer than this.
LIMIT_S = 3.0


class TypeAhead:
    """The keys typed between ``t`` and the confirmation box having the cursor."""

    # Each app's keeper, found by the screens through ``of``; an app without one (a
    # screen tried alone in a test) has no type-ahead.
    _keepers: ClassVar[WeakKeyDictionary[App[Any], TypeAhead]] = WeakKeyDictionary()

    def __init__(self, app: App[Any]) -> None:
        self.app = app
        self.keys: list[str] | None = None  # None: not waiting for a box
        self._timer: Timer | None = None
        TypeAhead._keepers[app] = self

    @classmethod
    def of(cls, app: App[Any]) -> TypeAhead | None:
        """The keeper of ``app``, if it has one."""
        return cls._keepers.get(app)

    @property
    def active(self) -> bool:
        """Whether keys are being kept for a box that does not have the cursor yet."""
        return self.keys is not None

    def expect(self) -> None:
        """``t`` was pressed: keep what is typed next for the confirmation box."""
        if self.keys is None:
            self.keys = []
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.app.set_timer(LIMIT_S, self._give_up)

    def arrived(self, box: Input) -> None:
        """The box has the cursor: what was typed meanwhile goes into it, in order."""
        keys = self.keys or []
        self._give_up()
        if keys:
            box.insert_text_at_cursor("".join(keys))

    def take(self, event: events.Key) -> bool:
        """A key reached the App unhandled: keep it for the box, or type it into the
        focused input it was meant for. True when it was taken."""
        if not event.is_printable or event.character is None:
            return False
        if self.keys is not None:
            self.keys.append(event.character)
            return True
        focused = self.app.focused
        if isinstance(focused, Input):
            focused.insert_text_at_cursor(event.character)
            return True
        return False

    def _give_up(self) -> None:
        self.keys = None
        if self._timer is not None:
            self._timer.stop()
            self._timer = None


# The screens reach the App's TypeAhead through these (``TypeAhead.of``).


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
        keeper.arrived(box)
