"""Keys typed right after ``t`` reach the confirmation box, never a single-key action.

``t`` opens the host's Teardown tab and puts the cursor in its confirmation box, but the
detail screen takes a few frames to open, and keys typed meanwhile find no box with the
cursor: the grid's single-key bindings (``d`` diagnose, ``p`` pull, ``2`` …) would run
instead. From ``t`` until the box has the cursor, ``TypeAhead`` keeps every printable
key (and the screens refuse every action); then the box gets them, in order.

This is the decision and its state; Textual's side (a key event, an input's cursor) is
``screens/type_ahead.py``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol
from weakref import WeakKeyDictionary

# A screen that never opens does not swallow keys for longer than this.
LIMIT_S = 3.0


class Timers(Protocol):
    """What keeps time for a ``TypeAhead``: the App (Textual's ``set_timer``)."""

    def set_timer(self, delay: float, callback: Any = None) -> Any: ...


class TypeAhead:
    """The keys typed between ``t`` and the confirmation box having the cursor."""

    # Each app's keeper, found by the screens through ``of``; an app without one (a
    # screen tried alone in a test) has no type-ahead.
    _keepers: ClassVar[WeakKeyDictionary[Any, TypeAhead]] = WeakKeyDictionary()

    def __init__(self, app: Timers) -> None:
        self.app = app
        self.keys: list[str] | None = None  # None: not waiting for a box
        # An Enter was typed among the kept keys: the box is done with what came before
        # it; what follows is dropped, never typed into the box nor run as a command.
        self.entered = False
        self.dropped: list[str] = []  # the keys typed after that Enter
        self._timer: Any = None
        TypeAhead._keepers[app] = self

    @classmethod
    def of(cls, app: Any) -> TypeAhead | None:
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
            self.entered = False
            self.dropped = []
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.app.set_timer(LIMIT_S, self._give_up)

    def arrived(self) -> tuple[str, bool, str]:
        """The box has the cursor: what was typed meanwhile, in order, for the box,
        whether an Enter followed it, and what was typed after that Enter (dropped)."""
        keys, entered, dropped = self.keys or [], self.entered, self.dropped
        self._give_up()
        return "".join(keys), entered, "".join(dropped)

    def keep(self, character: str) -> bool:
        """A printable key reached the App unhandled: kept (True) while waiting for a box;
        after a kept Enter, taken and dropped (hour s24b #2: ``/box3⏎y`` filtered on
        ``box3y``)."""
        if self.keys is None:
            return False
        if not self.entered:
            self.keys.append(character)
        else:
            self.dropped.append(character)
        return True

    def enter(self) -> bool:
        """Enter reached the App while waiting for a box: it ends what the box gets (True:
        taken)."""
        if self.keys is None:
            return False
        self.entered = True
        return True

    def erase(self) -> bool:
        """Backspace reached the App while waiting for a box: the last kept key goes, as
        in the box (True: taken). A correction typed in the burst was dropped, so
        ``/boxx⌫1`` filtered on ``boxx1`` (hour s22c #2)."""
        if self.keys is None:
            return False
        if self.keys and not self.entered:
            self.keys.pop()
        return True

    def _give_up(self) -> None:
        self.keys = None
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
